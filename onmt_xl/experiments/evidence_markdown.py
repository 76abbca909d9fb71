"""The convergence study's report as Markdown, rendered from :func:`onmt_xl.experiments.evidence_report.build_report`'s
data: the main table, the learning curves, each family of comparisons, what a better preorderer buys, the
oracle rows, the sweeps, the aligner's spread, the attention AER (Ding et al. 2020 Tab. 3) and what was left out.
Rendering only: every number is computed there."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from onmt_xl.experiments.paper_figures import DING_TAB3_ENDE, fig


def _fmt(cell: Optional[Dict[str, Any]], digits: int = 2) -> str:
    if not cell:
        return "–"
    sd = cell["sd"]
    return f"{cell['mean']:.{digits}f} ± {sd:.{digits}f}" if sd is not None else f"{cell['mean']:.{digits}f} (1 run)"


def _delta(c: Dict[str, Any]) -> str:
    return f"{c['delta']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]"


def _seeds(seeds: Sequence[int]) -> str:
    return ",".join(map(str, seeds))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "---") -> List[str]:
    """A Markdown table: the header, its rule (``align`` per column) and the rows."""
    return (["| " + " | ".join(header) + " |", "|" + f" {align} |" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in rows])


def _systems_section(report: Dict[str, Any]) -> List[str]:
    n_test, n_novel, n_seen = report["test_sentences"], report["novel_sentences"], report["seen_source_sentences"]
    rows = []
    for system, row in report["systems"].items():
        params = f"{row['params']:,} ({row['buffers'] or 0:,})" if row["params"] is not None else "–"
        rows.append([system, _seeds(row["seeds"]), "; ".join(row.get("precision") or ["?"]), _fmt(row["test_bleu"]),
                     _fmt(row["test_chrf"]), _fmt(row["novel_bleu"]), _fmt(row["valid_bleu"]),
                     _fmt(row["oracle_bleu"]), params])
    return [f"## {report['workdir']}: test BLEU at convergence", "",
            f"Mean ± sd over seeds; {n_test} test pairs, of which {n_novel} have a reference that is not a training "
            f"target (novel) and {n_seen} have a source that is a training source verbatim (whitespace-normalised; "
            "novelty is by the reference only, so such a pair can count as novel); "
            f"{report['valid_sentences']} validation pairs. Parameters: trainable (buffers apart). "
            "Training precision: what `-xl_cpu_precision auto` chose on the machines each run trained on (bf16 only "
            "where the CPU computes it natively; weights fp32 throughout), in brackets the CPU's bf16 units (its "
            "vector ISA where it had none; CPUs that differ here run other bf16 kernels, so a run's last digits "
            "differ between them), and the dropout masks it drew "
            "(`-xl_cpu_kernels`: fast or PyTorch's stock stream), each in order for a run resumed on another machine "
            "or version; a run trained on a GPU (fp32, stock masks) names it.", "",
            *_table(["system", "seeds", "training precision", "test BLEU", "test chrF", "novel BLEU", "valid BLEU",
                     "oracle-XL test BLEU", "params (buffers)"], rows)]


def _curve_section(report: Dict[str, Any]) -> List[str]:
    curves = report.get("curves") or {}
    if not curves:
        return []
    names = list(curves)
    rows = []
    for step in sorted({r["step"] for points in curves.values() for r in points}):
        cells = [f"{step:,}"]
        for name in names:
            row = next((r for r in curves[name] if r["step"] == step), None)
            ppl = f" / {row['valid_ppl']:.2f}" if row and "valid_ppl" in row else ""
            cells.append(f"{row['bleu']:.2f}{ppl}" if row else "–")
        rows.append(cells)
    plot = f"; plotted in `{report['curve_plot']}`" if report.get("curve_plot") else ""
    return ["", f"Learning curves (validation pairs, beam 5; BLEU / perplexity{plot}). Step rule: the "
            "first step no later point beats by more than 0.5 BLEU, 2,000 steps seen past it: "
            + (f"**{report['plateau_step']:,}**." if report.get("plateau_step") else "not reached."), "",
            *_table(["step", *names], rows, "---:")]


def _comparisons_section(report: Dict[str, Any]) -> List[str]:
    """Each family's comparisons with the baseline, the encoder-free sanity check, the verdict in plain words."""
    boot, lines = report["bootstrap"], []
    families = list(report.get("family_members") or {}) or sorted({c["family"] for c in report["comparisons"].values()})
    for family in families:
        members = {s: c for s, c in report["comparisons"].items() if c["family"] == family}
        if not members:
            continue
        # members declared with --families whose runs this report leaves out: its Holm correction is not final yet
        reported = (report.get("family_members") or {}).get(family, [])
        absent = [s for s in (report.get("families_declared") or {}).get(family, []) if s not in reported]
        lines += ["", f"Against {report['baseline']}, {family} (test BLEU; seed-pooled paired bootstrap, "
                  f"{boot['samples']} samples, seed {boot['seed']}; "
                  + (f"Holm over these {len(members)} comparisons; " if len(members) > 1 else "one comparison; ")
                  + f"α = {report['alpha']})"
                  + (f"; declared with {', '.join(absent)} too, whose runs are not in this report: corrected over "
                     "the whole family once they are" if absent else "") + ":", "",
                  *_table(["system", "Δ BLEU [95 % CI]", "p", "p (Holm)", "verdict"],
                          [[s, _delta(c), f"{c['p']:.3f}", f"{c['p_holm']:.3f}", c["verdict"]]
                           for s, c in members.items()])]
    free = report["comparisons"].get("encoder_free")
    if free:
        outcome = {"hurts": "holds", "helps": "reversed",
                   "no evidence either way": "not shown (no detectable difference)"}[free["verdict"]]
        rows = report["systems"]
        base, enc = rows.get(report["baseline"], {}), rows.get("encoder_free", {})
        # the test pairs include references that are training targets: the novel ones and validation say more
        elsewhere = "; ".join(f"{label} {_fmt(enc.get(key))} against {_fmt(base.get(key))}"
                              for key, label in (("novel_bleu", "novel-reference test BLEU"),
                                                 ("valid_bleu", "validation BLEU")) if enc.get(key) and base.get(key))
        lines += ["", "Sanity check (Ding et al. 2020, Tab. 4: the full Transformer beats the encoder-free one): "
                  f"{outcome}: encoder-free against {report['baseline']} {_delta(free)}, corrected p = "
                  f"{free['p_holm']:.3f}." + (f" Untested, for comparison: {elsewhere}." if elsewhere else "")]
    return lines + plain_words(report) + _decisive_section(report) + _pairs_section(report) + _plateau_section(report)


