"""Scores and significance of ``onmt-xl experiments`` (read from its work directory).

BLEU and chrF are sacrebleu's; significance against the baseline is sacrebleu's paired bootstrap
resampling (1,000 samples) and the sign test of Collins et al. (2005) that the papers use: for each
sentence, does putting the system's translation in place of the baseline's raise or lower corpus BLEU?
The counts of raises and drops go to a two-sided binomial test (ties left out). Attention alignments are
scored by AER against a gold set and against the test set's eflomal links, beside chance-level links.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from onmt_xl.experiments.plan import Job


def _lines(path: Path) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


# --- significance ------------------------------------------------------------------------------------


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test p-value of ``k`` successes in ``n`` trials at p = 1/2."""
    if n == 0:
        return 1.0
    probs = [math.comb(n, i) / 2.0**n for i in range(n + 1)]
    observed = probs[k]
    return min(1.0, sum(p for p in probs if p <= observed * (1 + 1e-9)))


@dataclass
class SignTest:
    better: int
    worse: int
    ties: int
    p_value: float


def sign_test(system: Sequence[str], baseline: Sequence[str], refs: Sequence[str], tokenize: str = "13a") -> SignTest:
    """Collins et al. (2005) sign test on corpus BLEU (sacrebleu's ``tokenize``): sentence ``i`` counts as better
    (worse) when replacing the baseline's translation of ``i`` by the system's raises (lowers) corpus BLEU."""
    import numpy as np
    from sacrebleu.metrics import BLEU

    bleu = BLEU(tokenize=tokenize, force=True)  # no warning on tokenized text (--tokenize none); the same score
    base = np.asarray(bleu._extract_corpus_statistics(list(baseline), [list(refs)]), dtype=float)
    sys_ = np.asarray(bleu._extract_corpus_statistics(list(system), [list(refs)]), dtype=float)
    total = base.sum(axis=0)
    ref_score = bleu._compute_score_from_stats(total.tolist()).score
    better = worse = 0
    for b, s in zip(base, sys_):
        if np.array_equal(b, s):
            continue
        score = bleu._compute_score_from_stats((total - b + s).tolist()).score
        better += score > ref_score + 1e-12
        worse += score < ref_score - 1e-12
    ties = len(base) - better - worse
    return SignTest(better, worse, ties, binomial_two_sided(better, better + worse))


def paired_bootstrap(systems: Dict[str, List[str]], baseline: List[str], refs: List[str], n_samples: int = 1000,
                     seed: int = 12345, tokenize: str = "13a") -> Dict[str, float]:
    """sacrebleu's paired bootstrap resampling p-value of each system's BLEU (sacrebleu's ``tokenize``) against
    ``baseline`` (on the text given: detokenized output and raw references from ``onmt-xl pipeline``, see
    :func:`text_scores`); 1.0 for a system whose BLEU equals the baseline's."""
    if not systems:
        return {}
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    named = [("baseline", baseline)] + list(systems.items())
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)  # PairedTest takes its seed from here (its numpy Generator)
    try:
        bleu = BLEU(tokenize=tokenize, force=True)  # force: no warning on tokenized text
        test = PairedTest(named, {"BLEU": bleu}, references=[refs], test_type="bs", n_samples=n_samples)
        _, scores = test()
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous
    base_score = scores["BLEU"][0].score
    # A system whose BLEU equals the baseline's gets p = 1: an observed difference of zero is no evidence of any.
    # sacrebleu counts resampled differences strictly greater than the observed one, plus one, so where every
    # resample ties too (identical translations, or both BLEU 0 on every resample) it returns its floor 1/(n+1).
    return {name: 1.0 if res.score == base_score else res.p_value
            for (name, _), res in zip(named[1:], scores["BLEU"][1:])}


# --- collecting ------------------------------------------------------------------------------------


def _job_info(workdir: Path, job: Job) -> Optional[Dict[str, Any]]:
    done = workdir / "jobs" / job.name / "done.json"
    return json.loads(done.read_text()) if done.exists() else None


def _hyp(workdir: Path, job: Job, variant: str) -> Optional[List[str]]:
    path = workdir / "jobs" / job.name / f"hyp.{variant}"
    return _lines(path) if path.exists() else None


