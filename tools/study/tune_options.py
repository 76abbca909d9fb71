"""Choose between a system's options on a tuning split carved from training data (never the test split).

    python tools/study/tune_options.py --workdir runs/tune_synth [--seeds 1,2] [--only NAME ...]
    python tools/study/tune_options.py --workdir runs/tune_enja --data ../shared/data/enja --preset enja \
        --tune-size 1000 --only inxl_absolute inxl_identity

By default the synthetic SVO→SOV corpus (``onmt_xl.core.data.synthetic``) is generated with the demo's size and seed;
with ``--data`` the corpus is Japanese→English. The last ``--tune-size`` training pairs are carved off as the
tuning split (with ``--data``, the ``--valid-size`` pairs before them validate), and the rest trains every candidate
(through the stock ``onmt_train`` / ``onmt_translate``, with the configurations of ``onmt_xl.experiments.configs`` plus
the candidate's options), as jobs of the workbench's runner under ``WORKDIR/jobs/``, so a killed run resumes;
``WORKDIR/tune.jsonl`` keeps one JSON line per job run so far (a later call with other ``--only`` candidates adds
to it), and the table printed at the end gives BLEU and chrF on the tuning split, mean ± sd over seeds;
``--decide A:B`` adds A's lead over B with its standard error (reports/TUNING.md's rule).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # this checkout's onmt_xl, whatever is installed, here and in the stock commands
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

from onmt_xl.experiments.configs import PRESETS, config  # noqa: E402
from onmt_xl.experiments.plan import Job  # noqa: E402
from onmt_xl.experiments.runner import Runner  # noqa: E402
from onmt_xl.experiments.stages import Corpus  # noqa: E402

#: candidate name -> (system of onmt_xl.experiments.systems.SYSTEMS, option overrides): what each choice compares
CANDIDATES: Dict[str, Tuple[str, Dict]] = {
    "baseline": ("baseline", {}),
    # quality at equal steps; fp32 on a CPU without native bf16
    "baseline_bf16": ("baseline", {"xl_cpu_precision": "bf16"}),
    # its reference (``baseline`` follows xl_cpu_precision auto)
    "baseline_fp32": ("baseline", {"xl_cpu_precision": "fp32"}),
    "disan": ("disan", {}),
    "disan_nogate": ("disan_nogate", {}),
    "inxl_absolute": ("inxl", {"xl_inxl_init": "absolute"}),
    "inxl_identity": ("inxl", {"xl_inxl_init": "identity"}),
    "combination_absolute": ("combination", {"xl_inxl_init": "absolute"}),
    "combination_identity": ("combination", {"xl_inxl_init": "identity"}),
    # HeadXL's tau at the study's 4 heads: the paper's quarter of the heads, against the default heads // 2
    "headxl_tau1": ("headxl", {"xl_heads": 1}),
    "headxl_tau2": ("headxl", {"xl_heads": 2}),
    # the LSTM of Tab. 4 (tier h): the study's shared Transformer recipe against the usual OpenNMT-py LSTM one
    "lstm_noam": ("lstm", {}),
    "lstm_adam": ("lstm", {"decay_method": "none", "learning_rate": 0.001, "max_grad_norm": 5.0}),
    "exgre_soft": ("exgre", {"xl_reordering_loss": "soft"}),
    "exgre_position": ("exgre", {"xl_reordering_loss": "position"}),
    "exgre_literal": ("exgre", {"xl_reordering_loss": "literal"}),
    "refsr_soft": ("refsr", {"xl_reordering_loss": "soft"}),
    "refsr_position": ("refsr", {"xl_reordering_loss": "position"}),
}


def carve(workdir: Path, tune_size: int, data_dir: Optional[str], valid_size: int) -> Corpus:
    """Training pairs with their last ``tune_size`` carved off as the tuning split (and, for ``data_dir``,
    the ``valid_size`` before those as the validation split); the test split is never read.

    ``data_dir`` None: the demo's synthetic corpus (its own validation split). Otherwise a directory with
    ``train.ja`` and ``train.en`` (Japanese→English, as ``onmt-xl experiments``).
    """
    out = workdir / "tune_split"
    out.mkdir(parents=True, exist_ok=True)
    if data_dir is None:
        from onmt_xl.experiments.demo import make_demo_data

        data = make_demo_data(workdir)
        sources = {"src": data.train_src, "tgt": data.train_tgt}
        valid = (data.valid_src, data.valid_tgt)
    else:
        sources = {"src": str(Path(data_dir) / "train.ja"), "tgt": str(Path(data_dir) / "train.en")}
        valid = (str(out / "valid.src"), str(out / "valid.tgt"))
    for side, path in sources.items():
        lines = Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
        held = tune_size + (valid_size if data_dir is not None else 0)
        (out / f"train.{side}").write_text("".join(lines[:-held]), encoding="utf-8")
        (out / f"tune.{side}").write_text("".join(lines[-tune_size:]), encoding="utf-8")
        if data_dir is not None:
            (out / f"valid.{side}").write_text("".join(lines[-held:-tune_size]), encoding="utf-8")
    # the tuning split is staged as the runner's test split
    return Corpus(str(out / "train.src"), str(out / "train.tgt"), str(out / "tune.src"), str(out / "tune.tgt"),
                  valid_src=valid[0], valid_tgt=valid[1])


def run_all(runner: Runner, steps: int) -> List[Dict]:
    """Train and translate every candidate job through the workbench's runner (resumable); one row each."""
    res = runner.run(sys.argv[1:])
    rows = []
    for job in runner.jobs:
        e = res["jobs"][job.name]
        t = e["variants"]["test"]
        rows.append({"name": job.experiments[0], "seed": job.seed, "steps": steps, "bleu": t["bleu"], "chrf": t["chrf"],
                     "train_seconds": round(e["train_seconds"], 1)})
    return rows