def _decisive_section(report: Dict[str, Any]) -> List[str]:
    """The preregistered reading of the decisive design (reports/PREREG_decisive.md, or the addendum it names)."""
    d = report.get("decisive")
    if not d or not d["rows"]:
        return []
    carve = d["carve"]
    lines = ["", f"## The decisive design (`{d.get('prereg', 'reports/PREREG_decisive.md')}`)", "",
             f"Test split: the corpus' {carve['test_given']} test pairs and {carve['carved']} pairs carved from "
             f"training by the preregistered rule ({carve['train_after']:,} training pairs left of "
             f"{carve['train_before']:,}). The decision uses the 95 % interval above; the half-width the design was "
             f"sized for is {d['target_half_width']:.2f} BLEU.", ""]
    pending = d.get("extension_pending")
    interim = f"interim (k = {d.get('seeds')}): " if pending else ""
    rows = []
    for system, r in d["rows"].items():
        c = report["comparisons"][system]
        rows.append([system + (" (primary)" if r["primary"] else " (secondary: exploratory)"),
                     f"{c['system_runs']}; {c['baseline_runs']}", _delta(c), f"+{r['paper_gain']:.2f}",
                     f"{r['half_width']:.2f}" + ("" if r["target_met"] else " (above the target)"),
                     interim + "; ".join(r["decision"])])
    lines += _table(["system", "seeds (system; baseline)", "Δ BLEU [95 % CI]", "paper's gain", "half-width",
                     "decision"], rows)
    primary = next((r for r in d["rows"].values() if r["primary"]), None)
    if pending:
        extended = d["extended_seeds"]
        lines += ["", f"**Interim.** At k = {d['seeds']} the primary half-width is {primary['half_width']:.2f}, above "
                  f"the {d['target_half_width']:.2f} the design was sized for: the preregistered precision rule trains "
                  f"seeds {d['seeds'] + 1}–{extended} of both systems "
                  f"(`SEEDS={','.join(map(str, range(1, extended + 1)))}`), and the final analysis uses k = "
                  f"{extended}. The rule looks at the width only; the decision above is not the design's answer until "
                  "then."]
    elif primary is not None and not primary["target_met"]:
        lines += ["", f"At the final k = {d.get('seeds')} the primary half-width is {primary['half_width']:.2f}, "
                  f"{primary['half_width'] - d['target_half_width']:.2f} above the {d['target_half_width']:.2f} the "
                  "design was sized for: `tools/study/decisive_design.py` on this archive splits the width into its "
                  "sentence and seed parts."]
    plateau = d.get("plateau")
    if plateau:
        rule = (f"gives step {plateau['rule_step']:,}" if plateau["rule_step"] else
                f"is not met within the {plateau['last_step']:,} steps scored")
        late = "; ".join(f"{name} {g['gain']:+.2f} (to {g['to_step']:,})" for name, g in plateau["late_gain"].items())
        lines += ["", f"Plateau check (diagnostic only, as preregistered): on this split the step rule {rule}; the "
                  f"design keeps S = {plateau['steps']:,}"
                  + ("." if plateau["rule_step"] == plateau["steps"] else ", and this is a caveat.")
                  + (f" Validation BLEU gained after {plateau['steps']:,} steps: {late}." if late else "")]
    sizes = {"given": carve["test_given"], "carved": carve["carved"]}
    parts = [[system, name, f"{sizes[name]:,}",
              _delta(c), f"{c['p']:.3f}"] for system, r in d["rows"].items() for name, c in r["parts"].items()]
    lines += ["", "Descriptive only (not part of any decision): Δ on the corpus' own test pairs and on the carved "
              "pairs apart (the same bootstrap and seed):", "",
              *_table(["system", "part", "pairs", "Δ BLEU [95 % CI]", "p"], parts)]
    return lines


