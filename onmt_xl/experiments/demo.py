"""``onmt-xl demo`` (the main systems on a synthetic corpus), ``onmt-xl pipeline`` (the same on your data)
and ``onmt-xl write-configs``.

``demo`` and ``pipeline`` run the same chain of stages as ``onmt-xl experiments``
(:class:`onmt_xl.experiments.runner.Runner`) with one job per ``--systems`` entry, translated on the test
set, and print a short summary: the preorderer's Kendall tau, then per system BLEU, chrF, parameters and
the paired-bootstrap p-value against the baseline. ``--framework eole`` runs the same data stages, then Eole
(:mod:`onmt_xl.experiments.eole_demo`). ``pipeline`` takes raw text (:mod:`onmt_xl.experiments.tokenization`):
the scores are sacrebleu's standard ones on the detokenized output, with their signatures, and the summary ends
with the commands that translate new raw text with a trained model and serve it. Without ``--train-steps``,
``pipeline`` trains each system to the study's plateau rule on the validation pairs, within ``--time-budget`` and
``--max-steps``, and translates and serves the average of its last checkpoints (or the last alone, where that scores
higher on the validation pairs), with a learning-curve plot
(:mod:`onmt_xl.experiments.until_plateau`; with ``--framework eole`` the same rounds through Eole,
:class:`onmt_xl.experiments.eole_demo.EoleRounds`, everything under ``WORKDIR/eole/``).

Before any model trains, both check that the preorderer clearly beats the monotone order on the validation pairs
(:mod:`onmt_xl.core.reorder.monotone_check`) and print one line with the figures. Where it does not, XL PE has little to
gain: with ``--if-monotone stop`` (the default) the run ends there, exit status 0, before the vocabularies and any
training (a rerun with ``--if-monotone train`` resumes from there); ``train`` trains the systems all the same. Runs
of ``--systems`` none of which uses the preorderer (``baseline`` alone) never stop. The figures go to
``monotone_check.json``, the manifest and the summary.

With ``--seeds N`` every system trains N times with N seeds and the summary pools its runs
(:mod:`onmt_xl.experiments.seeds`).

With ``--training-positions crossfit`` the systems using the preorderer train on cross-fitted positions
(:meth:`onmt_xl.experiments.stages.DataStages.crossfit`, after the monotone check;
:meth:`~onmt_xl.experiments.stages.DataStages.crossfit_training`); validation and translation keep the preorderer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List

from onmt_xl.core.errors import check_text_files
from onmt_xl.experiments.configs import DEMO_WORKDIR, TRAINING, write_configs
from onmt_xl.experiments.inputs import workdir_path
from onmt_xl.experiments.plan import EOLE_INSTALL, TRAINING_POSITIONS, Job
from onmt_xl.experiments.stages import Corpus
from onmt_xl.experiments.systems import SYSTEMS
from onmt_xl.experiments.tokenization import BLEU_TOKENIZERS, CHOICES, WORD_LEVEL_BELOW
from onmt_xl.experiments.until_plateau import SCHEDULES, duration

DEMO_SIZES = {"train": 6000, "valid": 200, "test": 300}


def make_demo_data(workdir: Path, seed: int = 1) -> Corpus:
    """Synthetic SVO → SOV corpus (fixed seeds) with gold test alignments, under ``workdir/synthetic``."""
    from onmt_xl.core.data import synthetic

    out = workdir / "synthetic"
    out.mkdir(parents=True, exist_ok=True)
    for i, (split, n) in enumerate(DEMO_SIZES.items()):
        if not (out / f"{split}.align").exists():
            synthetic.write(synthetic.generate(n, seed=seed + 1000 * i), str(out / split))
    return Corpus(train_src=str(out / "train.src"), train_tgt=str(out / "train.tgt"),
                  test_src=str(out / "test.src"), test_tgt=str(out / "test.tgt"),
                  valid_src=str(out / "valid.src"), valid_tgt=str(out / "valid.tgt"),
                  test_align=str(out / "test.align"))


def system_jobs(systems: List[str], command: str, training_positions: str = "preorderer", seeds: int = 1) -> List[Job]:
    """``seeds`` jobs per system (:func:`onmt_xl.experiments.seeds.run_names`: the first named after it, with the
    shared training seed), translated on the test set; ``training_positions`` (``--training-positions``) is where the
    training positions of the systems using the preorderer come from (:class:`~onmt_xl.experiments.plan.Job`'s
    ``xl_train``)."""
    from onmt_xl.experiments.seeds import run_names

    return [Job(name, s, seed, variants=["test"], experiments=[command],
                xl_train=training_positions if SYSTEMS[s].uses_preorderer else "preorderer")
            for name, (s, seed) in run_names(systems, seeds, TRAINING["seed"]).items()]


#: the significance level of the summary's answer
ALPHA = 0.05


def does_it_help(res: Dict[str, Any]) -> List[str]:
    """The summary's answer to "does it help?": each system's test BLEU against the baseline's, with its paired
    bootstrap p (sacrebleu's, two-sided; with ``--seeds`` the seed-pooled one over every run, ``res["seed_pooled"]``,
    with its 95 % interval), Holm-adjusted over the systems where several are compared; nothing without a baseline or
    p-values."""
    from onmt_xl.experiments.stats import holm

    seeded = "seed_runs" in res  # --seeds: the pooled comparisons only, never one run against another
    pooled = res.get("seed_pooled") or {}
    if seeded:
        tests = {n: {"delta": c["delta"], "p": c["p"]} for n, c in pooled.items()}
    else:
        jobs = res["jobs"]
        base = jobs.get("baseline", {}).get("variants", {}).get("test", {})
        tests = {n: {"delta": e["variants"]["test"]["bleu"] - base.get("bleu", float("nan")),
                     "p": e["variants"]["test"]["p_bootstrap"]} for n, e in jobs.items()
                 if n != "baseline" and "p_bootstrap" in e.get("variants", {}).get("test", {})}
        if "bleu" not in base:
            return []
    if not tests:
        return []
    p = {n: t["p"] for n, t in tests.items()}
    adjusted = holm(p) if len(p) > 1 else p
    lines = []
    for n, t in tests.items():
        holm_p = f", Holm-adjusted over {len(p)} systems {adjusted[n]:.3f}" if len(p) > 1 else ""
        if adjusted[n] >= ALPHA:
            verdict = "no significant difference"
        else:
            verdict = "better than the baseline" if t["delta"] > 0 else "worse than the baseline"
        if seeded:
            c = pooled[n]
            how = (f", the means of {c['runs']} and {c['baseline_runs']} runs (95% interval [{c['low']:+.2f}, "
                   f"{c['high']:+.2f}]; seed-pooled paired bootstrap p {p[n]:.3f}{holm_p})")
        else:
            how = f" (paired bootstrap p {p[n]:.3f}{holm_p})"
        lines.append(f"does it help? {n}: {t['delta']:+.2f} BLEU against the baseline{how}: {verdict} at {ALPHA}")
    if seeded:
        seeds = res["seed_runs"]["baseline"]["seeds"]
        lines.append(f"  ({len(seeds)} training runs a system, seeds {seeds[0]}-{seeds[-1]}: the interval and p count "
                     "the variation between test sentences and between training runs; few runs estimate the latter "
                     "roughly)")
    else:
        lines.append("  (one training run a system: the p-value counts the variation between test sentences, not "
                     "that between training runs with other seeds; --seeds N trains N)")
    return lines


def _run_groups(res: Dict[str, Any]) -> Dict[str, List[str]]:
    """``{system: its runs}``: ``--seeds``' runs (``seed_runs``), else each job alone."""
    return {s: g["runs"] for s, g in res.get("seed_runs", {}).items()} or {n: [n] for n in res["jobs"]}


