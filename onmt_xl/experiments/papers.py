"""The three papers' claims against the converged study, one verdict per claim by a fixed rule (``onmt-xl papers``).

Input: the JSON reports of ``onmt-xl evidence --stage report`` (each regenerated from its archive), named by
study: ``jaen`` (tier a, and tier c's first runs: 48,000 training pairs, 500 test pairs), ``enja`` (tier b),
``decisive`` (tier e, the preregistered design: 43,000 training pairs, 5,500 test pairs; on the same split tiers c, i,
d and h, reports/PREREG_decisive_baselines.md), ``decisive_tuned`` (its addendum with InXL's tuned start,
reports/PREREG_decisive_tuned.md), ``decisive_xlpos`` (the third look, reports/PREREG_xlpos.md: read from the
evidence report inside reports/DECISIVE_jaen_xlpos.json), ``decisive_inxl`` (InXL with its default start on the
design's split against its baseline runs, issue 78), ``decisive_2seeds`` (the design with seeds 1-2 alone of the
systems later given seeds 3-8, :data:`FEWSEED_SYSTEMS`: only notes the verdicts those seeds changed),
``jaen_gpu``/``jaen_gpu_d`` (tiers c, h and d trained on a lent GPU, each work directory with its own baseline runs)
and ``decisive_gpu``/``decisive_gpu_d`` (the same on the decisive split).
Output: Markdown and its JSON.

Each claim is a difference the paper reports (its figure on its own data, ``effect``, in BLEU or AER points; the
sign is the claimed direction), measured here as a difference of the same two systems with a 95 % interval from the
seed-pooled paired bootstrap (the evidence report's), read by :mod:`onmt_xl.experiments.row_intervals`: a side with
fewer than 8 seed runs carries the seed variance pooled over the study's systems with the most runs, Holm is
recomputed within each family with those p, and each row gets its **Holm-adjusted interval** (the interval at the
level Holm tests the row at, α · p / Holm p). Every verdict reads that one interval:

- **reproduced**: it excludes 0 on the claimed side;
- **reversed**: it excludes 0 on the other side;
- **not reproduced**: it holds 0 and excludes an effect of the paper's size;
- **not measurable at this scale**: it holds both 0 and the paper's effect;
- **not run yet**: no converged run of a system it needs (the tier that trains it is named);
- attention AER only: **not measurable here** where neither system's attention aligns better than diagonal links.

A *reproduced* row also says how its size compares with the paper's figure (measured on other data and models, so
descriptive only): **smaller than the paper's** where the paper's figure lies beyond the adjusted interval's far
end, **larger than the paper's** where it lies short of the near end, nothing where the interval holds it. A row one
of whose systems scores below half the study baseline's BLEU is labelled **far from trained** (its verdict kept).

The tally counts claims, not rows: a claim measured again (the LSTM at its plateau) is counted once, by its first
row.

Tab. 3 is measured against the gold links first (the paper's protocol; the claim's verdict), then against the test
pairs' eflomal links (in domain, but noisy, and the preorderer behind the XL systems' positions learnt from the same
links, which favours them).

The power of each row is the smallest true difference it detects with 80 % power at the family's Bonferroni level
α/m, (z₁₋α/(2m) + z₀.₈) · SE, with SE the bootstrap interval's width / (2 · 1.96).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, Dict, List, Optional, Sequence, Tuple

from onmt_xl.core.errors import count
from onmt_xl.experiments import row_intervals
from onmt_xl.experiments.evidence_report import ORDERINGS, pair_name
from onmt_xl.experiments.paper_figures import (C19, C20, CHEN19_TAB3_JAEN, CHEN20_FIG2_JAEN, CHEN20_TAB1_JAEN, D,
                                               DING_BIG_ENDE, DING_TAB2_JAEN, DING_TAB3_ENDE, DING_TAB4_ENDE, fig, gain)
from onmt_xl.experiments.plan import AER_SYSTEMS
from onmt_xl.experiments.stats import FULL_SEEDS, holm

PAPERS = {D: "cross-lingual position representations (XL PE)", C19: "reordering embeddings",
          C20: "explicit reordering (ExGRE, ReFSR)"}
REPRODUCED, REVERSED, NOT_REPRODUCED, NOT_MEASURABLE, NOT_RUN = (
    "reproduced", "reversed", "not reproduced", "not measurable at this scale", "not run yet")
AT_CHANCE = "not measurable here: attention no better than diagonal links"
INTERIM = " (interim)"
PARTIAL = " (partial)"
SMALLER, LARGER = "smaller than the paper's", "larger than the paper's"
UNTRAINED = "comparison system far from trained"
ALPHA, POWER = 0.05, 0.8
#: which study answers a claim, best first: the preregistered decisive design where it measured the comparison,
#: then its addendum with InXL's tuned start (a second look, set up after the design's result was known), then the
#: same split's runs on a lent GPU, then the CPU study, then the GPU route's work directories of tiers c/h and d
#: (reports/EVIDENCE.md, tools/study/gpu_evidence.sh)
STUDY_ORDER = ("decisive", "decisive_tuned", "decisive_xlpos", "decisive_inxl", "decisive_gpu", "jaen", "jaen_gpu",
               "jaen_gpu_d")
#: the decisive design's reading with :data:`FEWSEED_SYSTEMS` at their 2 seeds (the pooled seed variance), regenerated
#: without their seeds 3-8 once ExGRE's and ReFSR's are archived: no row of its own; a verdict of ``decisive`` it
#: differs from says so in a note
BEFORE_FEWSEED = "decisive_2seeds"
#: the decisive split's few-seed systems later given seeds 3-8 beside their 1-2 (``tools/study/xlpos_queue.sh``:
#: ExGRE and ReFSR, stage ``fewseed``, issue 78; the encoder-free systems, stage ``encfree``,
#: ``reports/PREREG_encfree_seeds.md``), as the notes name them; ``tools/study/papers_report.sh`` leaves the same
#: jobs out of :data:`BEFORE_FEWSEED`'s archive
FEWSEED_SYSTEMS = "ExGRE, ReFSR and the three encoder-free systems"
#: what each study is, for the report's list of studies
STUDY_TEXT = {
    "decisive_tuned": "the decisive design's addendum, `reports/PREREG_decisive_tuned.md`, a second look set up after "
                      "the design's result was known: Combination with InXL's tuned start, `absolute` (the default), "
                      "against the design's baseline runs, which trained on older code (before later option renames "
                      "and the numba thread-pool fix of `b72fcc0`; one tuned seed retrained on another machine); rows "
                      "say *control on older code*",
    "decisive_xlpos": "the third look, `reports/PREREG_xlpos.md` (preregistered before its first job): Combination "
                      "with InXL's tuned start trained on cross-fitted positions of a source chosen on the tuning "
                      "split, against the design's 8 baseline runs (`reports/DECISIVE_jaen_xlpos.md`)",
    "decisive_inxl": "InXL with its default (tuned) start, `absolute`, 8 seeds on the decisive design's split against "
                     "the design's 8 baseline runs (issue 78, `tools/study/xlpos_queue.sh` stage `inxl`): the design's "
                     "InXL rows test the `identity` start the tuning split rejected",
    "decisive": "the preregistered decisive design, `reports/PREREG_decisive.md`: Combination, HeadXL and InXL with "
                "InXL's `identity` start, which the tuning split then rejected (`reports/TUNING.md`; rows with "
                "InXL say so); on its split, the other papers' systems "
                "(`reports/PREREG_decisive_baselines.md`: `identity` in tiers c and d, the default start in tier h)",
    BEFORE_FEWSEED: f"the decisive design as it read before the seeds 3-8 of {FEWSEED_SYSTEMS}: their seeds 1-2 "
                    "with the pooled seed variance, every other run the same; no row of its own, a **decisive** row "
                    "whose verdict differs from it says so",
    "jaen": "the ja→en study: tier a, and tier c's first runs",
    "enja": "the en→ja study, tier b, with InXL's `identity` start",
    "jaen_gpu": "tiers c and h trained on a lent GPU", "jaen_gpu_d": "tier d trained on a lent GPU",
    "decisive_gpu": "the decisive split's tiers c, i and h trained on a lent GPU with their own baseline runs",
    "decisive_gpu_d": "the decisive split's tier d trained on a lent GPU with its own default runs"}
#: the two preregistered primary comparisons of the decisive question (the design, its addendum): Holm over both
PRIMARY_STUDIES, PRIMARY_SYSTEM = ("decisive", "decisive_tuned"), "combination"
#: the order of events behind the two primaries (``git log`` of the reports named; dates UTC), for the report's
#: paragraph on the decisive question
ADDENDUM_HISTORY = (
    "the design's result at k = 8 was committed on 2026-11-27 at 16:55 (`1ef8b5a`, `reports/DECISIVE_jaen.md`); "
    "the tuning that rejected the `identity` start landed at 18:50 (`b72fcc0`, `reports/TUNING.md`; that morning "
    "`TUNING.md` still said the decisive design keeps the defaults it was preregistered with); the addendum, "
    "`reports/PREREG_decisive_tuned.md`, was committed at 19:06 (`3a43119`), before any of its jobs trained")
#: what a study's rows need said beside them (``systems``: the rows with any of them; ``None``: every row)
ROW_NOTES: Dict[str, Tuple[Optional[frozenset], str]] = {
    "decisive": (frozenset({"inxl", "combination"}),
                 "InXL's `identity` start, rejected by tuning"),
    "decisive_tuned": (None, "control on older code"),
    "decisive_xlpos": (None, "cross-fitted training positions"),
    "decisive_inxl": (frozenset({"inxl"}), "InXL's default start"),
}
#: runs added after the third look's jobs (``tools/study/xlpos_queue.sh``: issue 78's stages ``inxl`` and ``fewseed``,
#: then stage ``encfree``): what each is, what it answers, and what reads it once ``study`` holds each of ``systems``
#: with 8 seeds
ADDED_RUNS = (
    {"run": "InXL with the default (tuned) start, 8 seeds, on the decisive split (`reports/decisive_jaen_inxl`)",
     "why": "the design's InXL rows test the `identity` start the tuning split rejected",
     "read": "study **decisive_inxl**'s row", "study": "decisive_inxl", "systems": ("inxl",)},
    {"run": "ExGRE and ReFSR seeds 3-8 beside the design's 1-2 (`reports/decisive_jaen`, tier c)",
     "why": "the rows whose verdict the seed variance decides (until then their intervals carry the pooled seed "
            "variance)",
     "read": "their rows of study **decisive**, 8 seeds each", "study": "decisive", "systems": ("exgre", "refsr")},
    {"run": "the encoder-free Transformer's seeds 3-8 with absolute, relative and InXL PE beside the design's 1-2 "
            "(`reports/decisive_jaen`, tiers c and h; `reports/PREREG_encfree_seeds.md`)",
     "why": "the two Tab. 4 rows whose verdict the pooled seed variance decides",
     "read": "their Tab. 4 rows of study **decisive**, 8 seeds each", "study": "decisive",
     "systems": ("encoder_free", "encoder_free_relative", "encoder_free_inxl")},
)
#: what issue 78 asked for that has run: the control's drift check (``reports/PREREG_xlpos.md``, ``reports/XLPOS.md``)
DONE_FOR_78 = (
    "2 baseline seeds retrained on the current code (the third look's drift check, `reports/XLPOS.md`) translate the "
    "5,500 test pairs word for word as the design's archived control runs, which the addendum compares with: the "
    "older code changed nothing there",)


@dataclass(frozen=True)
class PaperClaim:
    """One finding of a paper: ``effect`` is its figure for the difference (``None``: a trend without one figure),
    ``kind`` how it is measured (``baseline``: a system against the baseline; ``pair``: system ``a`` against ``b``;
    ``aer``: Δ attention AER against the baseline, in points; ``tau``/``noise``: the sweeps), ``tier`` the study's
    tier that trains what it needs; ``repeat``: the claim above measured again (the tally counts it once)."""

    paper: str
    where: str
    text: str
    effect: Optional[float]
    kind: str
    a: str = ""
    b: str = "baseline"
    tier: str = "a"
    repeat: bool = False


T2, T3, T4, R3, E1 = DING_TAB2_JAEN, DING_TAB3_ENDE, DING_TAB4_ENDE, CHEN19_TAB3_JAEN, CHEN20_TAB1_JAEN
#: the LSTM trained on to its own plateau (onmt_xl.experiments.plateau): its runs are jobs/lstm_plateau_sSEED
PLATEAU_LSTM = "lstm_plateau"
PLATEAU_STAGE = "the LSTM's plateau stage"  # not a tier: onmt-xl evidence --stage plateau, the queue's last


def _aer_gain(system: str) -> float:
    return round(T3[system][0] - T3["baseline"][0], 2)


CLAIMS: Tuple[PaperClaim, ...] = (
    PaperClaim(D, "Tab. 2", f"Combination improves on the Transformer (Ja-En {fig(T2['baseline'])} → "
               f"{fig(T2['combination'])}, p < 0.01)", gain(T2, "combination"), "baseline", "combination", tier="a, e"),
    PaperClaim(D, "Tab. 2", f"InXL PE improves on the Transformer (→ {fig(T2['inxl'])})", gain(T2, "inxl"), "baseline",
               "inxl"),
    PaperClaim(D, "Tab. 2", f"HeadXL PE improves on the Transformer (→ {fig(T2['headxl'])})", gain(T2, "headxl"),
               "baseline", "headxl"),
    PaperClaim(D, "Tab. 2", f"Combination beats InXL ({fig(T2['combination'])} vs {fig(T2['inxl'])})",
               gain(T2, "combination", "inxl"), "pair", "combination", "inxl"),
    PaperClaim(D, "Tab. 2", f"Combination beats HeadXL ({fig(T2['combination'])} vs {fig(T2['headxl'])})",
               gain(T2, "combination", "headxl"), "pair", "combination", "headxl"),
    PaperClaim(D, "Tab. 2", f"Relative PE improves on the Transformer (→ {fig(T2['relative_pe'])})",
               gain(T2, "relative_pe"), "baseline", "relative_pe"),
    PaperClaim(D, "Tab. 2", f"DiSAN improves on the Transformer (→ {fig(T2['disan'])})", gain(T2, "disan"), "baseline",
               "disan", tier="c"),
    PaperClaim(D, "Tab. 3", f"InXL's attention aligns better (En-De AER {fig(T3['baseline'][0])} → "
               f"{fig(T3['inxl'][0])} %)",
               _aer_gain("inxl"), "aer", "inxl", tier="g"),
    PaperClaim(D, "Tab. 3", f"HeadXL's attention aligns better (→ {fig(T3['headxl'][0])} %)", _aer_gain("headxl"),
               "aer", "headxl", tier="f"),
    PaperClaim(D, "Tab. 3", f"Combination's attention aligns better (→ {fig(T3['combination'][0])} %)",
               _aer_gain("combination"), "aer", "combination", tier="e"),
    PaperClaim(D, "Tab. 4 (En-De)", f"The full Transformer beats the encoder-free one with absolute PE "
               f"({fig(DING_BIG_ENDE)} vs {fig(T4['encoder_free'])})", round(T4["encoder_free"] - DING_BIG_ENDE, 2),
               "baseline", "encoder_free", tier="c"),
    PaperClaim(D, "Tab. 4", f"Without an encoder, absolute PE ≫ no PE ({fig(T4['encoder_free_none'])} → "
               f"{fig(T4['encoder_free'])})", gain(T4, "encoder_free", "encoder_free_none"), "pair", "encoder_free",
               "encoder_free_none", tier="c, h"),
    PaperClaim(D, "Tab. 4", f"Without an encoder, relative PE beats absolute PE ({fig(T4['encoder_free_relative'])} vs "
               f"{fig(T4['encoder_free'])})", gain(T4, "encoder_free_relative", "encoder_free"), "pair",
               "encoder_free_relative", "encoder_free", tier="c, h"),
    PaperClaim(D, "Tab. 4", f"Without an encoder, InXL PE beats absolute PE ({fig(T4['encoder_free_inxl'])} vs "
               f"{fig(T4['encoder_free'])})", gain(T4, "encoder_free_inxl", "encoder_free"), "pair",
               "encoder_free_inxl", "encoder_free", tier="c, h"),
    PaperClaim(D, "Tab. 4", f"The encoder-free Transformer with InXL PE beats a 6-layer LSTM "
               f"({fig(T4['encoder_free_inxl'])} vs {fig(T4['lstm'])}); the LSTM at the study's 8,000 steps "
               "(preregistered)", gain(T4, "encoder_free_inxl", "lstm"), "pair", "encoder_free_inxl", "lstm", tier="h"),
    PaperClaim(D, "Tab. 4", "The same, the LSTM trained on to its own plateau (a deviation: "
               "`reports/PREREG_decisive_baselines.md`)", gain(T4, "encoder_free_inxl", "lstm"), "pair",
               "encoder_free_inxl", PLATEAU_LSTM, tier=PLATEAU_STAGE, repeat=True),
    PaperClaim(D, "Fig. 3", "BLEU peaks at an intermediate τ: τ = 0 and τ = H both score below τ = H/2", None, "tau",
               tier="d"),
    PaperClaim(D, "Fig. 4", "Noisier training XL indices lower BLEU (noise is no regulariser)", None, "noise",
               tier="d"),
    PaperClaim(C19, "Tab. 3", f"Encoder REs improve on the Transformer (Ja-En {fig(R3['baseline'])} → "
               f"{fig(R3['enc_re'])})", gain(R3, "enc_re"), "baseline", "enc_re", tier="c"),
    PaperClaim(C19, "Tab. 3", f"Both REs improve on the Transformer (→ {fig(R3['both_re'])})", gain(R3, "both_re"),
               "baseline", "both_re", tier="c"),
    PaperClaim(C19, "Tab. 3", f"Both REs beat encoder REs ({fig(R3['both_re'])} vs {fig(R3['enc_re'])})",
               gain(R3, "both_re", "enc_re"), "pair", "both_re", "enc_re", tier="c"),
    PaperClaim(C19, "Tab. 3", f"Pre-reordering the source with a preorderer hurts ({fig(R3['baseline'])} → "
               f"{fig(R3['prereorder'])})", gain(R3, "prereorder"), "baseline", "prereorder", tier="c"),
    PaperClaim(C20, "Tab. 1", f"ExGRE improves on the Transformer (Ja-En {fig(E1['baseline'])} → {fig(E1['exgre'])})",
               gain(E1, "exgre"), "baseline", "exgre", tier="c"),
    PaperClaim(C20, "Tab. 1", f"ReFSR improves on the Transformer (→ {fig(E1['refsr'])})", gain(E1, "refsr"),
               "baseline", "refsr", tier="c"),
    PaperClaim(C20, "Tab. 1", f"ReFSR beats ExGRE ({fig(E1['refsr'])} vs {fig(E1['exgre'])})",
               gain(E1, "refsr", "exgre"),
               "pair", "refsr", "exgre", tier="c"),
    PaperClaim(C20, "Fig. 2", f"Source in target order from alignments, test side included, gains several BLEU "
               f"(Ja-En {fig(CHEN20_FIG2_JAEN[0])} → {fig(CHEN20_FIG2_JAEN[1])})",
               round(CHEN20_FIG2_JAEN[1] - CHEN20_FIG2_JAEN[0], 2), "pair", "prereorder_oracle", "baseline", tier="c"),
)


@dataclass(frozen=True)
class Measured:
    """A claim's measurement in one study: Δ (in the claim's unit) with its interval, Holm p and family size."""

    study: str  # the study's name, a key of ``studies``
    delta: float
    low: float
    high: float
    p_holm: float
    m: int
    runs: str = ""
    at_chance: bool = False  # attention AER: both systems align no better than diagonal links
    interim: bool = False  # the decisive design before the seeds its precision rule requires
    partial: bool = False  # jobs of the row's systems, or of its Holm family's, not finished yet
    adj_low: float = 0.0  # the Holm-adjusted interval, which the verdict reads (row_intervals)
    adj_high: float = 0.0
    carried: bool = False  # the interval and p carry the pooled seed variance (a side with few seeds)
    notes: Tuple[str, ...] = ()  # what the row needs said beside it: ROW_NOTES, a system far from trained
    reference: str = ""  # an attention-AER row's reference links (AER_REFERENCES), shown after the study


def smallest_detectable(low: float, high: float, m: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The true difference detected with ``power`` at the Bonferroni level ``alpha``/``m`` (two-sided), given a
    95 % interval [``low``, ``high``] taken as normal."""
    z = NormalDist()
    se = (high - low) / (2 * z.inv_cdf(0.975))
    return (z.inv_cdf(1 - alpha / (2 * max(1, m))) + z.inv_cdf(power)) * se


