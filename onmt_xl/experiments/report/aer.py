"""Section 5 of the report: the AER of the decoder's cross-attention, beside chance-level links."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.report.format import fmt

INTRO = [
    "## 5. Attention alignment quality (Ding et al. 2020 Tab. 3)", "",
    "Alignments read from the decoder's cross-attention, penultimate layer, averaged over heads "
    "(`alignment_layer` = penultimate, `alignment_heads` 0, set on a copy of the checkpoint; `onmt_translate "
    "-report_align -gold_align` with the reference as `-tgt`): each target word is linked to its most attended source "
    "word. *gold*: the 582 KFTT pairs of `shared/data/gold` (Kyoto Wikipedia: a different domain from the training "
    "data, many unknown words); *eflomal*: the test set against its own eflomal grow-diag-final-and links (a noisy "
    "reference).", "",
    "| system | AER (gold) | P | R | AER (eflomal, test) | P | R |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]


def aer(res: Dict[str, Any], jobs: Sequence[Job]) -> List[str]:
    """One row per job of the ``aer`` experiment, the chance rows and what the models have to align."""
    md = list(INTRO)
    for j in jobs:
        if "aer" in j.experiments:
            v = res["jobs"].get(j.name, {}).get("variants", {})
            md.append(_row(j.name, v.get("gold_align", {}), v.get("test_align", {})))
    refs = res.get("aer_references", {})
    if refs:
        g, t = refs.get("gold_align", {}), refs.get("test_align", {})
        md += [_row(f"*chance: {name}*", g.get(name, {}), t.get(name, {})) for name in ("random", "diagonal")]
        md += ["", _chance_note(g, t)]
    md.append("")
    return md


def _row(label: str, g: Dict[str, Any], t: Dict[str, Any]) -> str:
    """AER, precision and recall against the gold links (``g``) and the test set's eflomal links (``t``)."""
    return (f"| {label} | {fmt(g.get('aer'), '.4f')} | {fmt(g.get('precision'), '.4f')} | "
            f"{fmt(g.get('recall'), '.4f')} | {fmt(t.get('aer'), '.4f')} | {fmt(t.get('precision'), '.4f')} | "
            f"{fmt(t.get('recall'), '.4f')} |")


def _chance_note(g: Dict[str, Any], t: Dict[str, Any]) -> str:
    """What the chance rows are, and per reference set the share of unknown tokens and the sentence length."""
    return ("*chance* rows: links with no model, one per target word as attention gives, to a uniformly random "
            "source word (seeded) or to the diagonal source word ⌊(j + ½)·n/m⌋. What the models have to align: "
            + "; ".join(f"{label}: {fmt(100 * r['src_oov'], '.1f') if 'src_oov' in r else '–'} % of source and "
                        f"{fmt(100 * r['tgt_oov'], '.1f') if 'tgt_oov' in r else '–'} % of target tokens outside the "
                        f"vocabularies, {r['src_words_per_sentence']:.1f} source words per sentence"
                        for label, r in (("gold", g), ("test", t)) if r) + ".")