def _pairs_section(report: Dict[str, Any]) -> List[str]:
    """The orderings among systems the papers claim, "A scores above B", each measured where both have runs."""
    pairs = report.get("pairs") or {}
    if not pairs:
        return []
    boot = report["bootstrap"]
    return ["", "Orderings the papers claim among systems, \"A scores above B\" (Δ = A − B in test BLEU; seed-pooled "
            f"paired bootstrap, {boot['samples']} samples, seed {boot['seed']}; "
            + (f"Holm over these {len(pairs)} orderings, a family of their own; " if len(pairs) > 1 else
               "one ordering; ") + f"α = {report['alpha']}; `*_oracle`: trained and tested on oracle indices):", "",
            *_pairs_table(pairs)]


def _pairs_table(pairs: Dict[str, Dict[str, Any]]) -> List[str]:
    return _table(["A > B", "seeds (A; B)", "Δ BLEU [95 % CI]", "p", "p (Holm)", "verdict"],
                  [[name, f"{c['system_runs']}; {c['baseline_runs']}", _delta(c), f"{c['p']:.3f}",
                    f"{c['p_holm']:.3f}", {"helps": "A above B", "hurts": "B above A"}.get(c["verdict"], c["verdict"])]
                   for name, c in pairs.items()])


def _plateau_section(report: Dict[str, Any]) -> List[str]:
    """Each system trained on to its own plateau (``onmt-xl evidence --stage plateau``), and the orderings read
    against it, a family of their own."""
    lines = []
    for system, st in (report.get("plateaus") or {}).items():
        rule = (f"no later validation BLEU more than {st['tolerance']} above it, {st['window']:,} steps seen past it, "
                f"both seeds together; validation BLEU every {st['score_every']:,} steps, rounds of "
                f"{st['round']:,} steps, at most {st['cap']:,}")
        reached = ", ".join(f"`{name}` {steps:,}" for name, steps in st.get("reached", {}).items())
        head = (f"`{system}` trained on past its main runs' {st['from_step']:,} steps to its own plateau, seeds "
                f"{_seeds(st['seeds'])} (`{system}_plateau_sSEED`, the main runs' configuration and seeds; a "
                "deviation, `reports/PREREG_decisive_baselines.md`; "
                f"the study's step rule: {rule}): ")
        if st["status"] == "plateau":
            runs = st.get("runs") or {}
            head += (f"plateau at step {st['step']:,}, each seed translated with the average of its last checkpoints "
                     f"up to it: validation BLEU {_fmt(runs.get('valid_bleu'))}, test BLEU "
                     f"{_fmt(runs.get('test_bleu'))}"
                     + (f" ({'; '.join(runs['precision'])})" if runs.get("precision") else "") + ".")
        elif st["status"] == "cap":
            head += f"no plateau by the cap ({reached} steps); not translated."
        else:
            head += f"no plateau yet ({reached} steps so far)."
        lines += ["", head]
    pairs = report.get("plateau_pairs") or {}
    if pairs:
        lines += ["", "Orderings read against a system at its plateau (Δ = A − B in test BLEU, the same bootstrap; "
                  + (f"Holm over these {len(pairs)}, a family of their own" if len(pairs) > 1 else "one ordering, "
                     "a family of its own") + "; not part of any preregistered family):", "", *_pairs_table(pairs)]
    return lines


