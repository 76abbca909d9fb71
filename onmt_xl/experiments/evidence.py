"""The convergence study: does XL PE help when the models have converged?

``onmt-xl evidence`` runs it in stages, each resumable across sessions (every training resumes with
``-xl_exact_resume``, so a job split over many sessions trains as an uninterrupted one would)::

    prepare the splits, the eflomal alignments, the preorderer (scored on the tuning split) and the vocabularies
    curve   the baseline and Combination, first seed, trained long with every checkpoint kept; each
            checkpoint's validation BLEU (beam search, sacrebleu) and perplexity go to ``jobs/NAME/curve.jsonl``,
            and ``curve.png`` plots them, to find where BLEU stops rising
    main    every system of MAIN_SYSTEMS with every seed at ``--steps`` (where the curve stops rising),
            translated with the average of its last ``--average`` checkpoints (``onmt_average_models``): the
            validation pairs, and the test pairs once; the curve jobs' checkpoints serve for their models
    status  where each main job stands (done, translating, trained part of the way, waiting) and the hours
            its remaining training takes at the measured speed; read beside the training, nothing scored
    aer     Ding et al. 2020 Tab. 3 on the finished main jobs: each one's averaged model forces the gold alignment
            set (``data/gold.*``) and the test pairs through ``onmt_translate -report_align -gold_align``, the
            reference as ``-tgt`` (``jobs/NAME/hyp.gold_align``, ``hyp.test_align``); their attention AER against
            the gold links and the test pairs' eflomal links goes to the report
    payoff  the payoff curve of reports/PREREG_xlpos.md on the finished main jobs of XL systems (default: the tier's
            Combination jobs): the test positions part way from the preorderer's to the BTG oracle's
            (``data/test.src.payoffNNN.xlpos``), each job's averaged model translating the test pairs at each level
            (``jobs/NAME/hyp.payoffNNN``, one thread, beside the training), BLEU against Kendall tau in
            ``payoff.json``, ``payoff.md`` and ``payoff.png`` (:mod:`onmt_xl.experiments.payoff`)
    report  mean ± sd per system, each comparison with the baseline with its interval and Holm-corrected
            p-value, and a verdict (:mod:`onmt_xl.experiments.evidence_report`), to ``--report``

Splits (:class:`onmt_xl.experiments.stages.DataStages`): the last ``--tune-size`` training pairs tune (the
preorderer's options), the ``--valid-size`` before them validate (the step count), the rest train; the test
split is scored once per finished model.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.archive import save_curve
from onmt_xl.experiments.curve import (RESUMED, VALID_ACC, VALID_PPL, checkpoints, plateau_step,  # noqa: F401
                                       plot_curves, read_curve, validation_log)
from onmt_xl.experiments.evidence_report import DEFAULT_PREREG, ORDERINGS, PLATEAU_ORDERINGS, Sweep, write_report
from onmt_xl.experiments.plan import NOISE_RATIOS, Job
from onmt_xl.experiments.stock import read_lines, say, stock
from onmt_xl.experiments.systems import SYSTEMS
from onmt_xl.core.options_table import option

CURVE_SYSTEMS = ("baseline", "combination")
#: trained with every seed before the other systems of their tier: the full Transformer beating the encoder-free
#: one is the study's sanity check of convergence, so its pair comes first
SANITY_SYSTEMS = ("encoder_free",)
MAIN_SYSTEMS = ("baseline", "relative_pe", "inxl", "headxl", "combination")  # the first tier of the study
#: ``--tier``: the systems and seeds of each tier of the study (b is tier a's first and last system, reversed corpus)
TIERS = {
    "a": (MAIN_SYSTEMS, (1, 2, 3)),
    "b": (("baseline", "combination"), (1, 2, 3)),
    # the encoder-free Transformer first, both seeds (SANITY_SYSTEMS)
    "c": (("encoder_free", "disan", "enc_re", "both_re", "exgre", "refsr", "prereorder"), (1, 2)),
    "d": ((), (1,)),
    # the decisive design (reports/PREREG_decisive.md, a work directory of its own with --test-from-train): the
    # primary comparison, then HeadXL, then InXL, each with seeds 1-5 (--seeds 1,...,8 extends them)
    "e": (("baseline", "combination"), (1, 2, 3, 4, 5)),
    "f": (("headxl",), (1, 2, 3, 4, 5)),
    "g": (("inxl",), (1, 2, 3, 4, 5)),
    # Ding et al. 2020 Tab. 4 beside tier c's encoder_free (absolute PE): no PE, relative PE, InXL PE, and the stock
    # LSTM of 6 layers (issue 40); ja->en, both seeds
    "h": (("encoder_free_none", "encoder_free_relative", "encoder_free_inxl", "lstm"), (1, 2)),
    # Relative PE, Ding et al. 2020 Tab. 2's other baseline, for the decisive split, where tier a does not run
    # (reports/PREREG_decisive_baselines.md: tiers c, i and h against the design's baseline runs)
    "i": (("relative_pe",), (1, 2)),
    # reports/PREREG_xlpos.md: Combination trained on cross-fitted positions (SYSTEM_xfit_sSEED), seeds 1-8
    "x": (("combination",), (1, 2, 3, 4, 5, 6, 7, 8)),
}
TAU_SWEEP = (0, 1, 3, 4)  # HeadXL's xl_heads besides the default 2 of tier a (heads 4 in the enja preset)
ORACLE_SYSTEMS = ("combination", "prereorder")  # tier c: also trained on oracle indices (upper bound)
#: tier d: the noise attack's clean run trained again beside it, which measures what the machine alone changes
RERUN_SYSTEMS = ("combination",)
#: chosen on the Japanese-English tuning split by tools/study/tune_preorderer.py (reports/TUNING.md)
PREORDER_OPTIONS = {"tiebreak_null": "none"}


def _every(every: int) -> Dict[str, int]:
    """The study's checkpoint options: every checkpoint kept, one and a validation every ``every`` steps (the
    same for every job, so a learning-curve job and the main job of its system and seed are one model)."""
    return dict(keep_checkpoint=-1, save_checkpoint_steps=every, valid_steps=every)


def curve_jobs(seed: int, max_steps: int, every: int) -> List[Job]:
    """The learning-curve jobs: every ``every`` steps a kept checkpoint and a validation."""
    return [Job(f"{system}_s{seed}", system, seed, overrides=_every(every), train_steps=max_steps,
                experiments=["curve"])
            for system in CURVE_SYSTEMS]


def main_jobs(systems: Sequence[str], seeds: Sequence[int], steps: int, every: int, average: int,
              curve_seed: int, curve_steps: int, preorder_pairs: Sequence[int] = (),
              preorder_seeds: Sequence[int] = (), oracle_systems: Sequence[str] = (), tau_sweep: Sequence[int] = (),
              noise: Sequence[float] = (), rerun: Sequence[str] = ()) -> List[Job]:
    """Every system with every seed trained ``steps`` steps (a checkpoint every ``every``), translated with the
    average of its last ``average`` checkpoints up to ``steps``; the learning-curve jobs (the curve systems with
    ``curve_seed``) are the same models, trained longer: their checkpoints at ``steps`` serve. Systems with XL
    indices also translate the test pairs with oracle indices (``oracle``: the BTG oracle of the test pairs'
    eflomal links, test-side information). For each N of ``preorder_pairs``, Combination with each of
    ``preorder_seeds`` again, its preorderer trained on the first N training pairs (``combination_preN_sSEED``).
    ``oracle_systems``: also trained on the BTG oracle of the training links (``SYSTEM_oracle_sSEED``, translated
    with oracle indices only); ``tau_sweep``: HeadXL with each number of XL heads, ``noise``: Combination with
    each ratio of swapped XL indices in training (paper §4.5), both with the first seed; ``rerun``: each system's
    first-seed job again under another name (``SYSTEM_rerun_sSEED``, the same configuration), queued before the
    noise attack, so that a sweep trained on another machine than its clean run has that run from its own
    machine too. The curve systems (the study's headline comparison) and the sanity check
    (:data:`SANITY_SYSTEMS`) come first with every seed, then the other systems seed by seed."""
    jobs = []
    first = CURVE_SYSTEMS + SANITY_SYSTEMS
    headline = [(seed, system) for seed in seeds for system in systems if system in first]
    others = [(seed, system) for seed in seeds for system in systems if system not in first]
    for seed, system in headline + others:
        curve = system in CURVE_SYSTEMS and seed == curve_seed
        variants = ["valid", "test"] + (["oracle"] if SYSTEMS[system].uses_preorderer else [])
        jobs.append(Job(f"{system}_s{seed}", system, seed, overrides=_every(every),
                        train_steps=curve_steps if curve else steps,
                        final_step=steps, average=average, variants=variants, experiments=["main"]))
    for system in oracle_systems:
        for seed in seeds:
            jobs.append(Job(f"{system}_oracle_s{seed}", system, seed, overrides=_every(every), xl_train="align",
                            train_steps=steps, final_step=steps, average=average, variants=["oracle"],
                            experiments=["oracle"]))
    for tau in tau_sweep:
        jobs.append(Job(f"headxl_tau{tau}_s{seeds[0]}", "headxl", seeds[0],
                        overrides={**_every(every), "xl_heads": tau},
                        train_steps=steps, final_step=steps, average=average, variants=["valid", "test"],
                        experiments=["tau"]))
    for system in rerun:
        jobs.append(Job(f"{system}_rerun_s{seeds[0]}", system, seeds[0], overrides=_every(every), train_steps=steps,
                        final_step=steps, average=average, variants=["valid", "test"], experiments=["rerun"]))
    for ratio in noise:
        jobs.append(Job(f"combination_noise{round(100 * ratio)}_s{seeds[0]}", "combination", seeds[0],
                        overrides={**_every(every), "xl_noise": ratio}, train_steps=steps, final_step=steps,
                        average=average, variants=["valid", "test"], experiments=["noise"]))
    for pairs in preorder_pairs:
        for seed in preorder_seeds:
            jobs.append(Job(f"combination_pre{pairs}_s{seed}", "combination", seed, overrides=_every(every),
                            train_steps=steps, final_step=steps, average=average, variants=["valid", "test"],
                            experiments=["preorder_quality"], preorder_pairs=pairs))
    return jobs


def tier_main_jobs(tier: str, systems: Sequence[str], seeds: Sequence[int], *args, **kwargs) -> List[Job]:
    """:func:`main_jobs` of one tier of :data:`TIERS`: tier c adds its systems on oracle indices, tier d the τ
    sweep, the noise attack and Combination's first seed again (:data:`RERUN_SYSTEMS`; the other arguments as
    :func:`main_jobs`'s)."""
    d = tier == "d"
    if tier == "x":
        return [dataclasses.replace(j, name=f"{j.system}_xfit_s{j.seed}", xl_train="crossfit")
                for j in main_jobs(systems, seeds, *args, **kwargs)]
    return main_jobs(systems, seeds, *args, oracle_systems=ORACLE_SYSTEMS if tier == "c" else (),
                     tau_sweep=TAU_SWEEP if d else (), noise=NOISE_RATIOS if d else (),
                     rerun=RERUN_SYSTEMS if d else (), **kwargs)


def tier_jobs(args) -> List[Job]:
    """The main-stage jobs of each tier of ``args.tier`` (``a`` or several, ``a,c,d``), tier after tier in the
    study's order, each job once (restricted to ``--only``). One call for several tiers keeps every job slot
    busy across a tier's end: the next tier's first job starts while the last ones of the tier before train."""
    jobs: Dict[str, Job] = {}
    for tier in args.tier.split(","):
        systems, seeds = _tier_systems_seeds(args, tier)
        for job in tier_main_jobs(tier, systems, seeds, args.steps, args.every, args.average, args.seed,
                                  args.max_steps, _ints(args.preorder_pairs), _ints(args.preorder_seeds)):
            jobs.setdefault(job.name, job)
    return [j for j in jobs.values() if j.name in args.only.split(",")] if args.only else list(jobs.values())


def tiers_option(text: str) -> str:
    """``--tier``: one tier of :data:`TIERS` or several joined by commas (``a,c,d``), each once, in order."""
    tiers = [t.strip() for t in text.split(",")]
    unknown = [t for t in tiers if t not in TIERS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown tier {unknown[0]!r}: {', '.join(sorted(TIERS))}, or several "
                                         "joined by commas (a,c,d)")
    return ",".join(dict.fromkeys(tiers))


def status_stage(args, runner, jobs: List[Job]) -> int:
    """``--stage status``: each job's state and the hours left (:mod:`onmt_xl.experiments.evidence_status`),
    planned with ``--sec-per-step``, else the speed of this tier's jobs, else that of every job in
    ``--speed-from`` (default: this work directory)."""
    from onmt_xl.experiments.evidence_status import current_speed, speeds_in, status_lines, tier_status

    if not runner.workdir.is_dir() and not (runner.archive is not None and (runner.archive / "jobs").is_dir()):
        raise XLUsageError(str(runner.workdir), None, "no such work directory (see --workdir), nor an --archive")
    speed_from = Path(args.speed_from or runner.workdir)
    if not (speed_from / "jobs").is_dir() and args.speed_from:
        raise XLUsageError(args.speed_from, None, "--speed-from: not a work directory of --stage main (no jobs/ in it)")
    if args.sec_per_step is not None and args.sec_per_step <= 0:
        raise XLUsageError(None, None, f"--sec-per-step must be positive, not {args.sec_per_step}")
    rows = tier_status(runner, jobs)
    measured = list(speeds_in(speed_from).values())
    speed = args.sec_per_step or current_speed(rows) or (statistics.median(measured) if measured else None)
    for line in status_lines(args.tier, rows, runner.parallel, speed):
        print(line)
    return 0


#: the reference links ``--stage aer`` scores attention against: the gold set, then the test pairs' eflomal links
AER_VARIANTS = ("gold_align", "test_align")


def aer_skip_reason(runner, job: Job) -> Optional[str]:
    """Why ``--stage aer`` leaves ``job`` alone (None: it translates its alignment variants, or has): not finished
    (no ``done.json``: its directory is another process's), its variants not all translated yet (the main stage is
    at it), or no model left to translate with (restored from an archive, or pruned)."""
    jd = runner.path("jobs", job.name)
    if not (jd / "done.json").exists():
        return "not finished"
    if runner.outputs_missing(job):
        return f"finished, but {', '.join(runner.outputs_missing(job))} not translated yet"
    done = all(runner.variant_output(job, v).exists() for v in AER_VARIANTS)
    if not done and not runner.has_final_model(job):
        return f"no checkpoint ({runner.final_model_path(job).name} and its checkpoints are gone)"
    return None


def aer_stage(runner, jobs: List[Job]) -> int:
    """``--stage aer``: each finished job of ``jobs`` with its model forces the references of the gold set and of the
    test pairs through its averaged model and reports the cross-attention's alignments
    (:meth:`onmt_xl.experiments.jobs.JobStages.alignment_model`), one torch thread, and says their AER, precision
    and recall (gold links; the test pairs' eflomal links); the others are listed as skipped. Resumable (a job
    with ``hyp.gold_align`` and ``hyp.test_align`` is only scored); no lock on the work directory, so it runs beside
    the main stage, writing into finished jobs only; with ``--archive`` each job's translations are kept there too."""
    from onmt_xl.experiments.archive import save_job
    from onmt_xl.experiments.scoring import attention_aer, link_reference

    references = {v: link_reference(runner.workdir, v) for v in AER_VARIANTS}
    if references["gold_align"] is None or not runner.path("data", "gold.src").exists():
        raise XLUsageError(str(runner.workdir), None, "holds no gold alignment set (data/gold.src, gold.align, "
                           "gold.keep): --stage prepare stages it from --gold-text and --gold-align")
    runner.threads = 1  # beside the training: one core per translation
    for job in jobs:
        reason = aer_skip_reason(runner, job)
        if reason:
            say(f"  {job.name}: skipped ({reason})")
            continue
        for variant, reference in references.items():
            if reference is None:
                continue
            seconds = runner.translate_missing(job, variant)
            hyp = runner.variant_output(job, variant)
            scores = attention_aer(read_lines(hyp), *reference)
            say(f"  {job.name} [{variant}]: AER {100 * scores.aer:.2f} %, P {100 * scores.precision:.2f} %, R "
                f"{100 * scores.recall:.2f} % ({scores.n_sentences} pairs; "
                + (f"{seconds:.0f} s)" if seconds is not None else "translated before)"))
        if runner.archive is not None:
            save_job(runner.workdir, runner.archive, job.name, runner.corpus_dir())
    return 0


def started_first(runner, jobs: List[Job]) -> List[Job]:
    """``jobs`` with those trained part of the way (a checkpoint, no ``done.json``) moved to the front, in order:
    they resume before new ones start, so a lost work directory loses as little training as can be."""
    def started(job: Job) -> bool:
        jd = runner.path("jobs", job.name)
        return bool(checkpoints(jd)) and not (jd / "done.json").exists()

    return sorted(jobs, key=lambda job: not started(job))


def prune_checkpoints(runner, job: Job) -> None:
    """Once ``job``'s variants are translated, its checkpoints but the last (to extend it) and the averaged
    model go; a learning-curve job keeps them all."""
    if "curve" in job.experiments or job.train_steps != job.final_step or runner.outputs_missing(job):
        return
    ckpts = sorted(checkpoints(runner.path("jobs", job.name)).items())
    for _, path in ckpts[:-1]:
        path.unlink()


def score_checkpoints(runner, job: Job, every: int, threads: Optional[int] = None,
                      first: int = 0) -> List[Dict[str, Any]]:
    """Translate the validation pairs with each kept checkpoint of ``job`` at a multiple of ``every`` steps from
    step ``first`` on that ``curve.jsonl`` lacks (beam ``runner.beam_size``) and append its BLEU, chrF and
    validation perplexity."""
    import sacrebleu

    jd = runner.path("jobs", job.name)
    out = jd / "curve.jsonl"
    done = {json.loads(l)["step"] for l in read_lines(out)} if out.exists() else set()
    refs = read_lines(runner.path("data", "valid.tgt"))
    log = jd / "train.log"
    valid = (validation_log(log.read_text(encoding="utf-8"), runner.job_config(job)["valid_steps"])
             if log.exists() else {})
    rows = []
    for step, ckpt in sorted(checkpoints(jd).items()):
        if step % every or step in done or step < first:
            continue
        hyp = jd / f"hyp.valid.step{step}"
        if not hyp.exists():
            tmp = hyp.with_name(hyp.name + ".partial")
            args = [stock("onmt_translate"), "-model", ckpt, "-src", runner.path("data", "valid.src"), "-output", tmp,
                    "-beam_size", runner.beam_size, "-batch_size", 64, "-batch_type", "sents", "-seed", job.seed]
            if SYSTEMS[job.system].translate_transform:
                args += ["-transforms", SYSTEMS[job.system].translate_transform,
                         "-xl_preorderer", runner.path("preorderer.xlp")]
            seconds = runner._run(args, jd / "translate_curve.log", jd / "commands.sh")
            tmp.replace(hyp)
        else:
            seconds = None
        lines = read_lines(hyp)
        row = dict(step=step, bleu=sacrebleu.corpus_bleu(lines, [refs], force=True).score,
                   chrf=sacrebleu.corpus_chrf(lines, [refs]).score, translate_seconds=seconds, **valid.get(step, {}))
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        say(f"  {job.name} step {step}: valid BLEU {row['bleu']:.2f}, ppl {row.get('valid_ppl', float('nan')):.2f}")
        rows.append(row)
    return rows


def run_evidence(args) -> int:
    from onmt_xl.core.errors import quiet_onmt_warnings
    from onmt_xl.experiments.inputs import corpus_from_args
    from onmt_xl.experiments.runner import Runner

    quiet_onmt_warnings()  # only OpenNMT-py 3.5.1's torch.cuda.amp deprecations
    if args.stage == "report":
        return report_stage(args)
    corpus = corpus_from_args(args)
    jobs = curve_jobs(args.seed, args.max_steps, args.every)
    if args.only:
        jobs = [j for j in jobs if j.name in args.only.split(",")]
    runner = Runner(corpus, args.workdir, jobs, args.preset, args.max_steps, args.valid_size, args.beam_size,
                    args.time_budget, gpu={"auto": None, "yes": True, "no": False}[args.gpu],
                    parallel=args.parallel, tune_size=args.tune_size, archive=args.archive,
                    preorder_options=json.loads(args.preorder_options) if args.preorder_options else None,
                    test_from_train=args.test_from_train)
    runner.inxl_init = args.inxl_init
    if args.stage in ("main", "status", "aer", "payoff"):
        if not args.steps:
            raise XLUsageError(None, None, f"--stage {args.stage} needs --steps (chosen from the learning curve on "
                               "the validation pairs)")
        runner.jobs = jobs = tier_jobs(args)
        if args.stage == "status":
            return status_stage(args, runner, jobs)
        if args.stage == "aer":
            if not runner.workdir.is_dir():
                raise XLUsageError(str(runner.workdir), None, "no such work directory (see --workdir)")
            return aer_stage(runner, jobs)
        if args.stage == "payoff":
            from onmt_xl.experiments.payoff import payoff_stage

            if not runner.workdir.is_dir():
                raise XLUsageError(str(runner.workdir), None, "no such work directory (see --workdir)")
            if not args.systems:  # the tier's Combination jobs
                jobs = [j for j in jobs if j.system == "combination"]
            return payoff_stage(runner, jobs, [d for d in (args.baseline_from or "").split(",") if d.strip()])
        runner.jobs = started_first(runner, jobs)
        runner.after_job = functools.partial(prune_checkpoints, runner)  # each job's disk freed as it finishes
        runner.run(sys.argv[1:])
        return 0
    if args.stage == "prepare":  # the splits, alignments, preorderers and vocabularies, no training
        runner.jobs = []
        runner.extra_preorder_pairs = _ints(args.preorder_pairs)
        runner.want_crossfit = args.crossfit
        runner.run(sys.argv[1:])
        return 0
    if args.stage == "plateau-status":
        from onmt_xl.experiments.plateau import describe

        print(describe(args.workdir, args.plateau_system))
        return 0
    if args.stage == "plateau":
        from onmt_xl.experiments.plateau import run_plateau

        return run_plateau(args, runner, _ints(args.seeds) or [1, 2], _every(args.every), score_checkpoints)
    if args.stage == "curve":
        runner.run(sys.argv[1:])
    else:  # curve-score: no lock, so it can score while the training runs
        runner.threads = args.threads
        while True:
            for job in jobs:
                score_checkpoints(runner, job, args.score_every or args.every)
                if runner.archive is not None:
                    save_curve(runner.workdir, runner.archive, job.name)
            finished = all(runner.path("jobs", j.name, "done.json").exists() for j in jobs)
            if not args.watch or finished:
                break
            time.sleep(60 * args.watch)
    curves = {job.name: read_curve(runner.path("jobs", job.name)) for job in jobs}
    png = plot_curves(curves, runner.path("curve.png"))
    for name, rows in curves.items():
        for row in rows:
            say(f"{name:16s} step {row['step']:6d}  BLEU {row['bleu']:6.2f}  ppl "
                f"{row.get('valid_ppl', float('nan')):7.2f}")
    s = plateau_step(curves, args.plateau_tolerance, args.plateau_window)
    say(f"plateau (no later validation BLEU more than {args.plateau_tolerance} above it, {args.plateau_window} steps "
        "seen past it): "
        + (f"step {s}: run --stage main --steps {s}" if s else "not reached yet: train the curves longer"))
    if png:
        say(f"plot: {png}")
    return 0


#: the report's families of comparisons with the baseline, each Holm-corrected apart: the question of the study
#: (tiers a and b), then the other baselines (tier c), then the rest of Ding et al. Tab. 4 (tier h)
FAMILIES = (("XL PE and Relative PE", MAIN_SYSTEMS), ("the other baselines", TIERS["c"][0]),
            ("Tab. 4: encoder-free variants and the LSTM", TIERS["h"][0]))


def report_families(systems: Sequence[str], families: Sequence[Tuple[str, Sequence[str]]] = FAMILIES
                    ) -> List[Tuple[str, List[str]]]:
    """``families`` (default :data:`FAMILIES`) restricted to ``systems``; a system of none forms a family of its own."""
    families = [(name, [s for s in members if s in systems and s != "baseline"]) for name, members in families]
    known = {s for _, members in families for s in members}
    families += [(system, [system]) for system in systems if system not in known and system != "baseline"]
    return [(name, members) for name, members in families if members]


def declared_families(families: Optional[Sequence[Tuple[str, Sequence[str]]]]
                      ) -> Optional[List[Tuple[str, List[str]]]]:
    """``--families`` whole, as declared for the study, less ``baseline``: a member whose runs the report leaves out
    (not finished) still belongs to its family (:func:`report_families` restricts them to the systems reported).
    ``None`` without ``--families``: the default :data:`FAMILIES` span every tier, which a study need not run."""
    return None if families is None else [(name, [s for s in members if s != "baseline"]) for name, members in families]


def families_option(text: str) -> List[Tuple[str, List[str]]]:
    """``--families``: ``NAME=SYSTEM,SYSTEM;NAME=SYSTEM`` (each family Holm-corrected apart, fixed in advance)."""
    families = []
    for part in filter(str.strip, text.split(";")):
        name, sep, members = part.partition("=")
        systems = [s.strip() for s in members.split(",") if s.strip()]
        unknown = [s for s in systems if s not in SYSTEMS]
        if not sep or not name.strip() or not systems or unknown:
            raise argparse.ArgumentTypeError(f"--families: {part.strip()!r} is not NAME=SYSTEM[,SYSTEM...] of known "
                                             "systems" + (f" ({unknown[0]!r} is none)" if unknown else ""))
        families.append((name.strip(), systems))
    if not families:
        raise argparse.ArgumentTypeError("--families: give NAME=SYSTEM[,SYSTEM...], several joined by ';'")
    return families


def report_sweeps(preset: str, seed: int) -> List[Sweep]:
    """Tier (d)'s sweeps, each point a job of ``main_jobs``: HeadXL's τ and Combination's training noise, and the
    noise attack's clean run beside its rerun (not a paper's figure: ``papers`` reads the first two only)."""
    from onmt_xl.opennmt.encoders.options import default_xl_heads
    from onmt_xl.experiments.configs import PRESETS

    default = default_xl_heads(PRESETS[preset]["heads"])
    taus = [(str(t), f"headxl_s{seed}" if t == default else f"headxl_tau{t}_s{seed}")
            for t in sorted({*TAU_SWEEP, default})]
    noise = [("0 %", f"combination_s{seed}")] + [(f"{round(100 * r)} %", f"combination_noise{round(100 * r)}_s{seed}")
                                                 for r in NOISE_RATIOS]
    rerun = [("as archived", f"combination_s{seed}"), ("trained again", f"combination_rerun_s{seed}")]
    return [Sweep("τ sweep (Ding et al. 2020, Fig. 3): HeadXL with τ of its heads reading X+PE_XL", "τ", taus,
                  f"headxl_s{seed}"),
            Sweep("Noise attack (Ding et al. 2020, Fig. 4): Combination trained with a share of its XL indices "
                  "swapped (test indices clean)", "noise", noise, f"combination_s{seed}"),
            Sweep("The same run trained again (not a paper's figure): Combination's clean run, configuration and seed "
                  "unchanged, trained again from step 0 beside the noise attack, on whatever machine that ran on; "
                  "any difference is the machine's (its CPU's arithmetic)", "run", rerun, f"combination_s{seed}")]


def _report_systems_seeds(args) -> Tuple[List[str], List[int]]:
    """``--systems`` and ``--seeds`` where given, else every system and seed of tiers a to c and h."""
    if args.systems or args.seeds:
        return _tier_systems_seeds(args)
    systems = list(dict.fromkeys(s for tier in "abch" for s in TIERS[tier][0]))
    seeds = sorted({seed for tier in "abch" for seed in TIERS[tier][1]})
    return systems, seeds


def _tier_systems_seeds(args, tier: Optional[str] = None) -> Tuple[List[str], List[int]]:
    """``--systems`` and ``--seeds`` where given, else those of ``tier`` (default: every tier of ``--tier``)."""
    tiers = (tier or args.tier).split(",")
    systems = list(dict.fromkeys(s for t in tiers for s in TIERS[t][0]))
    seeds = sorted({seed for t in tiers for seed in TIERS[t][1]})
    return ((args.systems.split(",") if args.systems else list(systems)),
            (_ints(args.seeds) if args.seeds else list(seeds)))


def _ints(text: Optional[str]) -> List[int]:
    try:
        return [int(x) for x in (text or "").split(",") if x.strip()]
    except ValueError:
        raise XLUsageError(None, None, f"expected comma-separated whole numbers, got {text!r}") from None


def report_stage(args) -> int:
    workdir = Path(args.workdir)
    if args.archive:  # a fresh work directory: the splits again, the finished jobs from the archive
        from onmt_xl.experiments.inputs import corpus_from_args
        from onmt_xl.experiments.runner import Runner

        runner = Runner(corpus_from_args(args), args.workdir, [], args.preset, valid_size=args.valid_size,
                        gpu=False, parallel=1, tune_size=args.tune_size, archive=args.archive,
                        test_from_train=args.test_from_train)
        runner.restore_archive()
        runner.stage_data()
    if not (workdir / "data" / "test.ref").exists():
        raise XLUsageError(str(workdir), None, "holds no staged data: run the curve and main stages first")
    out = Path(args.report) if args.report else workdir / "report.md"
    systems, seeds = _report_systems_seeds(args)
    report = write_report(workdir, out, systems=systems, seeds=seeds, n_samples=args.samples,
                          seed=args.bootstrap_seed, preorder_pairs=_ints(args.preorder_pairs),
                          families=report_families(systems, args.families or FAMILIES),
                          declared_families=declared_families(args.families), oracle_systems=ORACLE_SYSTEMS,
                          sweeps=report_sweeps(args.preset, TIERS["d"][1][0]), orderings=ORDERINGS,
                          prereg=args.prereg, plateau_orderings=PLATEAU_ORDERINGS)
    if not report["systems"]:
        say(f"no finished run of {','.join(systems)} with seeds {','.join(map(str, seeds))} in {workdir / 'jobs'} yet")
    print(out.read_text(encoding="utf-8"))
    say(f"report: {out} (and {out.with_suffix('.json')})")
    return 0


def add_evidence(sub) -> None:
    from onmt_xl.experiments.inputs import add_corpus_arguments, shared_data, workdir_path
    from onmt_xl.experiments.configs import PRESETS

    p = sub.add_parser("evidence", help="the convergence study: learning curves (then seeds, directions)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_corpus_arguments(p, shared_data())
    p.add_argument("--tune-size", type=int, default=1000, help="last training pairs carved off as the tuning split")
    p.add_argument("--test-from-train", type=int, default=0, metavar="N",
                   help="the test split is the --test pairs and N pairs carved from the training pairs by a rule "
                        "fixed in advance (onmt_xl.experiments.stages.carve_test_pairs: the N eligible pairs of "
                        "lowest salted SHA-256; every other training pair with a test source removed); every stage "
                        "of the work directory must give the same N (default 0: none)")
    p.add_argument("--workdir", type=workdir_path, default="runs/evidence_jaen",
                   help="where everything is written (resumable)")
    p.add_argument("--stage", choices=("prepare", "curve", "curve-score", "main", "status", "aer", "payoff",
                                       "plateau", "plateau-status", "report"),
                   default="curve",
                   help="prepare: only the splits, alignments, preorderer and vocabularies; curve: train the "
                        "learning-curve jobs; curve-score: score their kept checkpoints; main: every system and seed "
                        "at --steps, averaged, translated (validation and test); status: where each of main's "
                        "jobs stands and the hours left, read beside the training (nothing trained or scored); aer: "
                        "the attention AER of Ding et al. 2020 Tab. 3: each finished main job (with its checkpoints) "
                        "forces the gold alignment set and the test pairs through -report_align -gold_align, one "
                        "thread, beside the training; payoff: the payoff curve of reports/PREREG_xlpos.md: each "
                        "finished job of --systems (default: the tier's Combination jobs) translates the test pairs "
                        "with positions part way from the preorderer's to the BTG oracle's (alpha 0, 0.25, 0.5, "
                        "0.75, 1), one thread, beside the training; BLEU against Kendall tau in WORKDIR/payoff.json, "
                        ".md, .png; plateau: --plateau-system's jobs with --seeds trained on from "
                        "their --plateau-from checkpoint to their own plateau (onmt_xl.experiments.plateau); "
                        "plateau-status: where those rounds stand (nothing trained); report: the statistics and "
                        "verdicts of the finished main runs")
    p.add_argument("--seed", type=int, default=1, help="training seed of the learning-curve jobs (default 1)")
    p.add_argument("--baseline-from", metavar="DIR[,DIR]",
                   help="--stage payoff: work directories or archives whose finished baseline_sSEED jobs (their test "
                        "translations, on the same test split) give the plot's baseline line, the first that has any "
                        "(default: --workdir, then --archive)")
    p.add_argument("--steps", type=int, help="--stage main/status/aer/payoff: steps of every model (where the "
                   "validation BLEU of the learning curve stops rising)")
    p.add_argument("--tier", type=tiers_option, default="a", metavar="{a,b,c,d,e,f,g,h,i,x}[,...]",
                   help="--stage main/status/aer/payoff (and report with --systems or --seeds): a = baseline, "
                        "Relative PE, InXL, HeadXL, Combination, seeds 1-3; b = baseline and Combination, seeds 1-3 "
                        "(run it on the reversed corpus); c = encoder-free, DiSAN, REs, ExGRE, ReFSR, pre-reordering, "
                        "seeds 1-2, and Combination and pre-reordering trained on oracle indices; d = the tau sweep of "
                        "HeadXL and the noise attack on Combination, seed 1; e, f, g = the decisive design "
                        "(reports/PREREG_decisive.md): baseline and Combination, then HeadXL, then InXL, seeds 1-5; h "
                        "= the rest of Tab. 4: encoder-free with no, relative and InXL PE, and the LSTM, seeds 1-2; i "
                        "= Relative PE, seeds 1-2 (with c and h on the decisive split, "
                        "reports/PREREG_decisive_baselines.md); x = Combination on cross-fitted training positions, "
                        "seeds 1-8 (reports/PREREG_xlpos.md). Several tiers joined by commas (a,c,d) "
                        "run in one call, tier after tier, so no job slot idles at a tier's end")
    p.add_argument("--systems", help="--stage main/aer/payoff/report: comma-separated systems (default: the tier's; "
                                     "for the report, every finished system of tiers a-c and h, and tier d's sweeps)")
    p.add_argument("--seeds", help="--stage main/aer/payoff/report: comma-separated seeds (default: the tier's; for "
                                   "the report, every tier's)")
    p.add_argument("--preorder-pairs", default="",
                   help="--stage main: also Combination with preorderers trained on the first N training pairs, for "
                        "each N of this comma-separated list (e.g. 10000,25000), to measure what preorderer quality "
                        "buys; --stage prepare: train and score those preorderers")
    p.add_argument("--crossfit", action="store_true",
                   help="--stage prepare: also the cross-fitted training positions and their figures (crossfit.json; "
                        "reports/PREREG_xlpos.md), which tier x's jobs train on")
    p.add_argument("--preorder-seeds", default="1,2", help="--stage main: seeds of those runs (default 1,2)")
    p.add_argument("--average", type=int, default=5, help="--stage main: checkpoints averaged (onmt_average_models)")
    p.add_argument("--only", help="comma-separated job names (e.g. baseline_s1) to restrict the stage to")
    p.add_argument("--max-steps", type=int, default=10000, help="learning-curve length (may grow later: jobs "
                   "resume); --stage main: the same, its first seed's baseline and Combination being the curve jobs")
    p.add_argument("--every", type=int, default=500, help="steps between kept checkpoints and validations")
    p.add_argument("--score-every", type=int, help="score every this many steps (default: --every; --stage plateau: "
                   "1000)")
    p.add_argument("--threads", type=int, help="torch threads of curve-score's translations")
    p.add_argument("--plateau-tolerance", type=float, default=0.5,
                   help="curve stages: BLEU a later checkpoint may gain over the plateau step (default 0.5)")
    p.add_argument("--plateau-window", type=int, default=2000,
                   help="curve stages: steps the curves must extend past the plateau step (default 2000)")
    p.add_argument("--plateau-system", default="lstm",
                   help="--stage plateau: the system trained on to its own plateau (default lstm)")
    p.add_argument("--plateau-from", type=int, default=8000,
                   help="--stage plateau: the step of SYSTEM_sSEED's checkpoint its plateau job continues (default "
                   "8000)")
    p.add_argument("--plateau-round", type=int, default=4000,
                   help="--stage plateau: steps trained between two readings of the rule (default 4000)")
    p.add_argument("--plateau-cap", type=int, default=40000,
                   help="--stage plateau: the most steps trained; no plateau by then is reported so (default 40000)")
    p.add_argument("--watch", type=float, help="curve-score: look for new checkpoints every this many minutes "
                   "until the jobs have finished")
    p.add_argument("--preorder-options", default=json.dumps(PREORDER_OPTIONS),
                   help="JSON keyword arguments of Preorderer.train (default: the choice of "
                        "tools/study/tune_preorderer.py on the Japanese-English tuning split, reports/TUNING.md)")
    p.add_argument("--prereg", default=DEFAULT_PREREG,
                   help=f"--stage report: the preregistration a decisive reading cites (default {DEFAULT_PREREG}; "
                        "the addendum with InXL's tuned start: reports/PREREG_decisive_tuned.md)")
    p.add_argument("--inxl-init", choices=option("xl_inxl_init").choices,
                   help="InXL's start (-xl_inxl_init) for the systems with InXL (default: the option's default); the "
                        "decisive design and the en->ja tier were trained with identity, before the tuning of "
                        "reports/TUNING.md changed the default")
    p.add_argument("--sec-per-step", type=float, help="--stage status: seconds per step per job to plan with "
                   "(default: measured from this work directory's training logs)")
    p.add_argument("--speed-from", help="--stage status: another work directory whose training logs give the "
                   "seconds per step (a tier that has not started, e.g. the reversed corpus's)")
    p.add_argument("--report", help="--stage report: Markdown file to write, with its .json beside it "
                   "(default WORKDIR/report.md)")
    p.add_argument("--families", type=families_option,
                   help="--stage report: the families of comparisons with the baseline, each Holm-corrected apart, "
                        "as NAME=SYSTEM,SYSTEM;NAME=SYSTEM (default: XL PE and Relative PE; the other baselines)")
    p.add_argument("--samples", type=int, default=1000, help="--stage report: bootstrap samples (default 1000)")
    p.add_argument("--bootstrap-seed", type=int, default=12345,
                   help="--stage report: seed of the bootstrap, recorded in the report (default 12345)")
    p.add_argument("--archive", help="directory (e.g. reports/evidence_jaen, small enough for git) that keeps the "
                   "alignment links, the finished jobs' results and the scored curve points, without checkpoints; a "
                   "fresh --workdir restores links and finished jobs from it first, so the same preorderer is "
                   "retrained and finished jobs are not (onmt_xl.experiments.archive); --stage aer keeps each "
                   "job's gold translation there too")
    p.add_argument("--preset", default="enja", choices=sorted(PRESETS), help="model size (default enja)")
    p.add_argument("--beam-size", type=int, default=5, help="beam size of the scoring translations (default 5)")
    p.add_argument("--time-budget", type=float, help="minutes: start no new training after this")
    p.add_argument("--gpu", choices=("auto", "yes", "no"), default="auto",
                   help="train and translate on the GPU: auto = when torch sees one (default auto)")
    p.add_argument("--parallel", type=int, default=None, help="jobs trained at once (default: one per CPU)")
    p.set_defaults(func=run_evidence)