def verdict(low: float, high: float, effect: Optional[float], direction: int) -> str:
    """The module docstring's rule on one interval, the Holm-adjusted [``low``, ``high``]; ``direction``: the claimed
    sign (+1 or −1), ``effect`` the paper's figure."""
    near, far = (low, high) if direction > 0 else (-high, -low)
    if near > 0:
        return REPRODUCED
    if far < 0:
        return REVERSED
    if size_vs_paper(low, high, effect, direction) == SMALLER:  # the interval excludes an effect of the paper's size
        return NOT_REPRODUCED
    return NOT_MEASURABLE


def size_vs_paper(low: float, high: float, effect: Optional[float], direction: int) -> Optional[str]:
    """Where the paper's figure ``effect`` lies against the interval [``low``, ``high``] in the claimed
    ``direction`` (``SMALLER``: beyond its far end; ``LARGER``: short of its near end), or ``None`` where the
    interval holds it (or there is no figure). :func:`verdict` reads ``SMALLER`` of a non-significant row as *not
    reproduced*; a *reproduced* row shows it in the report."""
    if effect is None:
        return None
    near, far = (low, high) if direction > 0 else (-high, -low)
    size = effect * direction
    return SMALLER if size > far else LARGER if size < near else None


def _family_size(report: Dict[str, Any], family: Optional[str]) -> int:
    return sum(1 for c in report.get("comparisons", {}).values() if c.get("family") == family) or 1