def _system_lines(res: Dict[str, Any]) -> List[str]:
    """One line per system: its test BLEU, chrF and parameters; with ``--seeds`` the mean ± sd over its runs."""
    from onmt_xl.experiments.stats import mean_sd

    nan = float("nan")
    lines = []
    for system, names in _run_groups(res).items():
        entries = [res["jobs"][n] for n in names if n in res["jobs"]]
        tests = [e["variants"].get("test", {}) for e in entries]
        params = f"params {entries[0].get('parameters', 0):,}" if entries else "params 0"
        if len(names) == 1:
            t = tests[0] if tests else {}
            tok = f"  (tokenized BLEU {t['bleu_tokenized']:.2f})" if "bleu_tokenized" in t else ""
            lines.append(f"{system:12s} BLEU {t.get('bleu', nan):6.2f}  chrF {t.get('chrf', nan):6.2f}{tok}  "
                         f"{params}")
            continue

        def spread(key: str) -> str:
            values = [t[key] for t in tests if key in t]
            if not values:
                return f"{nan:6.2f}"
            mean, sd = mean_sd(values)
            return f"{mean:6.2f} ± {sd:.2f}" if sd is not None else f"{mean:6.2f}"

        each = ", ".join(f"{t['bleu']:.2f}" for t in tests if "bleu" in t)
        tok = f"  (tokenized BLEU {spread('bleu_tokenized').strip()})" if any("bleu_tokenized" in t for t in tests) \
            else ""
        lines.append(f"{system:12s} BLEU {spread('bleu')}  chrF {spread('chrf')}{tok}  {params}  "
                     f"(mean ± sd of {len(tests)} runs: BLEU {each})")
    return lines


