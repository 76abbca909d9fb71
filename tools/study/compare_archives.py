"""What moved between two archives of one study: each system's test BLEU in both, and their paired difference.

    python tools/study/compare_archives.py --before reports/evidence_jaen_inxl_identity --after reports/evidence_jaen \
        --systems inxl,combination,combination_pre10000,combination_pre25000

For each system, its seed runs are ``ARCHIVE/jobs/SYSTEM_sK/hyp.test.gz`` in each archive (the seeds both hold). The
tool prints, for each, corpus BLEU as mean ± sd over the runs, and Δ = after − before from the seed-pooled paired
bootstrap (:func:`onmt_xl.experiments.stats.seed_pooled_bootstrap`, as the evidence report computes it; both sides
on the same test pairs). It also prints each side's Δ against ``--baseline`` of its own archive. Everything is
sacrebleu's BLEU on summed per-sentence statistics; the draws come from ``--bootstrap-seed``, so the table
reproduces exactly. A Markdown table goes to stdout; ``--report`` also writes it, with a heading that names the
archives and the command, to a file.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from onmt_xl.core.errors import XLUsageError  # noqa: E402
from onmt_xl.experiments.stats import bleu_from_statistics, bleu_statistics, seed_pooled_bootstrap  # noqa: E402
from onmt_xl.experiments.stock import read_lines  # noqa: E402


def seed_runs(archive: Path, system: str) -> Dict[int, Path]:
    """Seed -> ``hyp.test.gz`` of ``system``'s finished runs in ``archive`` (jobs named ``SYSTEM_sSEED``)."""
    runs = {}
    for hyp in (archive / "jobs").glob(f"{system}_s*/hyp.test.gz"):
        tail = hyp.parent.name[len(system) + 2:]
        if tail.isdigit():
            runs[int(tail)] = hyp
    return runs


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str]) -> float:
    return float(bleu_from_statistics(bleu_statistics(hyps, refs).sum(axis=0)))


def _spread(values: Sequence[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return f"{statistics.mean(values):.2f} ± {sd:.2f}"


def compare(before: Path, after: Path, systems: Sequence[str], refs: List[str], baseline: str, samples: int,
            seed: int) -> List[str]:
    """The Markdown table's lines; a system without common seeds gets a row saying so."""
    out = [f"| system | seeds | before: test BLEU | after: test BLEU | after − before [95 % CI] | p | "
           f"before − {baseline} | after − {baseline} |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    base = {side: [read_lines(p) for _, p in sorted(seed_runs(side, baseline).items())] for side in (before, after)}
    for system in systems:
        runs = {side: seed_runs(side, system) for side in (before, after)}
        seeds = sorted(set(runs[before]) & set(runs[after]))
        if not seeds:
            out.append(f"| {system} | – | – | – | no seed finished in both archives | – | – | – |")
            continue
        hyps = {side: [read_lines(runs[side][s]) for s in seeds] for side in (before, after)}
        for side in (before, after):
            for h in hyps[side]:
                if len(h) != len(refs):
                    raise XLUsageError(str(side), None, f"{system}: a hypothesis file has {len(h)} lines, the "
                                       f"references {len(refs)}")
        moved = seed_pooled_bootstrap(hyps[after], hyps[before], refs, samples, seed)
        vs_base = [seed_pooled_bootstrap(hyps[side], base[side], refs, samples, seed).format() if base[side] else "–"
                   for side in (before, after)]
        out.append(f"| {system} | {','.join(map(str, seeds))} | "
                   f"{_spread([corpus_bleu(h, refs) for h in hyps[before]])} | "
                   f"{_spread([corpus_bleu(h, refs) for h in hyps[after]])} | {moved.format()} | {moved.p_value:.3f} | "
                   f"{vs_base[0]} | {vs_base[1]} |")
    return out


def default_refs() -> Path:
    """The study's test references (``dev.en`` of the shared data), ``--refs``' default."""
    from onmt_xl.experiments.inputs import shared_data

    return shared_data() / "enja" / "dev.en"


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="example: python tools/study/compare_archives.py --before "
                                       "reports/evidence_jaen_inxl_identity --after reports/evidence_jaen")
    p.add_argument("--before", required=True, help="the archive of the earlier runs")
    p.add_argument("--after", required=True, help="the archive of the runs that replaced them")
    p.add_argument("--systems", default="inxl,combination,combination_pre10000,combination_pre25000",
                   help="comma-separated systems (job names SYSTEM_sSEED)")
    p.add_argument("--baseline", default="baseline", help="the system each side is also compared with")
    p.add_argument("--refs", default=str(default_refs()), help="the test references")
    p.add_argument("--samples", type=int, default=1000, help="bootstrap samples (default 1000, as the report)")
    p.add_argument("--bootstrap-seed", type=int, default=12345)
    p.add_argument("--report", help="also write the table, with a heading, to this Markdown file")
    args = p.parse_args(argv)
    before, after = Path(args.before), Path(args.after)
    for side in (before, after):
        if not (side / "jobs").is_dir():
            raise XLUsageError(str(side), None, "is not an archive: it has no jobs/ directory")
    if not Path(args.refs).is_file():
        raise XLUsageError(args.refs, None, "the test references are missing (--refs)")
    refs = read_lines(Path(args.refs))
    systems = [s for s in args.systems.split(",") if s]
    table = compare(before, after, systems, refs, args.baseline, args.samples, args.bootstrap_seed)
    print("\n".join(table))
    if args.report:
        Path(args.report).write_text("\n".join(heading(args, systems) + table) + "\n", encoding="utf-8")
    return 0


def _refs_text(refs: str) -> str:
    """``--refs`` as the heading names it: nothing for the default, a path inside the checkout as given relative to
    it, another (a temporary work directory's) by its last three parts only."""
    path = Path(refs).resolve()
    if path == default_refs().resolve():
        return ""
    try:
        shown = str(path.relative_to(REPO))
    except ValueError:
        shown = "WORKDIR/" + "/".join(path.parts[-3:])
    return f" `--refs {shown}`"


def heading(args: argparse.Namespace, systems: Sequence[str]) -> List[str]:
    """The report's title and how to read its table (no date or machine path, so it regenerates byte for byte)."""
    return [f"# What moved: `{args.after}` against `{args.before}`", "",
            f"Generated by `python tools/study/compare_archives.py --before {args.before} --after {args.after} "
            f"--systems {','.join(systems)}` (`--samples {args.samples} --bootstrap-seed {args.bootstrap_seed}`"
            f"{_refs_text(args.refs)}); do not edit.", "",
            "Test BLEU is sacrebleu's corpus BLEU per run, mean ± sd over the seeds both archives hold. *after − "
            "before* is the seed-pooled paired bootstrap over the test sentences (the runs of a seed are different "
            f"models, so it is paired by sentence, not by seed); the last two columns are each side against its own "
            f"`{args.baseline}` runs, as the evidence report computes them.", ""]


if __name__ == "__main__":
    from onmt_xl.core.errors import install_excepthook

    install_excepthook()
    sys.exit(main())