XL_VARIANTS = (("inxl", "InXL"), ("headxl", "HeadXL"), ("combination", "Combination"))


def plain_words(report: Dict[str, Any]) -> List[str]:
    """Whether XL PE (predicted indices) helps, and by how much: each XL variant's verdict, Δ and interval, the
    largest gain the intervals leave open, and which variants still have fewer seeds than the most-run system."""
    found = [(name, report["comparisons"][key]) for key, name in XL_VARIANTS if key in report["comparisons"]]
    if not found:
        return []
    helped = [name for name, c in found if c["verdict"] == "helps"]
    hurt = [name for name, c in found if c["verdict"] == "hurts"]
    if not helped and not hurt:
        verdict = ("neither helps nor hurts detectably" if len(found) == 1
                   else "neither helps nor hurts detectably in any of its forms")
    else:
        verdict = "; ".join(part for part in (
            helped and f"helps as {' and '.join(helped)}", hurt and f"hurts as {' and '.join(hurt)}",
            len(helped) + len(hurt) < len(found) and "no detectable difference otherwise") if part)
    each = "; ".join(f"{name} {c['delta']:+.2f} (95 % interval {c['low']:+.2f} to {c['high']:+.2f}, corrected p = "
                     f"{c['p_holm']:.3f}, {c['system_runs']} seeds)" for name, c in found)
    top = max(c["high"] for _, c in found)
    planned = max([c["baseline_runs"] for _, c in found] + [c["system_runs"] for _, c in found])
    short = [name for name, c in found if c["system_runs"] < planned]
    intervals = "The 95 % intervals reach" if len(found) > 1 else "The 95 % interval reaches"
    bound = (f"{intervals} no higher than {top:+.2f} BLEU: a larger gain is unlikely at this scale." if top > 0
             else f"{intervals} no higher than {top:+.2f} BLEU: below zero.")
    words = (f"In plain words: on this data, with the preorderer's predicted indices, XL PE {verdict}. Test BLEU "
             f"against the baseline ({found[0][1]['baseline_runs']} seeds): {each}. {bound}"
             + (f" Interim: {' and '.join(short)} {'has' if len(short) == 1 else 'have'} fewer seeds than the "
                f"{planned} of the others." if short else ""))
    return ["", words]


def _lever_section(report: Dict[str, Any]) -> List[str]:
    """Combination with preorderers of other quality, and with oracle indices, against the study's preorderer."""
    quality = [q for q in report.get("preorder_quality", []) if q["test_bleu"]]
    if not quality:
        return []
    rows = []
    for q in quality:
        vs = q.get("vs_all")
        per_tau = f"{vs['bleu_per_0_01_tau']:+.2f}" if vs and "bleu_per_0_01_tau" in vs else "–"
        rows.append([q["preorderer"], *("–" if t is None else f"{t:.4f}" for t in (q["tune_tau"], q["test_tau"])),
                     _seeds(q["seeds"]), _fmt(q["test_bleu"]),
                     *((_delta(vs), f"{vs['p_holm']:.3f}", per_tau) if vs else ("–", "–", "–"))])
    return ["", "Combination with preorderers of different quality (Kendall tau on the tuning split and on "
            "test; the oracle row translates with the BTG oracle of the test pairs' eflomal links):", "",
            *_table(["preorderer", "tau (tune)", "tau (test)", "seeds", "test BLEU", "Δ BLEU vs all pairs [95 % CI]",
                     "p (Holm)", "Δ BLEU per +0.01 test tau"], rows),
            "", "Δ against Combination with the study's preorderer (all pairs): the same seed-pooled bootstrap "
            "and seed; Holm over these rows as a family of their own (what a better or worse preorderer buys). "
            "The oracle row is the same models given the oracle's indices: the BLEU a perfect preorderer "
            "would buy them without retraining."]