def attention_links(hyp_lines: Sequence[str]) -> List[set]:
    """The links ``onmt_translate -report_align`` appends after `` ||| `` (0-based, source first), per line."""
    links = []
    for line in hyp_lines:
        _, _, text = line.partition(" ||| ")
        links.append({(int(a), int(b)) for a, b in (tok.split("-") for tok in text.split())})
    return links


def attention_aer(hyp_lines: Sequence[str], sure, possible):
    """AER of the alignments ``onmt_translate -report_align -gold_align`` appends after `` ||| ``."""
    from onmt_xl.core.align.aer import score_alignments

    return score_alignments(attention_links(hyp_lines), sure, possible)


#: per-sentence link counts of Och & Ney's AER (:class:`onmt_xl.core.align.aer.AERScores`), in this order:
#: |A|, |S|, |A & S|, |A & P|
AER_COUNTS = ("n_hyp", "n_sure", "n_hyp_sure", "n_hyp_possible")


def aer_counts(hyp_lines: Sequence[str], sure, possible):
    """Per sentence the link counts :data:`AER_COUNTS` of the attention links against the gold ones, ``(sentences,
    4)`` int64: summed over any sample of sentences they give that sample's corpus AER (:func:`aer_from_counts`)."""
    import numpy as np

    from onmt_xl.core.align.aer import score_alignments

    links = attention_links(hyp_lines)
    if not (len(links) == len(sure) == len(possible)):
        raise ValueError(f"sentence counts differ: {len(links)} hypothesis, {len(sure)} sure, {len(possible)} possible")
    rows = []
    for a, s, p in zip(links, sure, possible):
        sc = score_alignments([a], [s], [p])
        rows.append([getattr(sc, name) for name in AER_COUNTS])
    return np.asarray(rows, dtype=np.int64).reshape(len(links), len(AER_COUNTS))


def aer_from_counts(counts):
    """``(aer, precision, recall)`` of summed :data:`AER_COUNTS`, ``(..., 4)``; each ``(...)`` (nan where a
    denominator is 0): AER = 1 - (|A & S| + |A & P|) / (|A| + |S|), P = |A & P| / |A|, R = |A & S| / |S|."""
    import numpy as np

    c = np.asarray(counts, dtype=float)
    a, s, a_s, a_p = c[..., 0], c[..., 1], c[..., 2], c[..., 3]
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - (a_s + a_p) / (a + s), a_p / a, a_s / s


def aer_bootstrap(system: Sequence[Any], baseline: Sequence[Any], n_samples: int = 1000, seed: int = 12345,
                  confidence: float = 0.95):
    """Δ AER of ``system`` against ``baseline`` (each a list of per-sentence counts :func:`aer_counts`,
    ``(sentences, 4)``, one per seed run, the same gold sentences), both averaged over their runs, with the
    seed-pooled paired bootstrap of :func:`onmt_xl.experiments.stats.pooled_bootstrap`; AER is a ratio of link
    counts, so each replicate sums the counts of its sentences and recomputes it. Returns
    :class:`onmt_xl.experiments.stats.Comparison` (Δ < 0: the system aligns better)."""
    import numpy as np

    from onmt_xl.experiments.stats import pooled_bootstrap

    if not system or not baseline:
        raise ValueError("each side needs at least one seed run")
    return pooled_bootstrap(np.stack(system).astype(np.int64), np.stack(baseline).astype(np.int64),
                            lambda summed: aer_from_counts(summed)[0], n_samples, seed, confidence)


def collect(workdir: Path, jobs: Sequence[Job]) -> Dict[str, Any]:
    """Everything measured so far: per job its info, and per variant BLEU/chrF/timing (and AER, Sim).
    Also written to ``workdir/results.json``."""
    workdir = Path(workdir)
    refs = {"test": _lines(workdir / "data" / "test.ref")}
    out: Dict[str, Any] = {"jobs": {}, "scores": scores_note(tokenization_of(workdir)), **run_records(workdir)}
    for job in jobs:
        info = _job_info(workdir, job)
        if info is not None:
            out["jobs"][job.name] = _job_entry(workdir, job, info, refs, seen_test_lines(out))
    _significance(workdir, jobs, out, refs)
    if any("aer" in j.experiments for j in jobs):
        out["aer_references"] = aer_references(workdir)
    (workdir / "results.json").write_text(json.dumps(out, indent=2))
    return out