def ordering_sides(report: Dict[str, Any]) -> frozenset:
    """The systems on either side of the orderings ``report`` declared: Holm runs over the orderings found so far,
    so any of them still training can move a pair's p (today's ``ORDERINGS`` for a report written before it
    recorded its own)."""
    return frozenset(side for pair in report.get("orderings", ORDERINGS) for side in pair)


def _runs(c: Dict[str, Any]) -> str:
    return f"{c.get('system_runs', '?')} vs {c.get('baseline_runs', '?')} seeds" if "system_runs" in c else ""


def measure(claim: PaperClaim, studies: Dict[str, Dict[str, Any]],
            left: Optional[Dict[str, Dict[str, Any]]] = None, pool: bool = True) -> List[Measured]:
    """Every study's measurement of ``claim`` (``baseline``/``pair``/``aer`` kinds), best study first; ``left``
    (:func:`jobs_left`) marks a row *partial* while jobs of its systems (of any system of its Holm
    family: ``baseline``'s comparisons, every ordering the report declared for a ``pair``, Tab. 3's systems for an
    ``aer`` row) are not finished, and a row carrying the pooled seed variance while any job of its study is (the
    pool reads every system's runs); ``pool``: see :func:`row_intervals.read`."""
    out = []
    for study in STUDY_ORDER:
        report = studies.get(study)
        if report is None:
            continue
        interim = interim_design(report)
        pending = _left_in(left, report, "systems")
        read = row_intervals.read(report, ALPHA, pool)
        notes = _row_notes(study, (claim.a, claim.b))

        def measured(key: Tuple[str, str], c: Dict[str, Any], m: int, scale: float = 1.0, **kw: Any) -> Measured:
            r = read[key]
            # a row carrying the pooled seed variance moves with every system's runs: partial while any is left
            kw["partial"] = kw.get("partial", False) or (r.carried and bool(pending))
            return Measured(study, scale * r.delta, scale * r.low, scale * r.high, r.p_holm, m, _runs(c),
                            adj_low=scale * r.adj_low, adj_high=scale * r.adj_high, carried=r.carried, **kw)

        if claim.kind == "baseline":
            c = report.get("comparisons", {}).get(claim.a)
            if c:
                # the family as declared (a member left out of the report until its runs finish), else as reported
                family = ((report.get("families_declared") or {}).get(c.get("family"))
                          or (report.get("family_members") or {}).get(c.get("family")) or [claim.a])
                out.append(measured(("comparisons", claim.a), c, _family_size(report, c.get("family")),
                                    interim=interim, partial=bool(pending & {claim.a, *family}),
                                    notes=notes + _untrained(report, (claim.a,))))
        elif claim.kind == "pair":
            key = "pairs"
            if pair_name(claim.a, claim.b) not in report.get(key, {}):  # against a system at its plateau: own family
                key = "plateau_pairs"
            pairs = report.get(key, {})
            c = pairs.get(pair_name(claim.a, claim.b))
            if c:
                out.append(measured((key, pair_name(claim.a, claim.b)), c, len(pairs), interim=interim,
                                    partial=bool(pending & {claim.a, claim.b, *ordering_sides(report)}),
                                    notes=notes + _untrained(report, (claim.a, claim.b))))
        elif claim.kind == "aer":
            for key, label in AER_REFERENCES:
                aer = report.get(key) or {}
                c = aer.get("comparisons", {}).get(claim.a)
                if c:
                    # Holm runs over every system of Tab. 3 the report has runs of: one still training can move p
                    out.append(measured((key, claim.a), c, len(aer["comparisons"]), 100.0, reference=label,
                                        at_chance=_at_chance(aer, claim), interim=interim,
                                        partial=bool(pending & {claim.a, *AER_SYSTEMS}), notes=notes))
    return out


def _row_notes(study: str, systems: Sequence[str]) -> Tuple[str, ...]:
    """:data:`ROW_NOTES`' note for ``study`` where the row compares any of its systems."""
    which, note = ROW_NOTES.get(study, (frozenset(), ""))
    return (note,) if note and (which is None or which & set(systems)) else ()