def _oracle_section(report: Dict[str, Any]) -> List[str]:
    oracle = report.get("oracle_rows") or []
    if not oracle:
        return []
    rows = []
    for row in oracle:
        vs = row.get("vs_predicted")
        rows.append([row["system"], _seeds(row["seeds"]), _fmt(row["predicted"]), _fmt(row["oracle_at_test"]),
                     _fmt(row["oracle_trained"]), *((_delta(vs), f"{vs['p_holm']:.3f}") if vs else ("–", "–"))])
    return ["", "Trained and tested on oracle XL indices (the BTG oracle of eflomal links, on the test side too: "
            "an upper bound), against the same system on predicted indices; Holm over these rows:", "",
            *_table(["system", "seeds", "predicted indices", "oracle at test only", "oracle in training and test",
                     "Δ BLEU vs predicted [95 % CI]", "p (Holm)"], rows)]


def _sweeps_section(report: Dict[str, Any]) -> List[str]:
    lines = []
    for sweep in report.get("sweeps") or []:
        if all(pt["default"] for pt in sweep["points"]):  # nothing swept yet
            continue
        rows = []
        for pt in sweep["points"]:
            vs = pt.get("vs_default")
            rest = (_delta(vs), f"{vs['p_holm']:.3f}") if vs else ("(default)" if pt["default"] else "–", "–")
            rows.append([pt["setting"], pt["job"], f"{pt['valid_bleu']:.2f}", f"{pt['test_bleu']:.2f}", *rest,
                         pt.get("training") or "?"])
        lines += ["", f"{sweep['title']} (one seed; Δ test BLEU against the default setting, paired bootstrap over "
                  "sentences, Holm over the sweep; training precision as in the systems' table):", "",
                  *_table([sweep["setting"], "job", "valid BLEU", "test BLEU", "Δ vs default [95 % CI]", "p (Holm)",
                           "training precision"], rows)]
    return lines


def _reordering_section(report: Dict[str, Any]) -> List[str]:
    """Each XL variant against the baseline on the more and the less reordered half of the test pairs."""
    split = report.get("by_reordering")
    if not split or not split["rows"]:
        return []
    more, less = split["halves"]["more"], split["halves"]["less"]
    names = {**dict(XL_VARIANTS), "combination_oracle_vs_predicted": "Combination, oracle vs predicted indices"}
    rows = [[names.get(r["system"], r["system"]), *(x for h in ("more", "less")
                                                     for x in (_delta(r[h]), f"{r[h]['p_holm']:.3f}", r[h]["verdict"]))]
            for r in split["rows"]]
    return ["", f"Where a gain would be: the test pairs split at the median of their monotone Kendall tau (source "
            f"order against the target order of the pair's eflomal links; median {split['median_tau']:.3f}): the "
            f"more reordered half ({more['sentences']} pairs, mean tau {more['mean_tau']:.3f}) and the rest "
            f"({less['sentences']} pairs, mean tau {less['mean_tau']:.3f}). Δ test BLEU against the baseline on each "
            f"half (the oracle row: against the same models with predicted indices); the same seed-pooled bootstrap "
            f"and seed; Holm over every cell of this table:", "",
            *_table(["system", "Δ more reordered [95 % CI]", "p (Holm)", "verdict", "Δ less reordered [95 % CI]",
                     "p (Holm)", "verdict"], rows)]


#: Ding et al. 2020 Tab. 3's rows as the paper names them
DING_TAB3_ROWS = (("Transformer BIG", "baseline"), ("+ InXL", "inxl"), ("+ HeadXL", "headxl"),
                  ("+ Combination", "combination"))


def _pct(cell: Optional[Dict[str, Any]]) -> str:
    """A mean ± sd cell of fractions, in %."""
    return _fmt({"mean": 100 * cell["mean"], "sd": None if cell["sd"] is None else 100 * cell["sd"]}) if cell else "–"


def _aer_sections(report: Dict[str, Any]) -> List[str]:
    """Ding et al. 2020 Tab. 3 against the gold links, then against the test pairs' eflomal links."""
    return [line for key in ("attention_aer", "attention_aer_test") if report.get(key)
            for line in _aer_section(report, report[key])]


def _aer_reference_text(aer: Dict[str, Any], unknown: str) -> str:
    if aer.get("reference", "gold_align") == "gold_align":
        return (f"the {aer['sentences']} gold pairs of KFTT (Kyoto Wikipedia: another domain than the training data"
                + (f"; {unknown} are outside the vocabularies" if unknown else "") + ")")
    return (f"the eflomal grow-diag-final-and links of the {aer['sentences']} test pairs (in domain, but a noisy "
            "reference: the same aligner's links trained the preorderer that gives the XL systems their positions)")


