"""Hashed features of BTG nodes for the discriminative preorderer (after Neubig et al. 2012).

A binary node over ``[s, e)`` split at ``m`` (left child ``[s, m)``, right child ``[m, e)``)
of type ``t`` (0 straight, 1 inverted) scores ``sum_f W[f, t]`` over its features ``f``.
Every feature looks at no more than two of ``s, m, e``, so the score factorizes as

    score(t, s, m, e) = A_t[s, m] + B_t[m, e] + C_t[m] + D_t[s, e]

(left-child, right-child, split and span tables), each filled once in ``O(n^2 F)``:

* ``A`` (left child): first/last word, their classes and class pair, length bucket, the word
  and class just left of the span, first-left x first-right class pair;
* ``B`` (right child): the mirror image, plus last-left x last-right class pair;
* ``C`` (split): word and class bigrams across the split ``(w_{m-1}, w_m)``;
* ``D`` (span): bias, first x last class of the span, span length bucket, outside class pair.

Conjunction with the node type is implicit: ``W`` has shape ``(size, 2)``, one column per type.

Tokens map to ids of a training vocabulary (``UNK`` for unseen or rare ones, ``BOS``/``EOS``
pad the sentence). Word *classes* are cheap and deterministic: the token itself for the ``K``
most frequent training tokens, else a shape class (Unicode script and case of the first and last
letter, length bucket, subword joiner/spacer marks ``￭`` ``▁`` ``@@``), so a Japanese KyTea
token, an English word and a SentencePiece piece all get a sensible class.
"""

from __future__ import annotations

import unicodedata
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np
from numba import njit

UNK, BOS, EOS = 0, 1, 2
N_SPECIAL = 3
SHAPE_CLASS_BASE = 1 << 40  # shape-class ids live above every word id

# --- word classes ------------------------------------------------------------------------------

_JOINERS = ("￭", "▁", "@@")


def _char_class(ch: str) -> str:
    cat = unicodedata.category(ch)
    if cat == "Nd":
        return "9"
    if cat[0] == "L":
        script = unicodedata.name(ch, "L").split()[0]
        return script + ("^" if cat == "Lu" else "")
    return cat  # punctuation, symbols, ...


def _len_bucket(n: int) -> int:
    return 0 if n <= 1 else 1 if n <= 2 else 2 if n <= 4 else 3 if n <= 7 else 4


def word_shape(token: str) -> str:
    """Shape class, e.g. ``"▁LATIN^|LATIN|3"`` for ``"▁Hello"``, ``"HIRAGANA|HIRAGANA|1"``."""
    pre = suf = ""
    core = token
    for mark in _JOINERS:
        if core.startswith(mark) and len(core) > len(mark):
            pre, core = mark, core[len(mark):]
            break
    for mark in _JOINERS:
        if core.endswith(mark) and len(core) > len(mark):
            suf, core = mark, core[: -len(mark)]
            break
    if not core:
        return "EMPTY"
    return f"{pre}{_char_class(core[0])}|{_char_class(core[-1])}|{_len_bucket(len(core))}{suf}"


def shape_class_id(token: str) -> int:
    """Stable (process-independent) id of the token's shape class."""
    return SHAPE_CLASS_BASE + zlib.crc32(word_shape(token).encode("utf-8"))


# --- vocabulary --------------------------------------------------------------------------------


@dataclass
class Vocab:
    """Token ids (``UNK``/``BOS``/``EOS`` first) and the class id of every known token."""

    tokens: List[str]  # tokens[i] is the token of id i + N_SPECIAL
    class_words: int  # how many of the most frequent tokens are their own class
    index: Dict[str, int] = field(init=False, repr=False)
    classes: np.ndarray = field(init=False, repr=False)  # (len(tokens) + N_SPECIAL,) int64
    _unk_cls: Dict[str, int] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {t: i + N_SPECIAL for i, t in enumerate(self.tokens)}
        cls = np.empty(len(self.tokens) + N_SPECIAL, dtype=np.int64)
        cls[:N_SPECIAL] = np.arange(N_SPECIAL)
        for i, t in enumerate(self.tokens):
            # tokens are stored by decreasing frequency: the first ``class_words`` are their own class
            cls[i + N_SPECIAL] = i + N_SPECIAL if i < self.class_words else shape_class_id(t)
        self.classes = cls

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], min_count: int = 2, class_words: int = 100) -> "Vocab":
        """Tokens seen at least ``min_count`` times, most frequent first (ties: alphabetical)."""
        counts = Counter(t for sent in sentences for t in sent)
        kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        return cls(kept, min(class_words, len(kept)))

    def __len__(self) -> int:
        return len(self.tokens) + N_SPECIAL

    def _class_of_unknown(self, token: str) -> int:
        c = self._unk_cls.get(token)
        if c is None:
            c = shape_class_id(token)
            if len(self._unk_cls) < 200_000:
                self._unk_cls[token] = c
        return c

    def encode(self, tokens: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """Padded word ids and class ids, each shape ``(n + 2,)`` int64: ``BOS w_0 .. w_{n-1} EOS``."""
        n = len(tokens)
        w = np.empty(n + 2, dtype=np.int64)
        c = np.empty(n + 2, dtype=np.int64)
        w[0] = c[0] = BOS
        w[n + 1] = c[n + 1] = EOS
        index, classes = self.index, self.classes
        for i, tok in enumerate(tokens):
            k = index.get(tok, UNK)
            w[i + 1] = k
            c[i + 1] = classes[k] if k != UNK else self._class_of_unknown(tok)
        return w, c


# --- hashing and feature templates ---------------------------------------------------------------

_G = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S6, _S2 = np.uint64(6), np.uint64(2)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)