def table(rows: List[Dict]) -> str:
    by: Dict[str, List[Dict]] = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    out = ["| candidate | seeds | BLEU (mean ± sd) | chrF (mean ± sd) | per seed BLEU |",
           "| --- | ---: | ---: | ---: | --- |"]
    for name in CANDIDATES:
        rs = sorted(by.get(name, []), key=lambda r: r["seed"])
        if not rs:
            continue
        b, c = [r["bleu"] for r in rs], [r["chrf"] for r in rs]
        sd = (lambda v: statistics.stdev(v) if len(v) > 1 else float("nan"))
        out.append(f"| {name} | {len(rs)} | {statistics.mean(b):.2f} ± {sd(b):.2f} | {statistics.mean(c):.2f} ± "
                   f"{sd(c):.2f} | " + ", ".join(f"{x:.2f}" for x in b) + " |")
    return "\n".join(out)


def paired_lead(rows: List[Dict], a: str, b: str) -> Optional[Dict]:
    """``a``'s lead over ``b`` in tuning BLEU on the seeds both ran: the mean paired difference, its standard error
    (the paired differences' sd / √k) and whether the lead exceeds it (reports/TUNING.md's rule); None below 2 seeds."""
    by = {(r["name"], r["seed"]): r["bleu"] for r in rows}
    seeds = sorted(s for (n, s) in by if n == a and (b, s) in by)
    if len(seeds) < 2:
        return None
    diffs = [by[(a, s)] - by[(b, s)] for s in seeds]
    lead, se = statistics.mean(diffs), statistics.stdev(diffs) / len(diffs) ** 0.5
    return {"a": a, "b": b, "seeds": seeds, "diffs": diffs, "lead": lead, "se": se, "ahead": lead > se}


def decide_option(text: str) -> Tuple[str, str]:
    """``--decide A:B``: two candidates of :data:`CANDIDATES`."""
    a, sep, b = text.partition(":")
    if not sep or a not in CANDIDATES or b not in CANDIDATES:
        raise argparse.ArgumentTypeError(f"{text!r} is not A:B of two candidates ({', '.join(CANDIDATES)})")
    return a, b


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="example: python tools/study/tune_options.py --workdir runs/tune_synth --only "
                                "baseline disan")
    p.add_argument("--workdir", default="runs/tune_synth", help="work directory (resumable)")
    p.add_argument("--seeds", default="1,2", help="comma-separated training seeds")
    p.add_argument("--data", help="directory with train.ja / train.en (e.g. ../shared/data/enja); default: the "
                   "synthetic corpus")
    p.add_argument("--preset", default="demo", choices=sorted(PRESETS), help="model size "
                   "(onmt_xl.experiments.configs.PRESETS)")
    p.add_argument("--train-steps", type=int, help="training steps of every candidate (default: the preset's)")
    p.add_argument("--tune-size", type=int, default=500, help="training pairs carved off as the tuning split")
    p.add_argument("--valid-size", type=int, default=1000, help="with --data: the training pairs before the tuning "
                   "split that validate")
    p.add_argument("--threads", type=int, default=0, help="torch threads per job (0: torch's default)")
    p.add_argument("--beam-size", type=int, default=5)
    p.add_argument("--parallel", type=int, default=1, help="jobs trained at once (default 1)")
    p.add_argument("--only", nargs="+", choices=list(CANDIDATES), help="candidates to run (default: all)")
    p.add_argument("--decide", nargs="+", type=decide_option, default=[], metavar="A:B",
                   help="after the table, A's lead over B on the seeds both ran: mean paired difference, its standard "
                        "error (sd / sqrt(k)) and whether the lead exceeds it (reports/TUNING.md's rule)")
    args = p.parse_args(argv)
    workdir = Path(args.workdir)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    steps = args.train_steps or config("baseline", preset=args.preset)["train_steps"]
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    names = args.only or list(CANDIDATES)
    jobs = [Job(f"{n}_seed{seed}", CANDIDATES[n][0], seed, overrides=dict(CANDIDATES[n][1]), variants=["test"],
                experiments=[n]) for seed in seeds for n in names]
    runner = Runner(carve(workdir, args.tune_size, args.data, args.valid_size), str(workdir), jobs, args.preset, steps,
                    beam_size=args.beam_size, parallel=args.parallel, preorder_iterations=5)
    done = run_all(runner, steps)
    record = workdir / "tune.jsonl"  # every candidate run so far: this call's rows replace their earlier ones
    key = (lambda r: (r["name"], r["seed"], r["steps"]))
    kept = {key(r): r for r in (json.loads(l) for l in record.read_text(encoding="utf-8").splitlines() if l.strip())} \
        if record.exists() else {}
    kept.update({key(r): r for r in done})
    record.write_text("".join(json.dumps(r) + "\n" for r in kept.values()), encoding="utf-8")
    rows = [r for r in done if r["steps"] == steps and r["seed"] in seeds]
    print(table(rows))
    for a, b in args.decide:
        d = paired_lead(rows, a, b)
        print(f"{a} over {b}: " + ("fewer than 2 common seeds" if d is None else
              f"lead {d['lead']:+.2f} BLEU, standard error {d['se']:.2f} over seeds {d['seeds']} (per seed "
              + ", ".join(f"{x:+.2f}" for x in d["diffs"]) + "); ahead by more than the standard error: "
              + ("yes" if d["ahead"] else "no")))
    return 0


if __name__ == "__main__":
    from onmt_xl.core.errors import install_excepthook

    install_excepthook()  # a user's mistake (e.g. a work directory in use) is one line, not a traceback
    sys.exit(main())
