"""Section 1 of the report: every main system against the baseline (BLEU, chrF, significance, size and speed),
and the spread over seeds of the systems trained with several."""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Sequence

from onmt_xl.experiments.plan import MAIN_SYSTEMS, Job
from onmt_xl.experiments.report.format import fmt, p_value, speed_marks

INTRO = [
    "## 1. Main table (Ding et al. 2020 Tab. 1–2; Chen et al. 2019a Tab. 1; Chen et al. 2020 Tab. 1)", "",
    "p-values against the baseline: sacrebleu paired bootstrap (1,000 samples) and the sign test "
    "(better/worse sentences); * p < 0.05, ** p < 0.01. *valid*: the same on the held-out validation pairs "
    "(the last training pairs; used for nothing but validation perplexity, so a second test set). Parameters from the "
    "checkpoints; tok/s is the median of OpenNMT's per-report training source tokens/second (first report left out), "
    "as trained here: a † marks a job trained while another shared the CPU (`--parallel`), a ‡ one resumed from a "
    "checkpoint (OpenNMT-py 3.5.1's `-train_from` restarts the corpus at its first line, so a resumed job also saw its "
    "data in another order than an uninterrupted one); the machine's speed also drifts, so × baseline is left out for "
    "marked rows and the controlled speed comparison is `tools/bench/bench_xl_step.py` "
    "(reports/bench_xl_step_enja.txt). `disan`: a residual block over directional heads (DiSAN's masks: no head reads "
    "the token itself) with DiSAN's fusion gate mixing in the normalised block input; `disan_nogate` "
    "(`-xl_disan_fusion none`, our variant) drops the gate.", "",
    "| system | params | Δ params | train src tok/s | × baseline | BLEU | Δ BLEU | chrF | p (bootstrap) | sign test "
    "+/− | p (sign) | valid BLEU | Δ | p (bootstrap) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]


def main_table(res: Dict[str, Any], jobs: Sequence[Job]) -> List[str]:
    """The main table, one row per job of the ``main`` experiment (a system's seeds after it), and the seeds table."""
    J = res["jobs"]
    base = J.get("baseline")
    row = {s: i for i, s in enumerate(MAIN_SYSTEMS)}  # a system's seeds follow it; the sort is stable
    main = sorted((j for j in jobs if "main" in j.experiments), key=lambda j: row.get(j.system, len(row)))
    md = list(INTRO)
    for j in main:
        e = J.get(j.name)
        md.append(f"| {j.name} | not run | | | | | | | | | | | | |" if e is None else _row(j.name, e, base))
    md.append("")
    return md + _seeds(J, main)


def _row(name: str, e: Dict[str, Any], base: Any) -> str:
    """Job ``name``'s row from its results ``e`` and the baseline's (``base``, None where it has not run)."""
    t, va = e["variants"].get("test", {}), e["variants"].get("valid", {})
    base_va = base["variants"].get("valid", {}).get("bleu") if base else None
    dv = va["bleu"] - base_va if "bleu" in va and base_va is not None else None
    dp = e["parameters"] - base["parameters"] if base else None
    clean = base and not speed_marks(e) and not speed_marks(base)  # a ratio of unlike measurements misleads
    ratio = e["src_tok_s"] / base["src_tok_s"] if clean and e.get("src_tok_s") and base.get("src_tok_s") else None
    db = t["bleu"] - base["variants"]["test"]["bleu"] if base and "bleu" in t and "test" in base["variants"] else None
    return (f"| {name} | {e['parameters']:,} | {'' if dp is None else f'{dp:+,}'} | "
            f"{fmt(e.get('src_tok_s'), ',.0f')}{speed_marks(e)} | {fmt(ratio, '.3f')} | {fmt(t.get('bleu'))} | "
            f"{fmt(db, '+.2f')} | {fmt(t.get('chrf'))} | {p_value(t.get('p_bootstrap'))} | "
            f"{t.get('sign_better', '–')}/{t.get('sign_worse', '–')} | {p_value(t.get('p_sign'))} | "
            f"{fmt(va.get('bleu'))} | {fmt(dv, '+.2f')} | {p_value(va.get('p_bootstrap'))} |")


def _seeds(J: Dict[str, Any], main: Sequence[Job]) -> List[str]:
    """BLEU and chrF per seed, mean and sample standard deviation of the systems trained with several seeds."""
    seeded: Dict[str, list] = {}
    for j in main:
        if j.name in J and "bleu" in J[j.name]["variants"].get("test", {}):
            test = J[j.name]["variants"]["test"]
            seeded.setdefault(j.system, []).append((j.seed, test["bleu"], test["chrf"]))
    rows = [(s, v) for s, v in seeded.items() if len(v) > 1]
    if not rows:
        return []
    md = ["Seeds (BLEU / chrF per seed; mean ± sample standard deviation):", "",
          "| system | seeds | BLEU per seed | BLEU mean ± sd | chrF mean ± sd |", "| --- | --- | --- | --- | --- |"]
    for s, v in rows:
        b, c = [x[1] for x in v], [x[2] for x in v]
        md.append(f"| {s} | {', '.join(str(x[0]) for x in v)} | {', '.join(f'{x:.2f}' for x in b)} | "
                  f"{statistics.mean(b):.2f} ± {statistics.stdev(b):.2f} | {statistics.mean(c):.2f} ± "
                  f"{statistics.stdev(c):.2f} |")
    return md + [""]
