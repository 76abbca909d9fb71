"""Alignment error rate, precision and recall (Och & Ney 2003, "A Systematic Comparison of Various
Statistical Alignment Models", Computational Linguistics 29(1)), and readers for gold alignments.

With hypothesis links A, sure gold links S and possible gold links P (S is a subset of P):

    precision = |A & P| / |A|      recall = |A & S| / |S|
    AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)

Counts are summed over the corpus before dividing (micro average).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Set, Tuple

from onmt_xl.core.align.eflomal_aligner import split_tokens
from onmt_xl.core.errors import XLInputError, count

Link = Tuple[int, int]


@dataclass(frozen=True)
class AERScores:
    """Corpus-level scores; a ratio whose denominator is 0 is ``nan``."""

    aer: float
    precision: float
    recall: float
    n_sentences: int = 0
    n_hyp: int = 0  # |A|
    n_sure: int = 0  # |S|
    n_possible: int = 0  # |P| (sure links included)
    n_hyp_sure: int = 0  # |A & S|
    n_hyp_possible: int = 0  # |A & P|

    def format(self) -> str:
        return (
            f"AER {self.aer:.4f}  P {self.precision:.4f}  R {self.recall:.4f}  "
            f"({self.n_sentences} sentences, {self.n_hyp} hyp links, {self.n_sure} sure, "
            f"{self.n_possible - self.n_sure} possible-only)"
        )


def _ratio(num: int, den: int) -> float:
    return num / den if den else float("nan")


def score_alignments(
    hyp: Sequence[Iterable[Link]],
    sure: Sequence[Iterable[Link]],
    possible: Optional[Sequence[Iterable[Link]]] = None,
) -> AERScores:
    """Och & Ney AER, precision and recall of ``hyp`` against the gold ``sure``/``possible`` links.

    All three are per-sentence link collections in the same (0-based, source-first) convention.
    ``possible`` defaults to ``sure``; sure links are always counted as possible (P := P | S).
    """
    if possible is None:
        possible = sure
    if not (len(hyp) == len(sure) == len(possible)):
        raise ValueError(
            f"sentence counts differ: {len(hyp)} hypothesis, {len(sure)} sure, {len(possible)} possible"
        )
    n_a = n_s = n_p = n_as = n_ap = 0
    for a, s, p in zip(hyp, sure, possible):
        a, s = set(a), set(s)
        p = set(p) | s
        n_a += len(a)
        n_s += len(s)
        n_p += len(p)
        n_as += len(a & s)
        n_ap += len(a & p)
    return AERScores(
        aer=1.0 - _ratio(n_as + n_ap, n_a + n_s),
        precision=_ratio(n_ap, n_a),
        recall=_ratio(n_as, n_s),
        n_sentences=len(hyp),
        n_hyp=n_a,
        n_sure=n_s,
        n_possible=n_p,
        n_hyp_sure=n_as,
        n_hyp_possible=n_ap,
    )


def parse_gold_line(
    line: str, one_indexed: bool = True, path: Optional[str] = None, lineno: Optional[int] = None
) -> Tuple[Set[Link], Set[Link]]:
    """``"1-2 3p4"`` -> (sure, possible), 0-based; ``ipj`` is a possible link, sure links are also possible."""
    sure: Set[Link] = set()
    possible: Set[Link] = set()
    base = 1 if one_indexed else 0
    for tok in line.split():
        sep = "-" if "-" in tok else "p"
        parts = tok.split(sep)
        if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit():
            raise XLInputError(path, lineno, f"malformed gold link {tok!r} (expected 'i-j' or 'ipj')")
        i, j = int(parts[0]) - base, int(parts[1]) - base
        if i < 0 or j < 0:
            raise XLInputError(
                path, lineno, f"gold link {tok!r} has index 0 but the file is read as 1-indexed (use zero-indexed)"
            )
        possible.add((i, j))
        if sep == "-":
            sure.add((i, j))
    return sure, possible


def read_gold(path: str, one_indexed: bool = True) -> Tuple[List[Set[Link]], List[Set[Link]]]:
    """Read a gold alignment file (one sentence per line, ``i-j`` sure / ``ipj`` possible, source first).

    Returns 0-based ``(sure, possible)`` per sentence, with ``possible`` including the sure links.
    ``one_indexed=True`` is the convention of e.g. the KFTT Japanese-English gold data.
    """
    sure, possible = [], []
    for n, line in enumerate(_read_lines(path), start=1):
        s, p = parse_gold_line(line, one_indexed, path, n)
        sure.append(s)
        possible.append(p)
    return sure, possible


def read_joint_text(path: str) -> Tuple[List[List[str]], List[List[str]]]:
    """Read a ``source ||| target`` file into token lists (tokens separated by ASCII whitespace)."""
    src, tgt = [], []
    for n, line in enumerate(_read_lines(path), start=1):
        fields = line.split("|||")
        if len(fields) != 2:
            raise XLInputError(path, n, f"expected 'source ||| target' (one '|||'), found {len(fields) - 1}")
        src.append(split_tokens(fields[0]))
        tgt.append(split_tokens(fields[1]))
    return src, tgt


def check_links_in_range(
    links: Sequence[Iterable[Link]],
    src_sents: Sequence[Sequence[str]],
    tgt_sents: Sequence[Sequence[str]],
    path: Optional[str] = None,
) -> None:
    """Raise :class:`XLInputError` (naming ``path``) if a link points past the end of its sentence."""
    if len(links) != len(src_sents):
        raise XLInputError(path, None, f"has {count(len(links), 'line')} but the text has "
                           f"{count(len(src_sents), 'sentence pair')}")
    for n, (ls, s, t) in enumerate(zip(links, src_sents, tgt_sents), start=1):
        for i, j in ls:
            if i >= len(s) or j >= len(t):
                raise XLInputError(
                    path, n,
                    f"link {i}-{j} (0-based) is outside the {len(s)}-token source / {len(t)}-token target "
                    "sentence (wrong indexing, or alignments at another token level?)",
                )


def _read_lines(path: str) -> List[str]:
    lines = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise XLInputError(path, n, f"not valid UTF-8 ({e.reason})") from None
    return lines
