"""Is this the kind of text the preorderer was trained on? Its vocabulary's coverage of the first source tokens.

A preorderer's features are its training source's words (those seen at least ``min_count`` times, the ``.xlp``'s
vocabulary) and their classes; a word it does not know falls back to its shape. On its own kind of text the
vocabulary covers nearly every running token (measured on the shared ja-en data, 500 held-out sentences: 93-94 %
with a preorderer trained on 2,000 pairs, 97 % on 10,000, 99 % on 50,000, either side), on the other language's text
nearly none (0 %). A preorderer from another language pair or corpus still returns valid permutations, so nothing
fails: :class:`VocabCoverage` counts the first :data:`COVERAGE_TOKENS` source tokens and :func:`foreign_text` says
when under :data:`MIN_COVERAGE` of them are known (half: well below the lowest figure of its own text above and
well above another language's).

This cannot see a preorderer trained on the same language for another target (the same vocabulary); the
segmentation guard (:mod:`onmt_xl.core.segmentation`) sees words against sub-words. Framework-free.
"""

from __future__ import annotations

from typing import Container, Optional, Sequence

#: source tokens counted (whole sentences: the count stops at the first sentence that reaches it)
COVERAGE_TOKENS = 200
#: below this share of known tokens, the text is not the preorderer's kind
MIN_COVERAGE = 0.5


class VocabCoverage:
    """Counts of the first :data:`COVERAGE_TOKENS` source tokens (fed a sentence at a time) in ``known``."""

    def __init__(self, known: Container[str], limit: int = COVERAGE_TOKENS):
        self.known, self.limit = known, limit
        self.tokens = self.covered = 0

    @property
    def full(self) -> bool:
        return self.tokens >= self.limit

    @property
    def share(self) -> float:
        return self.covered / self.tokens if self.tokens else 1.0

    def add(self, tokens: Sequence[str]) -> None:
        if not self.full:
            self.tokens += len(tokens)
            self.covered += sum(1 for t in tokens if t in self.known)


def foreign_text(coverage: VocabCoverage, preorderer_path: str, where: str, name: str) -> Optional[str]:
    """The warning once ``coverage`` is full and under :data:`MIN_COVERAGE`, naming the preorderer file, the text
    (``where``) and the transform (``name``); ``None`` otherwise."""
    if not coverage.full or coverage.share >= MIN_COVERAGE:
        return None
    return (f"{name}: warning: the preorderer {preorderer_path} knows only {coverage.share:.0%} of the first "
            f"{coverage.tokens:,} source tokens of {where} (on the text it was trained on, typically over 90%): it was "
            "trained on another language pair, corpus or preprocessing, so the positions it gives are little better "
            "than arbitrary; train a preorderer on this language pair's source text: onmt-xl preorder-train --src "
            "SRC --tgt TGT --align ALIGN --model FILE (alignments from onmt-xl align)")