def _overlap_lines(res: Dict[str, Any]) -> List[str]:
    """The notes on the test sources that are validation sources and on those that are training sources
    (``overlap``, :meth:`onmt_xl.experiments.stages.DataStages._stage_overlap`), with each system's BLEU on the
    sentences unseen in training (``bleu_unseen``; with ``--seeds`` the mean over its runs); nothing where none is."""
    from onmt_xl.experiments.stages import overlap_line

    overlap = res.get("overlap", {})
    lines = [f"note: {overlap_line('test_in_valid', overlap['test_in_valid'])}"] if "test_in_valid" in overlap else []
    entry = overlap.get("test")
    if not entry:
        return lines
    lines.append(f"note: {overlap_line('test', entry)}")
    scores, n = [], None
    for system, names in _run_groups(res).items():
        tests = [res["jobs"][r]["variants"].get("test", {}) for r in names if r in res["jobs"]]
        values = [t["bleu_unseen"] for t in tests if "bleu_unseen" in t]
        if values:
            n = tests[0].get("unseen_sentences", n)
            scores.append(f"{system} {sum(values) / len(values):.2f}")
    if scores:
        mean = " (the mean of each system's runs)" if res.get("seed_runs") else ""
        lines.append(f"  BLEU on the other {n:,} test sentences{mean}: {', '.join(scores)}")
    return lines


def summary(res: Dict[str, Any]) -> str:
    """The preorderer's scores, one line per system (:func:`_system_lines`), then :func:`does_it_help`'s (from
    :func:`onmt_xl.experiments.scoring.collect`)."""
    p = res.get("preorderer", {})
    nan = float("nan")
    lines = [f"preorderer (test set, {p.get('sentences', 0):.0f} sentences, {p.get('links', 'eflomal')} links): "
             f"Kendall tau {p.get('tau', nan):.4f} (monotone order {p.get('monotone_tau', nan):.4f}), "
             f"exact match {p.get('exact_match', nan):.3f}"]
    if "monotone_check" in res:
        from onmt_xl.core.reorder.monotone_check import MonotoneCheck

        lines.append(MonotoneCheck.from_dict(res["monotone_check"]).format())
    if res.get("training_positions"):
        lines.append(res["training_positions"])
    lines += _system_lines(res)
    lines += _overlap_lines(res)
    signed = next((e["variants"]["test"] for e in res["jobs"].values()
                   if "bleu_signature" in e["variants"].get("test", {})), None)
    lines += does_it_help(res)
    if res.get("translated_with"):
        lines.append(res["translated_with"])
    if signed is not None and "scores" in res:
        lines.append(f"scores: sacrebleu on {res['scores']['text']}; BLEU {signed['bleu_signature']}; "
                     f"chrF {signed['chrf_signature']}")
        if "bleu_tokenized" in res["scores"]:
            lines.append(f"tokenized BLEU: {res['scores']['bleu_tokenized']}")
    return "\n".join(lines)