N_FEATS_A = 9
N_FEATS_B = 9
N_FEATS_C = 4
N_FEATS_D = 4
N_FEATS_NODE = N_FEATS_A + N_FEATS_B + N_FEATS_C + N_FEATS_D


@njit(cache=True)
def fhash(template: int, a: int, b: int, mask: int) -> int:
    """Feature index in ``[0, mask]`` of ``(template, a, b)`` (boost-style combine + splitmix64)."""
    x = np.uint64(template) * _G
    x ^= np.uint64(a) + _G + (x << _S6) + (x >> _S2)
    x ^= np.uint64(b) + _G + (x << _S6) + (x >> _S2)
    x ^= x >> _S30
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return np.int64(x & np.uint64(mask))


@njit(cache=True)
def len_bucket(n: int) -> int:
    """1, 2, 3, 4, 5-6, 7-9, 10-14, 15+ -> 0..7."""
    if n <= 4:
        return n - 1
    if n <= 6:
        return 4
    if n <= 9:
        return 5
    if n <= 14:
        return 6
    return 7


# Positions are indices into the padded arrays: token i of the (chunk starting at ``lo``) is
# at ``lo + i + 1``; ``w[lo + s]`` is the word just left of span ``[s, .)``.


@njit(cache=True)
def feats_left(w, c, lo: int, s: int, m: int, mask: int, out, k: int) -> int:
    """Features of the left child ``[s, m)`` -> ``out[k:k+N_FEATS_A]``; returns the new ``k``."""
    f, l, r = lo + s + 1, lo + m, lo + m + 1  # first, last of left; first of right
    out[k + 0] = fhash(1, w[f], 0, mask)
    out[k + 1] = fhash(2, w[l], 0, mask)
    out[k + 2] = fhash(3, c[f], 0, mask)
    out[k + 3] = fhash(4, c[l], 0, mask)
    out[k + 4] = fhash(5, c[f], c[l], mask)
    out[k + 5] = fhash(6, len_bucket(m - s), 0, mask)
    out[k + 6] = fhash(7, c[f], c[r], mask)
    out[k + 7] = fhash(8, w[f - 1], 0, mask)
    out[k + 8] = fhash(9, c[f - 1], c[f], mask)
    return k + N_FEATS_A


@njit(cache=True)
def feats_right(w, c, lo: int, m: int, e: int, mask: int, out, k: int) -> int:
    """Features of the right child ``[m, e)``."""
    f, l, p = lo + m + 1, lo + e, lo + m  # first, last of right; last of left
    out[k + 0] = fhash(11, w[f], 0, mask)
    out[k + 1] = fhash(12, w[l], 0, mask)
    out[k + 2] = fhash(13, c[f], 0, mask)
    out[k + 3] = fhash(14, c[l], 0, mask)
    out[k + 4] = fhash(15, c[f], c[l], mask)
    out[k + 5] = fhash(16, len_bucket(e - m), 0, mask)
    out[k + 6] = fhash(17, c[p], c[l], mask)
    out[k + 7] = fhash(18, w[l + 1], 0, mask)
    out[k + 8] = fhash(19, c[l], c[l + 1], mask)
    return k + N_FEATS_B


@njit(cache=True)
def feats_split(w, c, lo: int, m: int, mask: int, out, k: int) -> int:
    """Features across the split: ``(w_{m-1}, w_m)`` and class variants."""
    p, q = lo + m, lo + m + 1
    out[k + 0] = fhash(21, w[p], w[q], mask)
    out[k + 1] = fhash(22, c[p], c[q], mask)
    out[k + 2] = fhash(23, w[p], c[q], mask)
    out[k + 3] = fhash(24, c[p], w[q], mask)
    return k + N_FEATS_C


@njit(cache=True)
def feats_span(w, c, lo: int, s: int, e: int, mask: int, out, k: int) -> int:
    """Features of the whole span ``[s, e)``."""
    f, l = lo + s + 1, lo + e
    out[k + 0] = fhash(31, 0, 0, mask)
    out[k + 1] = fhash(32, c[f], c[l], mask)
    out[k + 2] = fhash(33, len_bucket(e - s), 0, mask)
    out[k + 3] = fhash(34, c[f - 1], c[l + 1], mask)
    return k + N_FEATS_D


@njit(cache=True)
def node_features(w, c, lo: int, s: int, m: int, e: int, mask: int, out) -> None:
    """All ``N_FEATS_NODE`` feature indices of node ``(s, m, e)`` into ``out``."""
    k = feats_left(w, c, lo, s, m, mask, out, 0)
    k = feats_right(w, c, lo, m, e, mask, out, k)
    k = feats_split(w, c, lo, m, mask, out, k)
    feats_span(w, c, lo, s, e, mask, out, k)
