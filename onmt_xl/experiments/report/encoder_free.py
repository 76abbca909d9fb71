"""Section 6 of the report: the encoder-free Transformer with no, absolute and InXL positions."""

from __future__ import annotations

from typing import Any, Dict, List

from onmt_xl.experiments.report.format import bleu, fmt

#: (job, the row's label), the baseline with its encoder last for comparison
ROWS = (("encoder_free_none", "none"), ("encoder_free", "absolute"), ("encoder_free_inxl", "InXL"),
        ("baseline", "*absolute, with the encoder (baseline)*"))


def encoder_free(res: Dict[str, Any]) -> List[str]:
    """One row per positional encoding, and a note where the encoder-free model beats the full Transformer."""
    md = ["## 6. Encoder-free Transformer (Ding et al. 2020 Tab. 4)", "",
          "Source embeddings straight to the decoder. Relative PE has no place here (no source self-attention).", "",
          "| PE | params | BLEU | chrF | valid BLEU |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, label in ROWS:
        e = res["jobs"].get(name)
        t = e["variants"].get("test", {}) if e else {}
        params = f"{e['parameters']:,}" if e else "not run"
        md.append(f"| {label} | {params} | {fmt(t.get('bleu'))} | {fmt(t.get('chrf'))} | "
                  f"{fmt(bleu(res, name, 'valid'))} |")
    md.append("")
    free, full = bleu(res, "encoder_free"), bleu(res, "baseline")
    if free is not None and full is not None and free > full:
        md += [f"Here the encoder-free model beats the Transformer with its encoder ({fmt(free)} against {fmt(full)}), "
               "the reverse of Ding et al.'s Tab. 4. Every model trains the same number of steps, short of convergence "
               "at this budget, and the smaller model gets further in them (validation perplexity: each job's "
               "train.log).", ""]
    return md