def run_systems(corpus: Corpus, args, command: str) -> int:
    """Run ``args.systems`` on ``corpus`` in ``args.workdir`` through the runner; print the summary."""
    from onmt_xl.core.errors import quiet_onmt_warnings
    from onmt_xl.experiments.runner import Runner
    from onmt_xl.experiments.stock import say
    from onmt_xl.experiments.usage import next_steps

    quiet_onmt_warnings()  # only OpenNMT-py 3.5.1's torch.cuda.amp deprecations
    schedule = getattr(args, "schedule", None)  # pipeline without --train-steps: to the plateau (until_plateau.py)
    positions = getattr(args, "training_positions", "preorderer")
    seeds = getattr(args, "seeds", 1)
    runner = Runner(corpus, args.workdir, system_jobs(args.systems, command, positions, seeds),
                    preset=getattr(args, "preset", "demo"),
                    train_steps=args.train_steps or (schedule.cap if schedule else None), beam_size=args.beam_size,
                    gpu={"auto": None, "yes": True, "no": False}[args.gpu],
                    parallel=args.parallel, preorder_iterations=args.preorder_iterations,
                    tokenize=getattr(args, "tokenize", None), subword_size=getattr(args, "subword_size", None),
                    bleu_tokenize=getattr(args, "bleu_tokenize", "auto"))
    runner.before_training = lambda: runner.monotone_gate(args.systems, args.if_monotone)
    if schedule is not None:
        from onmt_xl.experiments.until_plateau import PlateauTraining

        res = PlateauTraining(runner, [j.name for j in runner.jobs], schedule, args.time_budget).run(sys.argv[1:])
    else:
        res = runner.run(sys.argv[1:])
    if res is None:  # stopped by the monotone check, which said why
        return 0
    if schedule is not None:
        from onmt_xl.experiments.until_plateau import translated_with

        res["translated_with"] = translated_with(runner.workdir)
    if any(job.xl_train == "crossfit" for job in runner.jobs):
        res["training_positions"] = runner.crossfit_line()
    served = None
    if seeds > 1:
        from onmt_xl.experiments.seeds import seed_results, served_runs

        runs = {j.name: (j.system, j.seed) for j in runner.jobs}
        seed_results(res, runs, lambda name: runner.path("jobs", name, "hyp.test"), runner.workdir,
                     runner.path("results.json"))
        served = served_runs(runs, runner.workdir)
    if runner.tokenization.active:  # what this version writes, for the model just scored, where no translation wrote it
        for job in runner.jobs:
            runner.translate_config(job)
    say(f"results: {runner.path('results.json')}\n" + summary(res) + next_steps(runner, args.systems, served=served))
    return 0


def run_demo(args) -> int:
    _quiet(args)
    _say_seeds(args)
    if args.framework == "eole":
        from onmt_xl.experiments.eole_demo import check_eole, run_eole_demo

        check_eole(args.systems)  # before any work
        return run_eole_demo(make_demo_data(Path(args.workdir)), args, summary)
    return run_systems(make_demo_data(Path(args.workdir)), args, "demo")


def _quiet(args) -> None:
    if args.quiet:
        from onmt_xl.core.progress import set_quiet

        set_quiet()


def _say_seeds(args) -> None:
    """The line on ``--seeds`` (none for one seed)."""
    from onmt_xl.experiments.seeds import describe
    from onmt_xl.experiments.stock import say

    line = describe(args.seeds, TRAINING["seed"])
    if line:
        say(line)


def run_pipeline(args) -> int:
    _quiet(args)
    _check_training_options(args)
    corpus = Corpus(args.train_src, args.train_tgt, args.test_src, args.test_ref, valid_src=args.valid_src,
                    valid_tgt=args.valid_tgt, test_align=args.test_align)
    check_text_files(corpus.inputs())  # every input there, UTF-8 and line-parallel before hours of work
    corpus.check_parallel()
    _note_tokenized(corpus, args.tokenize)
    _choose_preset(args)
    _say_seeds(args)
    if args.framework == "eole":
        from onmt_xl.experiments.eole_demo import check_eole, run_eole_demo

        check_eole(args.systems)  # before any work
        return run_eole_demo(corpus, args, summary)
    return run_systems(corpus, args, "pipeline")