def run_records(workdir: Path) -> Dict[str, Any]:
    """What the stages recorded for the results, where they did: ``preorderer`` (``preorderer.json``),
    ``monotone_check`` (``monotone_check.json``, demo and pipeline) and ``overlap`` (``data/overlap.json``: the test
    and validation sources that are training sources verbatim, :func:`onmt_xl.experiments.stages.source_overlap`)."""
    from onmt_xl.experiments.stages import OVERLAP_FILE

    out: Dict[str, Any] = {}
    workdir = Path(workdir)
    for key, path in (("preorderer", workdir / "preorderer.json"), ("monotone_check", workdir / "monotone_check.json"),
                      ("overlap", workdir / "data" / OVERLAP_FILE)):
        if path.exists():
            out[key] = json.loads(path.read_text(encoding="utf-8"))
    return out


def _job_entry(workdir: Path, job: Job, info: Dict[str, Any], refs: Dict[str, List[str]],
               seen: Sequence[int] = ()) -> Dict[str, Any]:
    """A finished job's ``done.json`` info with the scores of each of its variants translated so far (``seen``: the
    test lines whose source is a training source, :func:`seen_test_lines`)."""
    jd = workdir / "jobs" / job.name
    timing = json.loads((jd / "translate_seconds.json").read_text()) if (jd / "translate_seconds.json").exists() else {}
    entry = dict(info, variants={})
    for variant in job.variants:
        if variant == "sim":
            if (jd / "sim.json").exists():
                entry["sim"] = json.loads((jd / "sim.json").read_text())
            continue
        hyp = _hyp(workdir, job, variant)
        if hyp is None:
            continue
        v: Dict[str, Any] = {"translate_seconds": timing.get(variant)}
        if variant in ("gold_align", "test_align"):
            v.update(_aer(workdir, variant, hyp))
        else:
            v.update(_bleu_chrf(workdir, job, variant, hyp, refs, seen if variant == "test" else ()))
        entry["variants"][variant] = v
    return entry


def tokenization_of(workdir: Path):
    """The tokenization ``onmt-xl pipeline`` gave the work directory's raw text (``tok/tokenization.json``), or
    None: its text was tokenized before it came in."""
    from onmt_xl.experiments.tokenization import read_record

    found = read_record(Path(workdir) / "tok" / "tokenization.json")
    return found if found is not None and found.active else None


def bleu_tokenizer_of(tokenization) -> str:
    """sacrebleu's tokenizer of the scores: the one recorded with ``tokenization`` (raw text), else ``13a``."""
    return "13a" if tokenization is None else tokenization.bleu_tokenize


def text_scores(hyp: List[str], ref: List[str], tokenization=None, path: Optional[Path] = None,
                refs_name: str = "references", seen: Sequence[int] = ()) -> Dict[str, Any]:
    """sacrebleu's corpus BLEU and chrF of ``hyp`` against ``ref``, with their signatures. With ``tokenization``
    (raw text, :mod:`onmt_xl.experiments.tokenization`) these are sacrebleu's standard scores of the detokenized
    output against the raw references (BLEU with the tokenizer recorded for the target language), and
    ``bleu_tokenized`` adds BLEU on both sides tokenized by it (an extra, not comparable with published scores);
    without, the text is tokenized already and scored as it is. ``hyp`` and ``ref`` must have as many lines
    (sacrebleu would score the shorter prefix silently): a ValueError names ``path``, the translations' file.
    ``seen``: the 1-based lines whose source is a training source (:func:`onmt_xl.experiments.stages.source_overlap`);
    where some other line is left, ``bleu_unseen`` is BLEU on the other lines (``unseen_sentences`` of them)."""
    from sacrebleu.metrics import BLEU, CHRF

    if len(hyp) != len(ref):
        raise ValueError(f"{path or 'the translations'}: {len(hyp)} lines but {len(ref)} {refs_name}")

    bleu = BLEU(tokenize=bleu_tokenizer_of(tokenization), force=True)  # no warning on tokenized text; the same score
    chrf = CHRF()
    out: Dict[str, Any] = {"bleu": bleu.corpus_score(hyp, [ref]).score, "chrf": chrf.corpus_score(hyp, [ref]).score,
                           "bleu_signature": bleu.get_signature().format(),
                           "chrf_signature": chrf.get_signature().format()}
    skip = set(seen)
    unseen = [n for n in range(len(hyp)) if n + 1 not in skip]
    if skip and unseen:
        out["bleu_unseen"] = bleu.corpus_score([hyp[n] for n in unseen], [[ref[n] for n in unseen]]).score
        out["unseen_sentences"] = len(unseen)
    if tokenization is not None:
        from onmt_xl.experiments.tokenization import tokenize_lines

        tok = tokenization.tokenizer()
        out["bleu_tokenized"] = BLEU(tokenize="none", force=True).corpus_score(
            tokenize_lines(tok, hyp), [tokenize_lines(tok, ref)]).score
    return out


