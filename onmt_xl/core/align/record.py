"""What alignments were made on: ``onmt-xl align --out-prefix P`` writes ``P.seg.json`` next to
``P.fwd``/``P.rev``/``P.gdfa``, with each side's file, line and token counts and segmentation
(:class:`~onmt_xl.core.segmentation.SegmentationScheme`: declared with ``--src-subword-model`` /
``--src-subword-marker``, else read from the text's markers).

The commands that read alignments with a corpus (``oracle``, ``preorder-train``, ``preorder-eval``,
``show-reordering``) look for the record of their ``--align`` file (``A.gdfa`` -> ``A.seg.json``) and
fail when the corpus has other token counts than the aligned text (e.g. word alignments with a sub-word
``--src``: every link stays in range, so nothing else would notice); ``preorder-train`` also compares a
source segmentation declared to ``align`` with the one it records in the preorderer (e.g. another sub-word
model with the same marker). Alignments from other aligners
have no record; for them :func:`coverage_warning` notices alignments whose links stop well before the end
of the source sentences, which is what word alignments on a longer (sub-word) source look like.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from onmt_xl.core.errors import XLInputError
from onmt_xl.core.segmentation import SegmentationScheme, detect

FORMAT = "onmt_xl.alignment_record"
VERSION = 1
SUFFIX = ".seg.json"
MIN_COVERAGE = 0.9  # mean share of each source sentence up to its last linked token
MIN_COVERAGE_PAIRS = 50


def record_path(align_path: str) -> str:
    """``A.gdfa`` -> ``A.seg.json`` (the record ``onmt-xl align --out-prefix A`` writes)."""
    return os.path.splitext(align_path)[0] + SUFFIX


@dataclass
class SideRecord:
    """One side of the aligned text; ``declared``: the segmentation was given by the user (else read from
    the text's markers, which cannot see sub-words without markers)."""

    file: str
    lines: int
    tokens: int
    segmentation: SegmentationScheme
    declared: bool = False

    def to_dict(self):
        return dict(file=self.file, lines=self.lines, tokens=self.tokens, segmentation=self.segmentation.to_dict(),
                    declared=self.declared)

    @classmethod
    def from_dict(cls, d):
        return cls(str(d["file"]), int(d["lines"]), int(d["tokens"]), SegmentationScheme.from_dict(d["segmentation"]),
                   bool(d.get("declared", False)))


@dataclass
class AlignmentRecord:
    path: str
    src: SideRecord
    tgt: SideRecord


def side_record(file: str, sents: Sequence[Sequence[str]], scheme: Optional[SegmentationScheme] = None) -> SideRecord:
    """``scheme``: the declared segmentation; ``None`` records what the text's markers show."""
    return SideRecord(file, len(sents), sum(len(s) for s in sents), scheme or detect(sents).with_note(""),
                      scheme is not None)


def write_record(prefix: str, src: SideRecord, tgt: SideRecord) -> str:
    path = prefix + SUFFIX
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(format=FORMAT, version=VERSION, src=src.to_dict(), tgt=tgt.to_dict()), f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    return path


def read_record(align_path: str) -> Optional[AlignmentRecord]:
    """The record of ``align_path``, ``None`` when it has none; raises :class:`XLInputError` if unreadable."""
    path = record_path(align_path)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        if d.get("format") != FORMAT or d.get("version") != VERSION:
            raise ValueError(f"not an {FORMAT} version {VERSION} file")
        return AlignmentRecord(path, SideRecord.from_dict(d["src"]), SideRecord.from_dict(d["tgt"]))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise XLInputError(path, None,
                           f"unreadable alignment record ({exc}); delete it or re-run onmt-xl align") from None


def check_corpus(align_path: str, src_path: str, tgt_path: str, src: Sequence[Sequence[str]],
                 tgt: Sequence[Sequence[str]], links: Sequence[Sequence[Tuple[int, int]]],
                 ) -> Tuple[Optional[AlignmentRecord], List[str]]:
    """``(record or None, warnings)``; raises :class:`XLInputError` naming the files and both
    segmentations when the corpus is not the text the alignments were made on."""
    record = read_record(align_path)
    if record is None:
        warning = coverage_warning(align_path, src_path, src, links)
        return None, [warning] if warning else []
    if record.src.lines != len(src):
        return None, [f"{record.path} describes {record.src.lines} lines but {align_path} has {len(src)}: "
                      "not checked (stale record?)"]
    for flag, path, sents, side in (("--src", src_path, src, record.src), ("--tgt", tgt_path, tgt, record.tgt)):
        n = sum(len(s) for s in sents)
        if n != side.tokens:
            raise XLInputError(
                align_path, None,
                f"segmentation mismatch: these alignments were made on {side.file} ({side.tokens:,} tokens, "
                f"{side.segmentation.describe()}; see {record.path}), but {flag} {path} has {n:,} tokens "
                f"({detect(sents).describe()}): align the text you use (onmt-xl align), or use the text the "
                "alignments were made on",
            )
    return record, []


def coverage(src_lens: Sequence[int], links: Sequence[Sequence[Tuple[int, int]]]) -> Tuple[float, int]:
    """Mean over aligned pairs of (last linked source token + 1) / source length, and the number of pairs."""
    shares = [(max(i for i, _ in ls) + 1) / n for n, ls in zip(src_lens, links) if ls and n]
    return (sum(shares) / len(shares) if shares else 1.0), len(shares)


def coverage_warning(align_path: str, src_path: str, src: Sequence[Sequence[str]],
                     links: Sequence[Sequence[Tuple[int, int]]]) -> Optional[str]:
    """A warning when links stop on average before :data:`MIN_COVERAGE` of the source sentences.
    Correctly aligned text is near 1."""
    share, n = coverage([len(s) for s in src], links)
    if n < MIN_COVERAGE_PAIRS or share >= MIN_COVERAGE:
        return None
    return (f"the links of {align_path} reach on average only {share:.0%} into each sentence of {src_path} "
            f"({detect(src).describe()}): were the alignments made on another segmentation (e.g. words, for "
            "sub-word text)? Align the text you use")