def _untrained(report: Dict[str, Any], systems: Sequence[str]) -> Tuple[str, ...]:
    """The label of a row one of whose ``systems`` is far from trained (:func:`row_intervals.far_from_trained`)."""
    return tuple(f"{UNTRAINED} ({name} {mean:.1f} vs the baseline's {base:.1f} BLEU)"
                 for name, mean, base in row_intervals.far_from_trained(report, systems))


def _left_in(left: Optional[Dict[str, Dict[str, Any]]], report: Optional[Dict[str, Any]], key: str) -> Any:
    """``key`` (``systems``, ``tiers`` or ``job_tiers``; an empty set when absent) of :func:`jobs_left`'s entry
    for ``report``'s work directory."""
    return ((left or {}).get((report or {}).get("workdir") or "") or {}).get(key, set())


def job_system(job: str) -> str:
    """The system of a main-stage job name, ``NAME_sSEED`` -> ``NAME``."""
    return job.rsplit("_s", 1)[0]


def jobs_left(progress: Sequence[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """:func:`tier_progress`'s rows by archive directory name (a study's ``workdir``): the systems with jobs not
    finished (``NAME_sSEED`` -> ``NAME``), the tiers that have any, and each such job's tier (``job_tiers``)."""
    out: Dict[str, Dict[str, Any]] = {}
    for row in progress:
        entry = out.setdefault(Path(row["archive"]).name, {"systems": set(), "tiers": set(), "job_tiers": {}})
        entry["systems"].update(job_system(name) for name in row["left"])
        entry["job_tiers"].update({name: row["tier"] for name in row["left"]})
        if row["left"]:
            entry["tiers"].add(row["tier"])
    return out


def unread_runs(left: Dict[str, Dict[str, Any]], studies: Dict[str, Dict[str, Any]],
                progress: Sequence[Dict[str, Any]]) -> None:
    """Add to ``left`` (:func:`jobs_left`) each system of a ``progress`` row naming its systems whose finished jobs
    the study's report has not read yet (archived after the report was built, until ``tools/study/papers_report.sh``
    builds it again): its rows can still move, as with jobs left."""
    for report in studies.values():
        workdir = report.get("workdir")
        for row in progress:
            if Path(row["archive"]).name != workdir or not row.get("systems"):
                continue
            for system in row["systems"]:
                read = set(((report.get("systems") or {}).get(system) or {}).get("seeds") or [])
                done = {seed for seed in row["seeds"] if f"{system}_s{seed}" not in row["left"]}
                if done - read:
                    left.setdefault(workdir, {"systems": set(), "tiers": set(), "job_tiers": {}})["systems"].add(system)


def interim_design(report: Dict[str, Any]) -> bool:
    """The report reads the decisive design before the seeds its precision rule requires (its verdicts interim)."""
    return bool((report.get("decisive") or {}).get("extension_pending"))


#: the evidence report's attention-AER keys, in the order they answer Tab. 3: the gold links (the paper's protocol),
#: then the test pairs' eflomal links (in domain, but noisy, and the XL systems' positions come from the same links)
AER_REFERENCES = (("attention_aer", "gold links"), ("attention_aer_test", "eflomal test links"))


def _at_chance(aer: Dict[str, Any], claim: PaperClaim) -> bool:
    """Neither the system's nor the baseline's attention aligns better than the diagonal links (mean AER)."""
    diagonal = (aer.get("chance") or {}).get("diagonal", {}).get("aer")
    systems = aer.get("systems") or {}
    means = [systems[n]["aer"]["mean"] for n in (claim.a, claim.b) if n in systems]
    return diagonal is not None and len(means) == 2 and min(means) >= diagonal


#: which study answers the sweeps (tier d), best first: the decisive split (reports/PREREG_decisive_baselines.md) on
#: this CPU, then on a lent GPU, then the CPU study, then the GPU route's tier-d work directory
SWEEP_STUDIES = ("decisive", "decisive_gpu_d", "jaen", "jaen_gpu_d")
#: claim kind -> the evidence report's sweep setting
_SWEEPS = {"tau": "τ", "noise": "noise"}


def _sweep(report: Dict[str, Any], setting: str) -> Optional[Dict[str, Any]]:
    return next((s for s in report.get("sweeps", []) if s.get("setting") == setting), None)


def sweep_verdict(claim: PaperClaim, report: Optional[Dict[str, Any]], heads: int) -> Tuple[str, str]:
    """The τ sweep (both ends below τ = H/2, each significantly: reproduced; either end significantly above:
    reversed) and the noise attack (the noisiest point significantly below the clean run: reproduced; any noisy
    point significantly above it: reversed); else not measurable. *Significantly*: the point's Holm-adjusted
    interval against the default run excludes 0, with the seed variance carried (one run a point,
    :mod:`row_intervals`). Without the default setting's run, or (τ) without both ends, not run yet; the figure then
    names what is missing. Returns (figure, verdict)."""
    sweep = _sweep(report or {}, _SWEEPS[claim.kind])
    points = sweep["points"] if sweep else []
    others = [p for p in points if not p.get("default")]
    if not others:
        return "–", NOT_RUN
    read = row_intervals.read(report or {}, ALPHA)
    at = {p["setting"]: read[f"sweep:{sweep.get('setting')}", p["setting"]] for p in points if "vs_default" in p}
    figure = ", ".join(f"{p['setting']}: {p['test_bleu']:.2f}" + (
        f" ({at[p['setting']].delta:+.2f}, Holm p {at[p['setting']].p_holm:.3f})" if p["setting"] in at else "")
        for p in points)
    missing = [] if any(p.get("default") for p in points) else [
        f"the default's run{' ' + sweep['default_job'] if sweep.get('default_job') else ''}"]
    ends = [str(0), str(heads)]
    if claim.kind == "tau":
        missing += [f"τ = {e}" for e in ends if e not in {p["setting"] for p in others}]
    if missing:
        return figure + f" ({' and '.join(missing)} needed)", NOT_RUN
    below = {setting: r.adj_high < 0 for setting, r in at.items()}
    above = [setting for setting, r in at.items() if r.adj_low > 0]
    if claim.kind == "tau":
        if any(e in above for e in ends):
            return figure, REVERSED
        return figure, REPRODUCED if all(below.get(e) for e in ends) else NOT_MEASURABLE
    if above:
        return figure, REVERSED
    noisiest = others[-1]["setting"]
    return figure, REPRODUCED if below.get(noisiest) else NOT_MEASURABLE


def _tiers_left(claim: PaperClaim, left: Optional[Dict[str, Dict[str, Any]]]) -> List[str]:
    """The tiers of ``claim.tier`` that still have jobs of the claim's systems (``left``: :func:`jobs_left`); all of
    them without that record, or when none has (finished, the report not regenerated yet)."""
    tiers = [t.strip() for t in claim.tier.split(",")]
    pending = {tier for entry in (left or {}).values() for name, tier in entry.get("job_tiers", {}).items()
               if job_system(name) in (claim.a, claim.b)}
    return [t for t in tiers if t in pending] or tiers


def plateau_state(claim: PaperClaim, studies: Dict[str, Dict[str, Any]]) -> Optional[Tuple[str, Dict[str, Any]]]:
    """``(study, state)`` of the system at its plateau that ``claim`` reads (``SYSTEM_plateau``), best study first."""
    if not claim.b.endswith("_plateau"):
        return None
    system = claim.b[: -len("_plateau")]
    return next(((study, studies[study]["plateaus"][system]) for study in STUDY_ORDER
                 if system in ((studies.get(study) or {}).get("plateaus") or {})), None)


def _plateau_pending(claim: PaperClaim, studies: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """A claim against a system at its plateau that has no translation yet: still training (*not run yet*) or no
    plateau by the cap (*not measurable at this scale*, as the deviation states)."""
    found = plateau_state(claim, studies)
    if found is None or found[1].get("status") == "plateau":
        return []
    study, st = found
    steps = ", ".join(f"{n:,}" for n in st.get("reached", {}).values()) or "0"
    if st.get("status") == "cap":
        return [{"study": study, "figure": f"no plateau by {st['cap']:,} steps (seeds at {steps})",
                 "verdict": NOT_MEASURABLE}]
    return [{"study": study, "figure": f"no plateau yet (seeds at {steps} steps)", "verdict": NOT_RUN}]


def rows(studies: Dict[str, Dict[str, Any]], heads: int,
         left: Optional[Dict[str, Dict[str, Any]]] = None, pool: bool = True) -> List[Dict[str, Any]]:
    """One entry per claim: the paper, the claim, each study's figure with interval, Holm p, power and verdict;
    ``left`` (:func:`jobs_left`): the jobs not finished yet, which make a verdict *(partial)*; ``pool``: few-seed
    sides carry the pooled seed variance (:func:`row_intervals.read`)."""
    out = []
    for claim in CLAIMS:
        entry: Dict[str, Any] = {"paper": claim.paper, "where": claim.where, "claim": claim.text,
                                 "effect": claim.effect, "unit": "AER points" if claim.kind == "aer" else "BLEU",
                                 "tier": claim.tier, "repeat": claim.repeat, "measured": []}
        if claim.kind in ("tau", "noise"):
            study = next((n for n in SWEEP_STUDIES if _sweep(studies.get(n) or {}, _SWEEPS[claim.kind])
                          and len(_sweep(studies[n], _SWEEPS[claim.kind])["points"]) > 1), SWEEP_STUDIES[0])
            report = studies.get(study)
            figure, v = sweep_verdict(claim, report, heads)
            if v != NOT_RUN and claim.tier in _left_in(left, report, "tiers"):
                v += PARTIAL
            # a sweep waiting on its default run also waits on that run's tier
            default_tier = (_left_in(left, report, "job_tiers") or {}).get(
                (_sweep(report or {}, _SWEEPS[claim.kind]) or {}).get("default_job"))
            tiers = [claim.tier] + ([default_tier] if v == NOT_RUN and default_tier not in (None, claim.tier) else [])
            entry["measured"].append({"study": study, "figure": figure, "verdict": v, "tiers": tiers,
                                      "notes": list(_row_notes(study, ("headxl",) if claim.kind == "tau"
                                                                else ("combination",)))})
            entry["verdict"], entry["tiers"] = v, tiers
        else:
            direction = -1 if (claim.effect or 0) < 0 else 1
            for m in measure(claim, studies, left, pool):
                v = AT_CHANCE if m.at_chance else verdict(m.adj_low, m.adj_high, claim.effect, direction)
                entry["measured"].append({
                    "study": m.study, "delta": m.delta, "low": m.low, "high": m.high, "p_holm": m.p_holm, "m": m.m,
                    "adj_low": m.adj_low, "adj_high": m.adj_high, "seed_variance_pooled": m.carried,
                    "runs": m.runs, "detectable": smallest_detectable(m.low, m.high, m.m),
                    "verdict": v + (INTERIM if m.interim else "") + (PARTIAL if m.partial else ""),
                    "size": size_vs_paper(m.adj_low, m.adj_high, claim.effect, direction) if v == REPRODUCED else None,
                    "notes": list(m.notes), **({"reference": m.reference} if m.reference else {})})
            pending = [] if entry["measured"] else _plateau_pending(claim, studies)
            entry["measured"] += pending
            entry["verdict"] = entry["measured"][0]["verdict"] if entry["measured"] else NOT_RUN
            entry["tiers"] = _tiers_left(claim, left)
            for m in pending:
                m["tiers"] = entry["tiers"]
        out.append(entry)
    return out


def primaries(studies: Dict[str, Dict[str, Any]]) -> Optional[Dict[str, Dict[str, float]]]:
    """The decisive question's two primary comparisons (the design's and its addendum's Combination against the
    baseline), each p alone and Holm-corrected over the two, as ``PREREG_decisive_tuned.md`` states; ``None`` until
    both reports have the comparison."""
    found = {s: ((studies.get(s) or {}).get("comparisons") or {}).get(PRIMARY_SYSTEM) for s in PRIMARY_STUDIES}
    if not all(found.values()):
        return None
    corrected = holm({s: c["p"] for s, c in found.items()})
    decisions = {s: (((studies[s].get("decisive") or {}).get("rows") or {}).get(PRIMARY_SYSTEM) or {}).get("decision")
                 for s in found}
    return {s: {"delta": c["delta"], "low": c["low"], "high": c["high"], "p": c["p"], "p_holm": corrected[s],
                "decision": decisions[s] or [c.get("verdict", "")]} for s, c in found.items()}


def third_look(result: Optional[Dict[str, Any]]) -> Optional[List[Dict[str, Any]]]:
    """The three looks at the decisive question from the third look's report (``reports/DECISIVE_jaen_xlpos.json``,
    :mod:`onmt_xl.experiments.xlpos_report`: the design, its addendum, then the third look, each with its p
    Holm-corrected over the three, as ``reports/PREREG_xlpos.md`` states); None until it has its primary."""
    looks = (result or {}).get("looks")
    return list(looks) if looks and len(looks) == len(PRIMARY_STUDIES) + 1 else None


def build(studies: Dict[str, Dict[str, Any]], heads: int,
          progress: Sequence[Dict[str, Any]] = (), third: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Everything ``PAPERS.md`` says, as JSON-able data (``progress``: :func:`tier_progress`'s rows; ``third``: the
    third look's report, :func:`third_look`, whose evidence report, where it holds one, is study ``decisive_xlpos``)."""
    if (third or {}).get("evidence"):
        studies = {**studies, "decisive_xlpos": third["evidence"]}
    left = jobs_left(progress)
    unread_runs(left, {k: v for k, v in studies.items() if k != BEFORE_FEWSEED}, progress)
    claims = rows(studies, heads, left)
    if BEFORE_FEWSEED in studies and "decisive" in studies:
        note_fewseed_changes(claims, rows({"decisive": studies[BEFORE_FEWSEED]}, heads))
    note_pooling_decides(claims, rows(studies, heads, left, pool=False), studies)
    tally: Dict[str, int] = {}
    for c in claims:
        if not c["repeat"]:  # one verdict per claim: a claim measured again counts once, by its first row
            tally[c["verdict"]] = tally.get(c["verdict"], 0) + 1
    untrained = sum(1 for c in claims if not c["repeat"] and c["measured"]
                    and any(n.startswith(UNTRAINED) for n in c["measured"][0].get("notes", [])))
    listed = list(DEFAULT_STUDIES) + ["decisive_xlpos"]  # the report's order, not the caller's
    ordered = sorted(studies, key=lambda k: listed.index(k) if k in listed else len(listed))
    return {"studies": {k: _study_facts(studies[k]) for k in ordered}, "claims": claims, "tally": tally,
            "claims_counted": sum(tally.values()), "far_from_trained": untrained,
            "heads": heads, "alpha": ALPHA, "power": POWER, "primaries": primaries(studies),
            "third_look": third_look(third), "corrections": corrections(studies, heads), "progress": list(progress),
            "added_runs": added_runs(studies)}


def note_fewseed_changes(claims: List[Dict[str, Any]], before: List[Dict[str, Any]]) -> None:
    """Note on each **decisive** row of ``claims`` whose verdict differs from ``before`` (:func:`rows` of
    :data:`BEFORE_FEWSEED` read as study ``decisive``, claim for claim) what it read before the seeds 3-8 of
    :data:`FEWSEED_SYSTEMS`: their own rows, and their Holm families' (whose correction those seeds change)."""
    def base(verdict: str) -> str:
        return verdict.replace(INTERIM, "").replace(PARTIAL, "")

    for claim, old in zip(claims, before):
        now = next((m for m in claim["measured"] if m["study"] == "decisive"), None)
        was = next((m for m in old["measured"] if m["study"] == "decisive"), None)
        if now is None or was is None or base(now["verdict"]) == base(was["verdict"]):
            continue
        now["notes"].append(f"{_read_as(was, base(was['verdict']))} with the pooled seed variance and seeds 1-2 "
                            f"alone of {FEWSEED_SYSTEMS}, before their seeds 3-8")


def _where(row: Dict[str, Any]) -> str:
    """A measured row's study, with its reference links where it is an attention-AER row: ``decisive, gold links``."""
    return row["study"] + (f", {row['reference']}" if row.get("reference") else "")


def _read_as(row: Dict[str, Any], verdict: str) -> str:
    """How another reading of a row went, for its note: ``*verdict*, Holm p 0.031``."""
    return f"*{verdict}*" + (f", Holm p {row['p_holm']:.3f}" if row.get("p_holm") is not None else "")


def note_pooling_decides(claims: List[Dict[str, Any]], own: List[Dict[str, Any]],
                         studies: Dict[str, Dict[str, Any]]) -> None:
    """Note on each row of ``claims`` that carries the pooled seed variance what it would read with its own runs'
    variance alone (``own``: :func:`rows` with ``pool=False``, claim for claim, study for study), where that differs:
    a verdict the pooling decides. ``pooling_decides`` on the row names that verdict and the row's systems with fewer
    than :data:`FULL_SEEDS` runs, whose further seeds would settle it."""
    for spec, claim, alone in zip(CLAIMS, claims, own):
        for now, was in zip(claim["measured"], alone["measured"]):
            if not now.get("seed_variance_pooled") or now["study"] != was["study"] or now["verdict"] == was["verdict"]:
                continue
            now["notes"].append(f"{_read_as(was, was['verdict'])} with its own runs' seed variance alone")
            report = studies.get(now["study"]) or {}
            names = [report.get("baseline", "baseline") if n == "baseline" else n for n in (spec.a, spec.b) if n]
            few = [n for n in names if len(row_intervals.bleu_values(report, n) or ()) < FULL_SEEDS]
            now["pooling_decides"] = {"verdict": was["verdict"], "systems": few}


def added_runs(studies: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """:data:`ADDED_RUNS` with ``done``: their study holds each of their systems with 8 seeds (the report reads
    them all); until then the report names them as queued."""
    out = []
    for run in ADDED_RUNS:
        systems = (studies.get(run["study"]) or {}).get("systems") or {}
        done = all(len((systems.get(name) or {}).get("seeds") or ()) >= 8 for name in run["systems"])
        out.append({"run": run["run"], "why": run["why"], "read": run["read"], "done": done})
    return out


def tier_progress(spec: str) -> List[Dict[str, Any]]:
    """``--progress ARCHIVE:TIERS[:SEEDS[:SYSTEMS]]``: for each tier of ``TIERS`` (comma-separated), its main-stage
    jobs (the tier's seeds of :data:`onmt_xl.experiments.evidence.TIERS`, or ``SEEDS``; the oracle rows with tier c,
    the sweeps with tier d; only those of ``SYSTEMS`` where given) and which of them ``ARCHIVE`` holds finished
    (``jobs/NAME/done.json``), one row a tier."""
    from onmt_xl.core.errors import XLUsageError
    from onmt_xl.experiments.evidence import TIERS, tier_main_jobs

    parts = spec.split(":")
    if len(parts) not in (2, 3, 4) or not all(parts):
        raise XLUsageError(None, None, f"--progress {spec!r}: expected ARCHIVE:TIERS, ARCHIVE:TIERS:SEEDS or "
                                       "ARCHIVE:TIERS:SEEDS:SYSTEMS")
    archive, tiers = Path(parts[0]), parts[1].split(",")
    unknown = [tier for tier in tiers if tier not in TIERS]
    if unknown:
        raise XLUsageError(None, None, f"--progress {spec!r}: unknown tier {unknown[0]!r} ({', '.join(sorted(TIERS))})")
    try:
        given = [int(s) for s in parts[2].split(",")] if len(parts) >= 3 else None
    except ValueError:
        raise XLUsageError(None, None, f"--progress {spec!r}: SEEDS must be comma-separated whole numbers") from None
    jobs = {tier: [job.name for job in tier_main_jobs(tier, TIERS[tier][0], tuple(given or TIERS[tier][1]),
                                                      1, 1, 1, 0, 1)] for tier in tiers}
    wanted = parts[3].split(",") if len(parts) == 4 else None
    known = {job_system(name) for names in jobs.values() for name in names}
    stray = [name for name in wanted or () if name not in known]
    if stray:
        raise XLUsageError(None, None, f"--progress {spec!r}: no system {stray[0]!r} in "
                                       f"{'tier' if len(tiers) == 1 else 'tiers'} {parts[1]} "
                                       f"({', '.join(sorted(known))})")
    out = []
    for tier, names in jobs.items():
        if wanted:
            names = [name for name in names if job_system(name) in wanted]
        left = [n for n in names if not (archive / "jobs" / n / "done.json").is_file()]
        out.append({"archive": parts[0], "tier": tier, "seeds": list(given or TIERS[tier][1]), "jobs": len(names),
                    "finished": len(names) - len(left), "left": left, **({"systems": wanted} if wanted else {})})
    return out


def _study_facts(report: Dict[str, Any]) -> Dict[str, Any]:
    facts = {k: report.get(k) for k in ("workdir", "test_sentences", "novel_sentences", "seen_source_sentences",
                                        "valid_sentences", "bootstrap", "plateau_step", "family_members",
                                        "families_declared", "orderings")}
    if interim_design(report):
        facts["interim"] = {k: report["decisive"][k] for k in ("seeds", "extended_seeds")}
    variance, df = row_intervals.pooled_seed_variance(
        [row_intervals.bleu_values(report, n) or [] for n in (report.get("systems") or {})])
    if variance is not None:
        facts["pooled_seed_sd"], facts["pooled_seed_df"] = variance ** 0.5, df
    return facts


def corrections(studies: Dict[str, Dict[str, Any]], heads: int) -> List[str]:
    """The independent audit's findings, each with what the archive now says (figures read from the reports)."""
    out = []
    enja = studies.get("enja")
    if enja and enja.get("seen_source_sentences") is not None:
        out.append(f"en→ja: {enja['seen_source_sentences']} of the {enja['test_sentences']} test sources occur "
                   f"verbatim among the training sources (all {enja['novel_sentences']} references are novel by the "
                   "target-side definition); `EVIDENCE_enja.md` states the count. ja→en: "
                   f"{studies.get('jaen', {}).get('seen_source_sentences', '?')} test sources seen in training.")
    for name in ("jaen", "enja"):
        rep = studies.get(name) or {}
        cells = [f"{row['system']} {half} {row[half]['p_holm']:.3f}" for row in (rep.get("by_reordering") or {}).get(
            "rows", []) for half in ("more", "less") if half in row]
        if cells:
            out.append(f"By-reordering halves, {name}, Holm p per cell (more / less reordered half): "
                       + "; ".join(cells) + ". This split was added after the 3-seed results: exploratory.")
    out.append("Tiers a (ja→en) and b (en→ja) are separate Holm families; en→ja's one comparison is corrected alone.")
    carve = ((studies.get("decisive") or {}).get("decisive") or {}).get("carve") or {}
    share = (f" `dev` is {carve['test_given']:,} of the decisive design's {carve['test_after']:,} test pairs "
             f"({carve['test_given'] / carve['test_after']:.0%}); `reports/PREREG_decisive.md`'s sentence that no "
             "choice was ever made on those pairs is false, and its erratum says so."
             if carve.get("test_given") and carve.get("test_after") else "")
    out.append("Choices made on the test split: the preorderer's base options were chosen on `dev` (the study's test "
               "split) in earlier rounds (`reports/PREORDER_HISTORY.md`); the tuning split only re-tested one-option "
               f"changes.{share} InXL's start and HeadXL's τ were settled on the ja→en tuning split, 3 seeds each, by "
               "the rule of `reports/TUNING.md`: InXL now starts from `absolute` (`identity` before), tier (a)'s InXL "
               "systems retrain with it (their `identity` runs: `reports/evidence_jaen_inxl_identity`); the decisive "
               "design and en→ja keep `identity`, the start they were run with.")
    out.append(f"HeadXL's default τ stays H // 2: {heads // 2} of the preset's {heads} heads, which the tuning split "
               "preferred to the paper's quarter of the heads (τ = 4 of its 16).")
    out.append("Tab. 4's rows are declared systems: `encoder_free_none`, `encoder_free` (absolute PE), "
               "`encoder_free_relative`, `encoder_free_inxl` and `lstm` (tier h with tier c's `encoder_free`); the "
               "LSTM, short of convergence at 8,000 steps, is also trained on to its own plateau (`lstm_plateau`: a "
               "deviation, `reports/PREREG_decisive_baselines.md`).")
    out.append("The two equations only stored translations caught (`xl_relative` adding the absolute PE; the decoder's "
               "reordering embedding dropped) are pinned by `tests/test_pinned_equations.py`; `reports/mutation.md` "
               "is regenerated by `tools/ci/mutation_check.py --report`.")
    return out


def _tiers(tiers: Sequence[str]) -> str:
    """``tier d`` or ``tiers d and f``: where a row's missing jobs train (a stage that is no tier: its name)."""
    if list(tiers) == [PLATEAU_STAGE]:
        return PLATEAU_STAGE
    return f"tier {tiers[0]}" if len(tiers) == 1 else f"tiers {', '.join(tiers[:-1])} and {tiers[-1]}"


def _bootstrap(b: Optional[Dict[str, Any]]) -> str:
    return f"{b['samples']:,} samples, seed {b['seed']}" if b else "–"


def _count(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else str(n)


def _fmt(x: Optional[float], spec: str = "+.2f") -> str:
    return "–" if x is None else format(x, spec)


def markdown(report: Dict[str, Any]) -> str:
    facts = report["studies"]
    md = ["# The papers' claims at convergence", "",
          "Generated by `onmt-xl papers` (`onmt_xl/experiments/papers.py`) from the evidence reports; do not edit.", "",
          "**How to read it.** Each row is a difference a paper reports, on its own data (WAT'17 Ja-En unless named; "
          "2–4.5 M pairs, Transformer BIG or base). Ours is measured on Japanese→English with the study's preset "
          "(d 256, 3+3 layers, 8,000 steps, the average of the last 5 checkpoints). *Δ* is the same difference here, "
          "mean over seeds, with the 95 % interval of the seed-pooled paired bootstrap over test sentences. "
          "*Holm p* is corrected within the row's family (*m* comparisons). *detectable* is the smallest true "
          f"difference the row would detect with {report['power']:.0%} power at α/m.", "",
          f"**Few seeds.** With two runs a system's seed variance is estimated on one degree of freedom, and the "
          f"bootstrap, resampling those runs, barely sees it. So a side with fewer than {FULL_SEEDS} runs carries "
          "instead the seed variance pooled over the same study's systems with the most runs (8 in the decisive "
          f"design and its addendum; {_pooled_text(report)}; AER rows pool AER the same way): Δ's variance grows by "
          "max(0, s²_pooled − v)/k for that side (k runs, v the plug-in variance of its own runs), the interval widens "
          "about Δ by the ratio of the standard errors (the bootstrap's Δ taken as normal), p becomes the normal p "
          "(never below the bootstrap's), and Holm is recomputed within the family. Such rows say *seed variance "
          "pooled* beside their seeds (`onmt_xl/experiments/row_intervals.py`, `stats.with_seed_variance`), and "
          "where their own runs' variance alone would give another verdict, they name it: the pooling decides that "
          "verdict, and more seeds would settle it.", "",
          "**One verdict rule on one interval.** Every verdict reads the *Holm-adjusted interval*: Δ's interval at "
          "the level Holm tests the row at (α · p / Holm p: α/m for the smallest p of m, α for a family of one), so it "
          "holds 0 exactly where Holm p ≥ α. *reproduced*: it excludes 0 on the paper's side; *reversed*: on the "
          "other side; *not reproduced*: it holds 0 and excludes the paper's figure; *not measurable at this scale*: "
          "it holds both; *not run yet*. A *reproduced* row adds *smaller* or *larger than the paper's* where that "
          "interval lies short of or beyond the paper's figure (other data and models: descriptive only). A row one "
          f"of whose systems scores below {row_intervals.UNTRAINED_SHARE:.0%} of the study baseline's BLEU is "
          f"labelled *{UNTRAINED}*; its verdict stands but says little about the claim. *(partial)*: jobs of the "
          "row's systems, or of another system of its Holm family, are not finished yet (*What is missing*), or, "
          "for a row carrying the pooled seed variance, jobs of any system of its study, so its figure, *m*, Holm p "
          "and verdict can still move.", ""]
    if report.get("primaries"):  # the decisive question's answer leads, before how to read the rows
        md[4:4] = _primaries_markdown(report["primaries"], report.get("third_look")) + [""]
    md += ["Studies:"]
    for name, f in facts.items():
        md.append(f"- **{name}**: " + (f"{STUDY_TEXT[name]}; " if name in STUDY_TEXT else "")
                  + f"`{f.get('workdir')}`, {_count(f.get('test_sentences'))} test pairs "
                  f"({_count(f.get('novel_sentences'))} with a novel reference), bootstrap "
                  f"{_bootstrap(f.get('bootstrap'))}."
                  + (f" **Interim**: {f['interim']['seeds']} seeds per system of the {f['interim']['extended_seeds']} "
                     "its preregistered precision rule requires (`reports/PREREG_decisive.md`); its verdicts are "
                     "marked *(interim)*." if f.get("interim") else ""))
    md += ["", f"Tally, one verdict per claim ({report['claims_counted']} claims; a claim measured again counts once, "
           "by its first row, its first study): " + ", ".join(f"{k} {v}" for k, v in sorted(report["tally"].items()))
           + "." + (f" Of these, {report['far_from_trained']} answered against a {UNTRAINED}."
                    if report["far_from_trained"] else ""), ""]
    for paper, topic in PAPERS.items():
        md += [f"## {paper}: {topic}", "",
               "| where | claim | paper's Δ | study | Δ [95 % CI] | Holm-adjusted CI | Holm p (m) | detectable | "
               "verdict |",
               "| --- | --- | ---: | --- | --- | --- | --- | ---: | --- |"]
        for c in (c for c in report["claims"] if c["paper"] == paper):
            unit = " pt" if c["unit"] == "AER points" and c["effect"] is not None else ""
            head = f"| {c['where']} | {c['claim']} | {_fmt(c['effect'])}{unit} "
            if not c["measured"]:
                md.append(head + f"| – | – | – | – | – | {NOT_RUN} ({_tiers(c['tiers'])}) |")
            for m in c["measured"]:
                notes = "".join(f"; {n}" for n in m.get("notes", []))
                if "figure" in m:
                    md.append(head + f"| {m['study']} | {m['figure']} | – | – | – | {m['verdict']}"
                              + (f" ({_tiers(m['tiers'])})" if m["verdict"] == NOT_RUN else "") + notes + " |")
                else:
                    runs = m["runs"] + ("; seed variance pooled" if m.get("seed_variance_pooled") else "")
                    md.append(head + f"| {_where(m)} ({runs}) | {m['delta']:+.2f} [{m['low']:+.2f}, "
                              f"{m['high']:+.2f}] | [{m['adj_low']:+.2f}, {m['adj_high']:+.2f}] | "
                              f"{m['p_holm']:.3f} ({m['m']}) | {m['detectable']:.2f} | "
                              f"{m['verdict']}" + (f"; {m['size']}" if m.get("size") else "") + notes + " |")
                head = "| | | "
        md.append("")
    md += ["## Corrections after the independent audit", ""] + [f"- {c}" for c in report["corrections"]] + [""]
    md += ["## What is missing", ""]
    not_run = [c for c in report["claims"] if c["verdict"] == NOT_RUN
               or any(m["verdict"] == NOT_RUN for m in c["measured"])]
    partial = [c for c in report["claims"] if any(PARTIAL in m["verdict"] for m in c["measured"])]
    left = [r for r in report.get("progress") or [] if r["left"]]
    if not_run:
        md += ["Rows marked *not run yet* wait for the CPU queue or a lent GPU (tiers in "
               "`onmt_xl/experiments/evidence.py`, `TIERS`; tiers c, d, h and i train on the decisive split, "
               "`reports/PREREG_decisive_baselines.md`; the order and the hours left: `reports/EVIDENCE.md`, Compute "
               "plan). Their only figures are the 1,500-step runs of `reports/RESULTS.md`, which answer nothing about "
               "convergence.", ""]
    if partial:
        md += [f"Rows marked *(partial)* ({count(len(partial), 'claim')}) read finished runs while jobs of their "
               "systems, or of another system of their Holm family (for a row carrying the pooled seed variance, of "
               "any system of its study), still train (the table below), or have finished after the study's report "
               "was built (`bash tools/study/papers_report.sh` reads them): their figures and verdicts may change.",
               ""]
    if not (not_run or partial):
        md += ["Every row has its verdict from finished runs" + ("; the jobs left in the table below feed no row yet."
               if left else ", and no tier has a job left."), ""]
    decided = [(c, m) for c in report["claims"] for m in c["measured"] if m.get("pooling_decides")]
    if decided:
        systems = sorted({n for _, m in decided for n in m["pooling_decides"]["systems"]})
        one = len(decided) == 1
        md += [f"{count(len(decided), 'verdict')} {'rests' if one else 'rest'} on the pooled seed variance (*Few "
               f"seeds* above): with each side's own runs' variance alone {'it' if one else 'they'} would read "
               "otherwise. "
               + "; ".join(f"{c['where']}, \"{c['claim']}\": {m['verdict']} ({_where(m)}), "
                           f"{m['pooling_decides']['verdict']} on its own runs" for c, m in decided)
               + ". Seeds up to " + str(FULL_SEEDS) + " of " + _and([f"`{n}`" for n in systems])
               + f" would settle {'it' if one else 'them'}.", ""]
    runs = report.get("added_runs") or added_runs({})
    queued = [f"{r['run']}: {r['why']}" for r in runs if not r["done"]]
    read = [f"{r['run']}, read by {r['read']}" for r in runs if r["done"]]
    md += [(f"Queued on the CPU (`tools/study/xlpos_queue.sh`): {'; '.join(queued)}. "
            if queued else "") + "Done: " + "; ".join(read + list(DONE_FOR_78)) + ".", ""]
    if any(c["verdict"] == NOT_RUN and c["tier"] == PLATEAU_STAGE for c in report["claims"]):
        md += ["The LSTM trained on to its own plateau (`onmt-xl evidence --stage plateau`, "
               "`onmt_xl/experiments/plateau.py`) trains last, after tiers f, g and a (`tools/study/study_queue.sh`); "
               "its rounds continue checkpoints that stay on the machine that wrote them, so a new machine trains it "
               "again from step 0.", ""]
    if report.get("progress"):
        md += [("Each remaining" if left else "Each") + " tier's jobs, as the archives held them when this report "
               "was generated (a job counts once it is archived finished):", "",
               "| archive | tier | seeds | finished | jobs left |", "| --- | --- | --- | ---: | --- |"]
        md += [f"| `{r['archive']}` | {r['tier']}" + (f" ({', '.join(r['systems'])})" if r.get("systems") else "")
               + f" | {', '.join(map(str, r['seeds']))} | {r['finished']} of {r['jobs']} "
               f"| {', '.join(r['left']) or '–'} |" for r in report["progress"]] + [""]
    return "\n".join(md)


def _and(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (nothing: their few-seed systems)."""
    if not items:
        return "their few-seed systems"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _primaries_markdown(found: Dict[str, Dict[str, Any]], looks: Optional[List[Dict[str, Any]]] = None
                        ) -> List[str]:
    """The opening paragraph: the design's answer, the addendum's second look, the third look (``looks``,
    :func:`third_look`: then every p is Holm-corrected over the three looks, else over the two primaries)."""
    holm_over = "the three looks" if looks else "the two primaries"
    adjusted = {s: (looks[i]["p_holm"] if looks else found[s]["p_holm"]) for i, s in enumerate(PRIMARY_STUDIES)}

    def cell(s: str) -> str:
        c = found[s]
        return (f"{c['delta']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}], p {c['p']:.3f} (Holm over {holm_over} "
                f"{adjusted[s]:.3f}): \"{'; '.join(c['decision'])}\"")
    third = looks[-1] if looks else None
    last = (f" A third look, preregistered before its first job (`reports/PREREG_xlpos.md`, "
            "`reports/DECISIVE_jaen_xlpos.md`: Combination trained on cross-fitted positions of a chosen source, "
            f"with InXL's tuned start): {third['delta']:+.2f} [{third['low']:+.2f}, {third['high']:+.2f}], p "
            f"{third['p']:.3f} (Holm over {holm_over} {third['p_holm']:.3f}): \"{third['verdict']}\". The three "
            "verdicts stand side by side; none replaces another." if third else
            " A third look, preregistered before its first job (`reports/PREREG_xlpos.md`: Combination trained on "
            "cross-fitted positions of a chosen source, its p Holm-corrected over the three looks), is running on "
            "the CPU queue (`reports/XLPOS.md`); it has no result here yet.")
    return ["**The decisive question.** The preregistered answer is the design's (`decisive`, "
            "`reports/PREREG_decisive.md`): Combination with InXL's `identity` start against the baseline, "
            f"{cell('decisive')}. A second look, also preregistered but set up after that result was known "
            f"(`decisive_tuned`: {ADDENDUM_HISTORY}), asked it again with InXL's tuned start: "
            f"{cell('decisive_tuned')}. Each keeps its own preregistered rule; the second look does not replace the "
            "first. In the table below the design's row comes first, the addendum's beside it." + last]


def _pooled_text(report: Dict[str, Any]) -> str:
    """The pooled seed standard deviation of test BLEU per study, as the report used it."""
    cells = [f"{name} {f['pooled_seed_sd']:.2f} BLEU ({f['pooled_seed_df']} degrees of freedom)"
             for name, f in report["studies"].items() if f.get("pooled_seed_sd") is not None]
    return "pooled sd " + ", ".join(cells) if cells else "none pooled"


def load_studies(paths: Dict[str, Path]) -> Dict[str, Dict[str, Any]]:
    """The evidence reports that exist, by study name; a named file that is missing is left out."""
    return {name: json.loads(Path(p).read_text(encoding="utf-8")) for name, p in paths.items() if Path(p).exists()}


def write(paths: Dict[str, Path], out: Path, heads: int, progress: Sequence[Dict[str, Any]] = (),
          third: Optional[Path] = None) -> Dict[str, Any]:
    """Write ``out`` (Markdown) and its ``.json``; return the report (``progress``: :func:`tier_progress`'s rows;
    ``third``: the third look's JSON, where it exists)."""
    found = json.loads(third.read_text(encoding="utf-8")) if third is not None and third.exists() else None
    report = build(load_studies(paths), heads, progress, found)
    out.write_text(markdown(report), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    return report


def add_papers(sub) -> None:
    p = sub.add_parser("papers", help="the three papers' claims against the converged study: one verdict per claim "
                       "by a fixed rule, from the evidence reports' JSON (reports/PAPERS.md)")
    p.add_argument("--study", action="append", default=[], metavar="NAME=JSON",
                   help="an evidence report's JSON by study name: jaen (tier a and tier c's first runs, on the "
                        "CPU), enja (tier b), decisive (tier e, and tiers c, i, d, h on its split), decisive_tuned "
                        "(its addendum with InXL's tuned start), decisive_inxl (InXL with its default start on that "
                        "split), decisive_2seeds (the decisive design before the seeds 3-8 of ExGRE, ReFSR and the "
                        "encoder-free systems: it only notes the verdicts they changed), jaen_gpu and jaen_gpu_d "
                        "(tiers c, h and d through tools/study/gpu_evidence.sh), decisive_gpu and decisive_gpu_d "
                        "(the decisive split's tiers c, i, h and d on a GPU, waves 4-6); default: reports/EVIDENCE_jaen.json, EVIDENCE_enja.json, "
                        "EVIDENCE_jaen_gpu.json, EVIDENCE_jaen_gpu_d.json, DECISIVE_jaen.json, "
                        "DECISIVE_jaen_2seeds.json, DECISIVE_jaen_tuned.json, DECISIVE_jaen_inxl.json, "
                        "DECISIVE_jaen_gpu.json and DECISIVE_jaen_gpu_d.json (a missing file is left out)")
    p.add_argument("--progress", action="append", default=[], metavar="ARCHIVE:TIERS[:SEEDS[:SYSTEMS]]",
                   help="list, under 'What is missing', each tier's main-stage jobs that ARCHIVE does not hold "
                        "finished yet (TIERS comma-separated, e.g. reports/decisive_jaen:c,i,d,h; SEEDS: the "
                        "tiers' own seeds unless given, e.g. reports/decisive_jaen_tuned:e:1,2,3,4,5,6,7,8; "
                        "SYSTEMS: only these of the tiers' systems, e.g. reports/decisive_jaen:c:3,4:exgre,refsr); "
                        "their rows read (partial) while any of these jobs is left")
    p.add_argument("--third-look", default=THIRD_LOOK, metavar="JSON",
                   help="the third look's report (python3 -m onmt_xl.experiments.xlpos_report; default "
                        f"{THIRD_LOOK}, left out while missing): its primary and every look's p Holm-corrected over "
                        "the three looks open the report")
    p.add_argument("--report", default="reports/PAPERS.md", help="Markdown to write, its .json beside it")
    p.add_argument("--heads", type=int, default=4, help="attention heads of the study's models (H of the τ sweep; "
                   "the enja preset's 4)")
    p.set_defaults(func=run_papers)


#: the third look's report (reports/PREREG_xlpos.md), read for the opening paragraph where it exists
THIRD_LOOK = "reports/DECISIVE_jaen_xlpos.json"
#: in the order the report lists them (tools/study/papers_report.sh's order), whatever order --study names them in
DEFAULT_STUDIES = {"jaen": "reports/EVIDENCE_jaen.json", "enja": "reports/EVIDENCE_enja.json",
                   "jaen_gpu": "reports/EVIDENCE_jaen_gpu.json", "jaen_gpu_d": "reports/EVIDENCE_jaen_gpu_d.json",
                   "decisive": "reports/DECISIVE_jaen.json", BEFORE_FEWSEED: "reports/DECISIVE_jaen_2seeds.json",
                   "decisive_tuned": "reports/DECISIVE_jaen_tuned.json",
                   "decisive_inxl": "reports/DECISIVE_jaen_inxl.json",
                   "decisive_gpu": "reports/DECISIVE_jaen_gpu.json",
                   "decisive_gpu_d": "reports/DECISIVE_jaen_gpu_d.json"}


def study_paths(values: Sequence[str]) -> Dict[str, Path]:
    from onmt_xl.core.errors import XLUsageError

    paths = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or name not in DEFAULT_STUDIES or not path:
            raise XLUsageError(None, None, f"--study {v!r}: expected NAME=JSON with NAME one of "
                               f"{', '.join(DEFAULT_STUDIES)}")
        paths[name] = Path(path)
    return paths or {k: Path(v) for k, v in DEFAULT_STUDIES.items()}


def run_papers(args) -> int:
    from onmt_xl.core.errors import XLUsageError

    paths = study_paths(args.study)
    if not any(p.exists() for p in paths.values()):
        raise XLUsageError(None, None, "no evidence report found: " + ", ".join(map(str, paths.values())))
    progress = [row for spec in args.progress for row in tier_progress(spec)]  # refused before anything is written
    write(paths, Path(args.report), args.heads, progress, Path(args.third_look))
    print(Path(args.report).read_text(encoding="utf-8"))
    return 0