def _choose_preset(args) -> None:
    """``--preset auto``: the model size for the corpus and device (:func:`~onmt_xl.experiments.configs.auto_preset`);
    without ``--train-steps``, the preset's schedule to the plateau (``args.schedule``, either framework). One line
    says what was chosen."""
    from onmt_xl.experiments.configs import PRESETS, auto_preset, config
    from onmt_xl.experiments.stock import say

    gpu = {"yes": True, "no": False}.get(args.gpu)
    if gpu is None:
        import torch

        gpu = torch.cuda.is_available()
    with open(args.train_src, encoding="utf-8") as f:
        pairs = sum(1 for _ in f)
    from onmt_xl.experiments.until_plateau import describe_schedule, schedule_for

    auto = args.preset == "auto"
    chosen = auto_preset(pairs, gpu) if auto else args.preset
    args.preset = chosen
    args.schedule = None
    if args.train_steps is None:
        args.schedule = schedule_for(chosen, args.max_steps, args.average)
    cfg = config("baseline", preset=chosen)
    why = f"{'--preset auto' if auto else 'asked'} for {pairs:,} training pairs on the {'GPU' if gpu else 'CPU'}"
    steps = f"{args.train_steps:,} steps" if args.schedule is None else "trained to the plateau"
    say(f"model: preset {chosen} (d {cfg['hidden_size']}, {cfg['enc_layers']}+{cfg['dec_layers']} layers, "
        f"{cfg['heads']} heads), {steps} ({why}); --preset ({', '.join(sorted(PRESETS))}) and "
        "--train-steps choose another")
    if args.schedule is not None:
        say(describe_schedule(args.schedule, args.time_budget))


def _check_training_options(args) -> None:
    """``--time-budget``, ``--max-steps`` and ``--average`` go with training to the plateau, not ``--train-steps``."""
    from onmt_xl.core.errors import XLUsageError

    given = [name for name, value in (("--time-budget", args.time_budget), ("--max-steps", args.max_steps),
                                      ("--average", args.average)) if value is not None]
    if args.train_steps is not None and given:
        raise XLUsageError(None, None, f"{', '.join(given)}: only when training to the plateau, without --train-steps "
                           f"{args.train_steps} (which trains that many steps and translates the last checkpoint)")


def _note_tokenized(corpus: Corpus, tokenize: str) -> None:
    """One line when raw-text input looks tokenized already (it is tokenized again, harmlessly, but its scores are
    then not the standard ones); nothing is changed."""
    from onmt_xl.experiments.stock import say
    from onmt_xl.experiments.tokenization import looks_tokenized

    if tokenize == "none":
        return
    for path in (corpus.train_src, corpus.test_tgt):
        with open(path, encoding="utf-8") as f:
            seen = looks_tokenized(f)  # its first lines
        if seen:
            say(f"note: {path} looks tokenized already ({seen}); the pipeline takes raw text and tokenizes it "
                "itself: give the raw text for sacrebleu's standard scores, or --tokenize none to keep this "
                "tokenization")
            return


def run_write_configs(args) -> int:
    from onmt_xl.experiments.eole_configs import write_eole_configs

    for system, path in write_configs(args.out, args.workdir).items():
        print(f"{system}: {path}")
    for system, path in write_eole_configs(str(Path(args.out) / "eole"), args.workdir).items():
        print(f"{system} (Eole): {path}")
    return 0