def scores_note(tokenization) -> Dict[str, str]:
    """``results.json``'s ``scores``: what text BLEU and chrF were computed on."""
    if tokenization is None:
        return {"text": "the tokenized text as given (not sacrebleu's standard, detokenized scores)"}
    return {"text": "detokenized output against the raw references (sacrebleu's standard scores)",
            "bleu_tokenized": f"extra: BLEU (tok:none) on output and references tokenized by {tokenization.describe()}"}


def _bleu_chrf(workdir: Path, job: Job, variant: str, hyp: List[str], refs: Dict[str, List[str]],
               seen: Sequence[int] = ()) -> Dict[str, Any]:
    """:func:`text_scores` of a variant's translations against its references (``seen`` as there)."""
    return text_scores(hyp, _refs(workdir, variant, refs), tokenization_of(workdir),
                       path=workdir / "jobs" / job.name / ("hyp." + variant), seen=seen)


def seen_test_lines(records: Dict[str, Any]) -> List[int]:
    """The 1-based test lines whose source is a training source, from :func:`run_records`' ``overlap`` (none where
    not recorded)."""
    return records.get("overlap", {}).get("test", {}).get("lines", [])


def _refs(workdir: Path, variant: str, cache: Dict[str, List[str]]) -> List[str]:
    """References of a BLEU variant: the validation targets for ``valid``, else the test references."""
    key = "valid" if variant == "valid" else "test"
    if key not in cache:
        cache[key] = _lines(workdir / "data" / "valid.tgt")
    return cache[key]


#: AER variant -> (source, target) text the alignments are read on, under ``workdir/data``
AER_TEXTS = {"gold_align": ("gold.src", "gold.tgt"), "test_align": ("test.src", "test.ref")}


def _aer_reference(workdir: Path, variant: str):
    """The reference links (sure, possible) of an AER variant: the gold set, or the test set's eflomal links."""
    from onmt_xl.core.align.aer import read_gold
    from onmt_xl.core.align.pharaoh import read_pharaoh

    data = workdir / "data"
    if variant == "gold_align":
        sure, possible = read_gold(str(data / "gold.align"))
        keep = [int(k) for k in (data / "gold.keep").read_text().split()]
        return [sure[k] for k in keep], [possible[k] for k in keep]
    src = [l.split() for l in _lines(data / "test.src")]
    sure = [set(ls) for ls in read_pharaoh(str(workdir / "align" / "test.gdfa"), [len(s) for s in src])]
    return sure, sure


def _aer(workdir: Path, variant: str, hyp: List[str]) -> Dict[str, Any]:
    s = attention_aer(hyp, *_aer_reference(workdir, variant))
    return dict(aer=s.aer, precision=s.precision, recall=s.recall, sentences=s.n_sentences)


def reference_alignments(src_lens: Sequence[int], tgt_lens: Sequence[int], seed: int = 0) -> Dict[str, List[set]]:
    """Chance-level links in the form attention gives (one source word per target word): ``random`` (uniform,
    seeded) and ``diagonal`` (target word j of m to source word ⌊(j + ½)·n/m⌋)."""
    import random

    rng = random.Random(seed)
    out: Dict[str, List[set]] = {"random": [], "diagonal": []}
    for n, m in zip(src_lens, tgt_lens):
        out["random"].append({(rng.randrange(n), j) for j in range(m)} if n else set())
        out["diagonal"].append({(int((j + 0.5) * n / m), j) for j in range(m)} if n else set())
    return out


