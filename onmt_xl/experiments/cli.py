"""The ``onmt-xl`` command: the plug-in's subcommands (:mod:`onmt_xl.cli`) plus the workbench's
(``demo``, ``pipeline``, ``write-configs``, ``experiments``, ``evidence``, ``papers``, ``sim``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

from onmt_xl.cli import main as plugin_main
from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.configs import PRESETS, config
from onmt_xl.experiments.inputs import add_corpus_arguments, corpus_from_args, shared_data, workdir_path
from onmt_xl.experiments.plan import EXPERIMENTS, Job, plan
from onmt_xl.experiments.stock import say
from onmt_xl.experiments.systems import SYSTEMS
from onmt_xl.core.options_table import option

EXPERIMENTS_HELP = """Run the papers' experiments on one tokenized corpus, resumably.

One command aligns, trains the preorderer, builds the vocabularies, trains every system of the chosen
experiments with the same model size, data, steps and seed through the stock onmt_build_vocab / onmt_train /
onmt_translate, scores with sacrebleu and writes a markdown report with plots."""


def _csv(text: str) -> List[str]:
    return [t for t in text.split(",") if t]


def _jobs(args, heads: int) -> List[Job]:
    try:
        jobs = plan(_csv(args.experiments), [int(s) for s in _csv(args.seeds)], heads)
    except ValueError as err:  # unknown experiments, a seed that is not a number
        raise XLUsageError(None, None, f"{err} (--experiments, --seeds)") from None
    if args.only:
        wanted = set(_csv(args.only))
        missing = wanted - {j.name for j in jobs}
        if missing:
            raise XLUsageError(None, None, f"--only {sorted(missing)}: not a job of "
                               f"{[e for e in EXPERIMENTS if e in _csv(args.experiments)]}")
        jobs = [j for j in jobs if j.name in wanted]
    return jobs


def _print_plan(jobs: List[Job]) -> None:
    for j in jobs:
        xl = j.xl_train if SYSTEMS[j.system].uses_preorderer else "-"
        print(f"{j.name:24s} {j.system:18s} seed {j.seed:<5d} {json.dumps(j.overrides) if j.overrides else '':28s} "
              f"train XL: {xl:10s} variants: {','.join(j.variants):40s} ({','.join(j.experiments)})")


def _keep_in_archive(runner, archive: Path, every_job: List[Job]) -> None:
    """``--report-only --archive``: report on the archive in a fresh work directory, and keep in the archive
    what a run started without ``--archive`` finished (never the run files of a run that has them)."""
    from onmt_xl.experiments.archive import save_alignments, save_job, save_run

    runner.stage_data()
    runner.restore_archive()
    save_alignments(runner.workdir, archive)
    save_run(runner.workdir, archive, replace=False, data=runner.corpus_dir())
    kept = [j.name for j in every_job if save_job(runner.workdir, archive, j.name, runner.corpus_dir())]
    say(f"archive: {len(kept)} finished job(s) kept in {archive}")


def run_experiments(args) -> int:
    from onmt_xl.core.errors import quiet_onmt_warnings
    from onmt_xl.experiments.report import write_report
    from onmt_xl.experiments.runner import Runner

    quiet_onmt_warnings()  # only OpenNMT-py 3.5.1's torch.cuda.amp deprecations
    corpus = corpus_from_args(args)
    heads = config("baseline", args.workdir, None, args.preset)["heads"]
    jobs = _jobs(args, heads)
    if args.list:
        _print_plan(jobs)
        return 0
    runner = Runner(corpus, args.workdir, jobs, args.preset, args.train_steps, args.valid_size, args.beam_size,
                    args.time_budget, gpu={"auto": None, "yes": True, "no": False}[args.gpu],
                    parallel=args.parallel, archive=args.archive)
    runner.inxl_init = args.inxl_init
    every_job = plan(EXPERIMENTS, [int(s) for s in _csv(args.seeds)], heads)  # the report lists what has not run too
    if not args.report_only:
        runner.run(sys.argv[1:])
    if args.archive and args.report_only:
        _keep_in_archive(runner, Path(args.archive), every_job)
    say(f"report: {write_report(runner.workdir, every_job, args.report_dir)}")
    return 0


def add_experiments(sub) -> None:
    p = sub.add_parser("experiments", help="the papers' experiments on a tokenized corpus: resumable runner + report",
                       description=EXPERIMENTS_HELP)
    add_corpus_arguments(p, shared_data())
    p.add_argument("--workdir", type=workdir_path, default="runs/experiments",
                   help="where everything is written (resumable)")
    p.add_argument("--experiments", default=",".join(EXPERIMENTS), help=f"comma-separated from {','.join(EXPERIMENTS)}")
    p.add_argument("--only", help="comma-separated job names (see --list) to restrict the plan to")
    p.add_argument("--seeds", default="1234,5678", help="the first seeds every system; the others the baseline and "
                   "Combination")
    p.add_argument("--preset", default="enja", choices=sorted(PRESETS), help="model size "
                   "(onmt_xl.experiments.configs.PRESETS)")
    p.add_argument("--train-steps", type=int, help="default: the preset's")
    p.add_argument("--beam-size", type=int, default=5, help="beam size of the test translations (default 5)")
    p.add_argument("--time-budget", type=float, help="minutes: start no new training after this (resume later)")
    p.add_argument("--gpu", choices=("auto", "yes", "no"), default="auto",
                   help="train and translate on the GPU: auto = when torch sees one (default auto)")
    p.add_argument("--parallel", type=int, default=None,
                   help="jobs trained at once, each with CPUs/N torch threads (default: one job per CPU without a GPU, "
                        "the fastest layout measured by tools/bench/bench_jobs.py, see reports/CPU_SPEED.md; 1 with a "
                        "GPU); each job's tok/s is then its share")
    p.add_argument("--inxl-init", choices=option("xl_inxl_init").choices,
                   help="InXL's start (-xl_inxl_init) for the systems with InXL (default: the option's default; "
                        "reports/RESULTS.md's runs were trained with identity, before reports/TUNING.md changed it)")
    p.add_argument("--list", action="store_true", help="print the plan and exit")
    p.add_argument("--report-only", action="store_true", help="write the report from what has run")
    p.add_argument("--report-dir", default="reports", help="where RESULTS.md and the plots go")
    p.add_argument("--archive", help="directory that keeps finished jobs' results and the run's links without "
                   "checkpoints (small enough for git); a fresh --workdir restores them first "
                   "(onmt_xl.experiments.archive)")
    p.set_defaults(func=run_experiments)


def workbench_subcommands():
    from onmt_xl.experiments.analysis import add_subcommands as add_analysis
    from onmt_xl.experiments.demo import add_subcommands as add_demo

    from onmt_xl.experiments.evidence import add_evidence
    from onmt_xl.experiments.papers import add_papers

    return [add_demo, add_analysis, add_experiments, add_evidence, add_papers]


#: one example per workbench subcommand (shown by ``onmt-xl COMMAND -h``)
EXAMPLES = {
    "demo": "onmt-xl demo --workdir runs/demo --systems baseline,combination\n"
            "onmt-xl demo --framework eole --workdir runs/demo   # through Eole 0.6.4: pip install eole==0.6.4 aiohttp",
    "pipeline": "onmt-xl pipeline --train-src data/train.ja --train-tgt data/train.en --valid-src data/dev.ja \\\n"
                "    --valid-tgt data/dev.en --test-src data/test.ja --test-ref data/test.en --workdir runs/mine",
    "write-configs": "onmt-xl write-configs --out yaml_configs --workdir runs/demo",
    "sim": "onmt-xl sim --model runs/demo/models/refsr_step_4000.pt --src data/test.ja --align align/test.gdfa",
    "experiments": "onmt-xl experiments --data ../shared/data/enja --list\n"
                   "onmt-xl experiments --data ../shared/data/enja --experiments main --time-budget 600",
    "evidence": "onmt-xl evidence --stage curve --max-steps 12000 --time-budget 600\n"
                "onmt-xl evidence --stage curve-score\n"
                "onmt-xl evidence --stage main --steps 8000 --tier a --preorder-pairs 10000,25000\n"
                "onmt-xl evidence --stage main --steps 8000 --tier c\n"
                "onmt-xl evidence --stage report --report reports/EVIDENCE_jaen.md",
    "papers": "onmt-xl papers --report reports/PAPERS.md\n"
              "onmt-xl papers --study jaen=reports/EVIDENCE_jaen.json --study decisive=reports/DECISIVE_jaen.json",
}


#: the top of ``onmt-xl -h`` (``python -m onmt_xl.cli -h``, the plug-in alone, keeps its own)
DESCRIPTION = ("'onmt-xl': cross-lingual position representations (XL PE) for OpenNMT-py and Eole as subcommands: "
               "word alignment, the BTG oracle and preorderer, pos_XL files and synthetic data; the demo, the "
               "pipeline from your raw text to scored translations, and the papers' experiments and reports.")


def main(argv: Optional[List[str]] = None) -> int:
    return plugin_main(argv, extra=workbench_subcommands(), examples=EXAMPLES, description=DESCRIPTION)


if __name__ == "__main__":
    sys.exit(main())