def _aer_section(report: Dict[str, Any], aer: Dict[str, Any]) -> List[str]:
    """One reference's Tab. 3: AER, P, R per system and chance, Δ AER against the baseline."""
    oov = aer.get("unknown_tokens") or {}
    unknown = " and ".join(f"{100 * oov[side]:.1f} % of the {label} tokens" for side, label in (("src", "source"),
                                                                                              ("tgt", "target"))
                           if oov.get(side) is not None)
    rows = [[system, _seeds(row["seeds"]), _pct(row["aer"]), _pct(row["precision"]), _pct(row["recall"])]
            for system, row in aer["systems"].items()]
    rows += [[f"*chance: {name}*", "–", *(f"{100 * c[k]:.2f}" for k in ("aer", "precision", "recall"))]
             for name, c in aer.get("chance", {}).items()]
    paper = ", ".join(f"{name} {fig(DING_TAB3_ENDE[system][0])}" for name, system in DING_TAB3_ROWS)
    gold = aer.get("reference", "gold_align") == "gold_align"
    lines = ["",
             "## Attention alignment (Ding et al. 2020 Tab. 3)" + ("" if gold else ": the test pairs' eflomal links"),
             "",
             "Alignments read from the decoder's cross-attention of the model each run translates with (the "
             "average of its last checkpoints; penultimate layer, averaged over heads; `onmt_translate "
             "-report_align -gold_align` with the reference as `-tgt`, "
             "`onmt-xl evidence --stage aer`): each target word is linked to its most attended source word, scored "
             f"against {_aer_reference_text(aer, unknown)}. AER, "
             "precision and recall (Och & Ney 2003) in %, mean ± sd over seeds; the chance rows are links with no "
             "model, one per target word, to a uniformly random source word (seeded) or to the diagonal one. "
             f"The paper's claim, lower AER with XL PE (Tab. 3, En-De, AER %): {paper}.", "",
             *_table(["system", "seeds", "AER %", "P %", "R %"], rows)]
    diagonal = (aer.get("chance") or {}).get("diagonal")
    if diagonal:
        worse = [system for system, row in aer["systems"].items() if row["aer"]["mean"] >= diagonal["aer"]]
        if worse:
            lines += ["", f"No better than the diagonal links (mean AER at or above their {100 * diagonal['aer']:.2f} "
                      f"%, links that need no model): {', '.join(worse)}."]
    comps = aer.get("comparisons") or {}
    if comps:
        boot = report["bootstrap"]
        lines += ["", f"Against {report['baseline']} (Δ AER in percentage points, below 0: better alignments; paired "
                  "bootstrap over the sentences with the seed runs resampled, AER recomputed from each sample's "
                  f"summed link counts, {boot['samples']} samples, seed {boot['seed']}; "
                  + (f"Holm over these {len(comps)} comparisons" if len(comps) > 1 else "one comparison")
                  + f", a family of their own; α = {report['alpha']}):", "",
                  *_table(["system", "Δ AER [95 % CI]", "p", "p (Holm)", "verdict"],
                          [[s, f"{100 * c['delta']:+.2f} [{100 * c['low']:+.2f}, {100 * c['high']:+.2f}]",
                            f"{c['p']:.3f}", f"{c['p_holm']:.3f}", c["verdict"]] for s, c in comps.items()])]
    return lines


def _spread_section(report: Dict[str, Any]) -> List[str]:
    spread = report.get("preorder_spread") or {}
    if not spread:
        return []
    runs = len(next(iter(spread.values()))["values"])
    return ["", f"The preorderer's tau over {runs} eflomal runs (each: align again, train, score against that "
            "run's links; tools/study/preorder_spread.py): "
            + "; ".join(f"{k.split('_')[0]} {_fmt(v, 4)}" for k, v in spread.items()) + "."]


def markdown(report: Dict[str, Any]) -> str:
    """The report as Markdown: the main table, the learning curves, the comparisons, the same on the more and the
    less reordered test pairs, what a better preorderer buys, the oracle rows, the sweeps, the aligner's spread and
    what was left out."""
    lines = [*_systems_section(report), *_curve_section(report), *_comparisons_section(report),
             *_reordering_section(report), *_lever_section(report), *_oracle_section(report),
             *_sweeps_section(report), *_spread_section(report), *_aer_sections(report)]
    if report["left_out"]:
        lines += ["", "Left out (resumed with another data order): " + ", ".join(report["left_out"])]
    return "\n".join(lines) + "\n"