def link_reference(workdir: Path, variant: str):
    """The reference links ``(sure, possible)`` of an AER variant (``gold_align``: :func:`gold_reference`;
    ``test_align``: the test pairs' eflomal links, sure = possible); None when the work directory lacks them."""
    if variant == "gold_align":
        return gold_reference(workdir)
    if not (Path(workdir) / "align" / "test.gdfa").exists():
        return None
    return _aer_reference(Path(workdir), variant)


def gold_reference(workdir: Path):
    """The gold set's links ``(sure, possible)``, per sentence of ``data/gold.src`` (the 0-based kept lines of
    ``data/gold.align``); None when the work directory has no gold set."""
    data = Path(workdir) / "data"
    if not ((data / "gold.align").exists() and (data / "gold.keep").exists()):
        return None
    return _aer_reference(Path(workdir), "gold_align")


def aer_references(workdir: Path, variants: Sequence[str] = tuple(AER_TEXTS)) -> Dict[str, Any]:
    """Per AER variant of ``variants`` (default: all) whose data exists: the AER of chance-level links
    (:func:`reference_alignments`), and the share of source/target tokens outside the trained vocabularies
    (what attention has to align)."""
    from onmt_xl.core.align.aer import score_alignments

    workdir, out = Path(workdir), {}
    vocabs = {side: workdir / f"vocab.{side}" for side in ("src", "tgt")}
    known = {side: {l.split("\t")[0].split(" ")[0] for l in _lines(p)} for side, p in vocabs.items() if p.exists()}
    for variant, (src_name, tgt_name) in AER_TEXTS.items():
        if variant not in variants:
            continue
        src_path, tgt_path = workdir / "data" / src_name, workdir / "data" / tgt_name
        if not (src_path.exists() and tgt_path.exists()) or (
                variant == "test_align" and not (workdir / "align" / "test.gdfa").exists()):
            continue
        src, tgt = [l.split() for l in _lines(src_path)], [l.split() for l in _lines(tgt_path)]
        sure, possible = _aer_reference(workdir, variant)
        entry: Dict[str, Any] = {"sentences": len(src), "src_words_per_sentence": sum(map(len, src)) / max(1, len(src))}
        for name, links in reference_alignments([len(x) for x in src], [len(y) for y in tgt]).items():
            sc = score_alignments(links, sure, possible)
            entry[name] = dict(aer=sc.aer, precision=sc.precision, recall=sc.recall)
        for side, words in (("src", src), ("tgt", tgt)):
            if side in known:
                flat = [w for ws in words for w in ws]
                entry[f"{side}_oov"] = sum(w not in known[side] for w in flat) / max(1, len(flat))
        out[variant] = entry
    return out


def _significance(workdir: Path, jobs: Sequence[Job], out: Dict[str, Any], refs: Dict[str, List[str]]) -> None:
    """p-values against the baseline for every BLEU variant: against the baseline's translation of the same
    sources (``test``, ``swapNN``), or of the clean test set where the baseline has no such variant (``oracle``)."""
    base_job = next((j for j in jobs if j.name == "baseline"), None)
    if base_job is None or _hyp(workdir, base_job, "test") is None:
        return
    variants = sorted({v for j in jobs for v in j.variants if v not in ("gold_align", "test_align", "sim")})
    tok = bleu_tokenizer_of(tokenization_of(workdir))
    for variant in variants:
        base_variant = variant if variant in base_job.variants else "test"
        base = _hyp(workdir, base_job, base_variant)
        if base is None:
            continue
        others = {j.name: _hyp(workdir, j, variant) for j in jobs
                  if (j.name, variant) != ("baseline", base_variant) and variant in j.variants
                  and j.name in out["jobs"]}
        others = {k: v for k, v in others.items() if v is not None}
        ref = _refs(workdir, variant, refs)
        boot = paired_bootstrap(others, base, ref, tokenize=tok)
        for name, hyp in others.items():
            st = sign_test(hyp, base, ref, tokenize=tok)
            out["jobs"][name]["variants"][variant].update(p_bootstrap=boot[name], sign_better=st.better,
                                                          sign_worse=st.worse, p_sign=st.p_value)