def _systems(text: str) -> List[str]:
    names = [s for s in text.split(",") if s]
    bad = [s for s in names if s not in SYSTEMS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown systems {bad}; choose from {', '.join(SYSTEMS)}")
    return names


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of at least 1")
    return value


def _seed_count(text: str) -> int:
    """``--seeds``: a count (``onmt-xl experiments --seeds`` takes a list of seeds, said where one is given)."""
    if "," in text:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the number of training runs a system, e.g. 3 (the training seeds {TRAINING['seed']}, "
            f"{TRAINING['seed'] + 1}, {TRAINING['seed'] + 2}); a list of seeds is onmt-xl experiments' --seeds")
    return _positive(text)


def _common(p: argparse.ArgumentParser, steps_default: str = "the preset's, 400") -> None:
    p.add_argument("--workdir", default=DEMO_WORKDIR, type=workdir_path,
                   help="where everything is written (resumable)")
    p.add_argument("--systems", type=_systems, default=["baseline", "combination"],
                   help=f"comma-separated, from: {', '.join(SYSTEMS)}; 'baseline' gives the p-values")
    p.add_argument("--train-steps", type=_positive, metavar="N", help=f"training steps of every system (default: "
                   f"{steps_default})")
    p.add_argument("--seeds", type=_seed_count, default=1, metavar="N",
                   help="train every system N times, with N training seeds (its first run named after it, the k-th "
                   "SYSTEM_seedK): the summary gives the mean ± sd over the runs, and 'does it help?' the seed-pooled "
                   "paired bootstrap over them, which counts the variation between training runs as well as between "
                   "test sentences; N times the training (default 1)")
    p.add_argument("--preorder-iterations", type=int, default=5, help="preorder-train's passes (default 5)")
    p.add_argument("--beam-size", type=int, default=5, help="beam size of the test translations (default 5)")
    p.add_argument("--gpu", choices=("auto", "yes", "no"), default="auto",
                   help="train and translate on the GPU: auto = when torch sees one (default auto)")
    p.add_argument("--parallel", type=int, default=None,
                   help="systems trained at once (default: one per CPU without a GPU, 1 with a GPU)")
    p.add_argument("--quiet", action="store_true", help="no progress bars (for alignment, the preorderer and the "
                   "vocabularies; they show only where stderr is a terminal)")
    p.add_argument("--if-monotone", choices=("stop", "train"), default="stop",
                   help="when the preorderer does not clearly beat the monotone order on the validation pairs (XL PE "
                   "has little to gain): stop before any training, exit status 0, or train all the same (default stop)")
    p.add_argument("--training-positions", choices=TRAINING_POSITIONS, default="preorderer",
                   help="where the XL systems (and prereorder) take their training sentences' positions from: "
                   "preorderer = the preorderer, which trained on those very sentences (so they are more accurate "
                   "than any it predicts for new text); crossfit = from one of 5 preorderers trained on the other "
                   "folds, as good as on new text (5 more preorderer trainings; the summary gives the Kendall tau "
                   "of both on the same sentences). Translation always uses the preorderer trained on everything "
                   "(default preorderer)")


def _framework(p) -> None:
    p.add_argument("--framework", choices=("opennmt", "eole"), default="opennmt",
                   help=f"train and translate with OpenNMT-py 3.5.1 (default) or Eole 0.6.4 (to install it: {EOLE_INSTALL})")


def add_subcommands(sub) -> None:
    p = sub.add_parser("demo", help="the main systems on an embedded synthetic SVO->SOV corpus",
                       description="Make a synthetic SVO->SOV corpus (6000 training, 200 validation, 300 test "
                       "pairs, fixed seeds) under --workdir, then align it, train the preorderer and each of --systems "
                       "and score them on the test set: the preorderer's Kendall tau, then per system BLEU, chrF, "
                       "parameters and the paired-bootstrap p-value against the baseline. Started again, it resumes "
                       "where it stopped. --framework eole does the same through Eole 0.6.4 (its build_vocab, train "
                       "and predict, with the configurations of yaml_configs/eole/; outputs under WORKDIR/eole/) for "
                       "the systems the Eole adapter has.")
    _common(p)
    _framework(p)
    p.set_defaults(func=run_demo)

    p = sub.add_parser("pipeline", help="tokenize, align, preorder, train and score the systems on your raw text",
                       description="demo's chain on your data: tokenize the raw text (pyonmttok, see --tokenize), "
                       "align the training and test sets with eflomal, train the preorderer, build the vocabularies, "
                       "train each of --systems to the plateau of its validation BLEU (the study's rule, in rounds "
                       "that resume exactly, within --time-budget and --max-steps; learning_curves.png), translate the "
                       "raw test source with the average of its last checkpoints (or the last alone, where it scores "
                       "higher on the validation pairs) into detokenized text and score it against the raw reference "
                       "(sacrebleu's BLEU and chrF, with their signatures; the paired bootstrap against the baseline "
                       "answers 'does it help?'). Every file is one raw sentence per line, UTF-8; the run resumes "
                       "where it stopped when started again.")
    p.add_argument("--preset", choices=("auto", "demo", "enja", "base", "big"), default="auto",
                   help="model size (onmt_xl.experiments.configs.PRESETS): auto = demo (d 128, 2+2 layers) below "
                   "10,000 training pairs, the study's enja (d 256, 3+3) below 200,000 or on a CPU, Transformer base "
                   "below 2,000,000 on a GPU, BIG above; each sets the training schedule too (checkpoints, rounds, "
                   "step cap: onmt_xl.experiments.until_plateau.SCHEDULES) (default auto)")
    for name, what in (("train-src", "training source"), ("train-tgt", "training target, line-parallel to --train-src"),
                       ("valid-src", "validation source"), ("valid-tgt", "validation target"),
                       ("test-src", "test source (translated and scored)"), ("test-ref", "test reference")):
        p.add_argument(f"--{name}", required=True, help=what)
    p.add_argument("--test-align", help="gold Pharaoh links of the test set, to score the preorderer "
                   "(default: the test set's eflomal links; only with --tokenize none)")
    p.add_argument("--tokenize", choices=CHOICES, default="auto",
                   help=f"how the raw text is tokenized (pyonmttok through OpenNMT's onmt_tokenize transform, recorded "
                   f"with the models): words, joint BPE, or auto = words below {WORD_LEVEL_BELOW:,} training pairs "
                   "(BPE at any size where a side is written without spaces, Japanese, Chinese, Thai, ..., or is "
                   "Korean), BPE above (8,000 merges below 100,000 pairs, 16,000 below 1,000,000, 32,000 above); "
                   "none = the files are tokenized already and are used, translated and scored as they are "
                   "(default auto)")
    p.add_argument("--subword-size", type=int, help="BPE merges (default: by the size rule of --tokenize auto)")
    p.add_argument("--bleu-tokenize", choices=BLEU_TOKENIZERS, default="auto",
                   help="sacrebleu's tokenizer of BLEU against the raw references (its -tok), for the validation "
                   "curves and the test set: auto = by the script of the training target: ja-mecab for Japanese, "
                   "zh for Chinese and ko-mecab for Korean (what sacrebleu's command line takes for those targets), "
                   "char for Thai, Lao, Khmer and Myanmar, 13a otherwise; recorded with the tokenization (default "
                   "auto)")
    _common(p, "the systems train to the plateau of validation BLEU (--time-budget, --max-steps, --average); N: "
            "N steps, the last checkpoint translated")
    p.add_argument("--time-budget", type=duration, metavar="DURATION",
                   help="wall-clock limit of the whole run, e.g. 90m, 2h, 45s (a bare number: minutes): no training "
                   "round starts that would end past it, by the seconds per step measured (the first round always "
                   "runs); the same command goes on later (default: none)")
    p.add_argument("--max-steps", type=_positive, metavar="N", help="the most steps a system trains when no plateau "
                   "comes (default by preset: " + ", ".join(f"{k} {v.cap:,}" for k, v in SCHEDULES.items()) + ")")
    p.add_argument("--average", type=_positive, metavar="N", help="the last N checkpoints (every " + ", ".join(
        f"{k} {v.every:,}" for k, v in SCHEDULES.items()) + " steps) averaged into the model translated and served, "
                   "onmt_average_models (Eole: onmt_xl's average of the step directories), or the last of them alone "
                   "where it scores higher on the validation pairs (default 5, the study's)")
    _framework(p)
    p.set_defaults(func=run_pipeline)

    p = sub.add_parser("write-configs", help="write the YAML configurations for a work directory",
                       description="Write one onmt_train YAML configuration per system (baseline, XL PE variants, "
                       "the reordering baselines) whose data, vocabulary and model paths point into --workdir, to "
                       "train a system by hand with the stock onmt_build_vocab / onmt_train; and in OUT/eole/ one Eole "
                       "configuration per system the Eole adapter has (eole build_vocab / eole train).")
    p.add_argument("--out", default="yaml_configs", help="folder the YAML files go to, made if missing (default "
                   "yaml_configs)")
    p.add_argument("--workdir", default=DEMO_WORKDIR, help="the work directory the configurations point into (default "
                   f"{DEMO_WORKDIR})")
    p.set_defaults(func=run_write_configs, output_dirs=("out",))
