"""Hashed features of BTG nodes for the discriminative preorderer (after Neubig et al. 2012).

A binary node over ``[s, e)`` split at ``m`` (left child ``[s, m)``, right child ``[m, e)``)
of type ``t`` (0 straight, 1 inverted) scores ``sum_f W[f, t]`` over its features ``f``.
Every feature looks at no more than two of ``s, m, e``, so the score factorizes as

    score(t, s, m, e) = S_t[s] + M_t[m] + E_t[e] + A_t[s, m] + B_t[m, e] + D_t[s, e]

* ``S`` (start boundary): first word of the node, the word before it, classes, class bigram;
* ``M`` (split boundary): last word of the left child, first word of the right child, their
  classes, word/class bigrams across the split and class trigrams around it;
* ``E`` (end boundary): last word of the node, the word after it, classes, class bigram;
* ``A`` (left child ``[s, m)``): first x last class, length bucket, first-left x first-right class;
* ``B`` (right child ``[m, e)``): first x last class, length bucket, last-left x last-right class
  and word (e.g. a Japanese particle ending the left child x the verb ending the right child);
* ``D`` (node ``[s, e)``): bias, first x last class, length bucket, outside class pair.

The one-position tables cost ``O(L F)`` hash look-ups, the two-position ones ``O(L K F)`` for a
span limit ``K`` (``K = L``: exact). Conjunction with the node type is implicit: ``W`` has shape
``(size, 2)``, one column per type.

Tokens map to ids of a training vocabulary (``UNK`` for unseen or rare ones, two ``BOS``/``EOS``
pad each side). Each token has three views: the word id, a *class* and a *shape* (and, with a
tagger, two more: its part of speech and inflection, see below):

* class: the token itself for the ``class_words`` most frequent training tokens, else its
  exchange-clustering class (:mod:`onmt_xl.core.reorder.clusters`, learnt on the training source),
  else (an unknown word, or no clustering) its shape;
* shape: Unicode script and case of the first and last letter, length bucket, subword
  joiner/spacer marks ``￭`` ``▁`` ``@@`` -- a Japanese KyTea token, an English word and a
  SentencePiece piece all get a sensible one.

**Feature sets.** The templates above are the base set. ``fset`` (a bit mask, recorded in the
model) adds groups of templates, each over the same six tables, so decoding keeps its cost order:

* ``context`` (``FSET_CONTEXT``): a wider window, two tokens each side of every boundary (word
  bigrams, class trigrams and a class four-gram around the split), and word conjunctions of the
  children's ends: first x last word of each child and of the node, last word of the left child x
  first/last word of the right child (a particle ending one child x the verb ending the other);
* ``pos`` (``FSET_POS``): the part-of-speech and inflection views of a morphological tagger
  (:mod:`onmt_xl.core.reorder.tagger`) at every boundary, around the split and at the children's ends.
"""

from __future__ import annotations

import unicodedata
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from onmt_xl.core.reorder.jit import njit

UNK, BOS, EOS = 0, 1, 2
N_SPECIAL = 3
PAD = 2  # boundary tokens on each side of an encoded sentence
VIEW_SHAPE, VIEW_POS, VIEW_INFL = 0, 1, 2  # columns of the ``g`` views of an encoded sentence
N_VIEWS = 3
SHAPE_CLASS_BASE = 1 << 40  # shape-class ids live above every word id
CLUSTER_BASE = 1 << 36  # cluster-class ids live above every word id, below shape ids

# --- word shapes ---------------------------------------------------------------------------------

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
    """Token ids (``UNK``/``BOS``/``EOS`` first), and the class and shape id of every known token.

    ``tokens`` are stored by decreasing training frequency; ``clusters[i]`` (optional) is the
    exchange-clustering class of ``tokens[i]``.
    """

    tokens: List[str]  # tokens[i] is the token of id i + N_SPECIAL
    class_words: int  # how many of the most frequent tokens are their own class
    clusters: Optional[np.ndarray] = None
    index: Dict[str, int] = field(init=False, repr=False)
    classes: np.ndarray = field(init=False, repr=False)  # (len(tokens) + N_SPECIAL,) int64
    shapes: np.ndarray = field(init=False, repr=False)  # (len(tokens) + N_SPECIAL,) int64
    _unk_cls: Dict[str, int] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.clusters is not None:
            self.clusters = np.asarray(self.clusters, dtype=np.int64)
            if self.clusters.shape != (len(self.tokens),):
                raise ValueError(f"clusters has shape {self.clusters.shape}, expected ({len(self.tokens)},)")
        self.index = {t: i + N_SPECIAL for i, t in enumerate(self.tokens)}
        n = len(self.tokens) + N_SPECIAL
        cls = np.empty(n, dtype=np.int64)
        shp = np.empty(n, dtype=np.int64)
        cls[:N_SPECIAL] = shp[:N_SPECIAL] = np.arange(N_SPECIAL)
        for i, t in enumerate(self.tokens):
            shp[i + N_SPECIAL] = shape_class_id(t)
            if i < self.class_words:
                cls[i + N_SPECIAL] = i + N_SPECIAL
            elif self.clusters is not None:
                cls[i + N_SPECIAL] = CLUSTER_BASE + int(self.clusters[i])
            else:
                cls[i + N_SPECIAL] = shp[i + N_SPECIAL]
        self.classes, self.shapes = cls, shp

    @staticmethod
    def count(sentences: Iterable[Sequence[str]], min_count: int = 2) -> List[str]:
        """Tokens seen at least ``min_count`` times, most frequent first (ties: code point order)."""
        counts = Counter(t for sent in sentences for t in sent)
        return sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))

    @classmethod
    def build(
        cls,
        sentences: Sequence[Sequence[str]],
        min_count: int = 2,
        class_words: int = 100,
        n_clusters: int = 0,
        cluster_passes: int = 10,
    ) -> "Vocab":
        """Vocabulary of ``sentences``; ``n_clusters > 0`` also clusters it (exchange algorithm)."""
        tokens = cls.count(sentences, min_count)
        vocab = cls(tokens, min(class_words, len(tokens)))
        if n_clusters > 0:
            from onmt_xl.core.reorder.clusters import exchange_clusters

            ids = [vocab.encode(s)[0] for s in sentences]
            clusters = exchange_clusters(ids, len(vocab), N_SPECIAL, n_clusters, cluster_passes)
            vocab = cls(tokens, vocab.class_words, clusters)
        return vocab

    def __len__(self) -> int:
        return len(self.tokens) + N_SPECIAL

    def _shape_of_unknown(self, token: str) -> int:
        c = self._unk_cls.get(token)
        if c is None:
            c = shape_class_id(token)
            if len(self._unk_cls) < 200_000:
                self._unk_cls[token] = c
        return c

    def encode(self, tokens: Sequence[str], tags: Optional[Tuple[np.ndarray, np.ndarray]] = None
               ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Padded word and class ids, each shape ``(n + 2 PAD,)`` int64: ``BOS BOS w_0 .. w_{n-1} EOS EOS``,
        and the other views ``g`` of shape ``(n + 2 PAD, N_VIEWS)``: the shape id (``VIEW_SHAPE``) and, when
        ``tags`` gives them (two ``(n,)`` arrays of a tagger, :mod:`onmt_xl.core.reorder.tagger`), the
        part-of-speech and inflection ids (``VIEW_POS``, ``VIEW_INFL``; ``UNK`` without a tagger)."""
        n = len(tokens)
        w = np.empty(n + 2 * PAD, dtype=np.int64)
        c = np.empty(n + 2 * PAD, dtype=np.int64)
        g = np.full((n + 2 * PAD, N_VIEWS), UNK, dtype=np.int64)
        w[:PAD] = c[:PAD] = BOS
        g[:PAD] = BOS
        w[n + PAD:] = c[n + PAD:] = EOS
        g[n + PAD:] = EOS
        index, classes, shapes = self.index, self.classes, self.shapes
        for i, tok in enumerate(tokens):
            k = index.get(tok, UNK)
            w[i + PAD] = k
            if k != UNK:
                c[i + PAD] = classes[k]
                g[i + PAD, VIEW_SHAPE] = shapes[k]
            else:
                c[i + PAD] = g[i + PAD, VIEW_SHAPE] = self._shape_of_unknown(tok)
        if tags is not None:
            pos, infl = tags
            if len(pos) != n or len(infl) != n:
                raise ValueError(f"{len(pos)} and {len(infl)} tags for {n} tokens")
            g[PAD : n + PAD, VIEW_POS] = pos
            g[PAD : n + PAD, VIEW_INFL] = infl
        return w, c, g


# --- hashing and feature templates ---------------------------------------------------------------

_G = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S6, _S2 = np.uint64(6), np.uint64(2)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


@njit(cache=True, inline="always")
def fhash(template: int, a: int, b: int, c: int, mask: int) -> int:
    """Feature index in ``[0, mask]`` of ``(template, a, b, c)`` (boost-style combine + splitmix64)."""
    x = np.uint64(template) * _G
    x ^= np.uint64(a) + _G + (x << _S6) + (x >> _S2)
    x ^= np.uint64(b) + _G + (x << _S6) + (x >> _S2)
    x ^= np.uint64(c) + _G + (x << _S6) + (x >> _S2)
    x ^= x >> _S30
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return np.int64(x & np.uint64(mask))


@njit(cache=True)
def len_bucket(n: int) -> int:
    """1, 2, 3, 4, 5-6, 7-9, 10-14, 15-24, 25+ -> 0..8."""
    if n <= 4:
        return n - 1
    if n <= 6:
        return 4
    if n <= 9:
        return 5
    if n <= 14:
        return 6
    if n <= 24:
        return 7
    return 8


# --- feature sets ----------------------------------------------------------------------------------
#
# ``fset`` is a bit mask of template groups added to the base templates (the version-2/3 model, which
# ``fset = 0`` reproduces exactly): CONTEXT widens the window around every boundary and conjoins the
# words at the ends of the children; POS reads the part-of-speech views ``g[:, VIEW_POS]`` and
# ``g[:, VIEW_INFL]`` that a tagger filled (:mod:`onmt_xl.core.reorder.tagger`).

FSET_CONTEXT = 1
FSET_POS = 2
FEATURE_GROUPS = {"context": FSET_CONTEXT, "pos": FSET_POS}

# Positions index the padded arrays of the chunk starting at ``lo``: token ``i`` is at
# ``lo + PAD + i``. Each function writes its features to ``out[k:]`` and returns the new ``k``; a
# group writes at most ``MAX_FEATS_GROUP`` features, a node at most ``MAX_FEATS_NODE``.

N_FEATS_S = 6
N_FEATS_M = 12
N_FEATS_E = 6
N_FEATS_A = 3
N_FEATS_B = 5
N_FEATS_D = 4
N_FEATS_NODE = N_FEATS_S + N_FEATS_M + N_FEATS_E + N_FEATS_A + N_FEATS_B + N_FEATS_D  # fset = 0
MAX_FEATS_GROUP = 32
MAX_FEATS_NODE = 6 * MAX_FEATS_GROUP


@njit(cache=True, inline="always")
def _pair(a: int, b: int) -> int:
    """One 62-bit id for the pair ``(a, b)`` (four-token templates hash a pair as one argument)."""
    return fhash(0, a, b, 0, (1 << 62) - 1)


@njit(cache=True)
def _feats_edge(w, c, g, inner: int, outer: int, base: int, mask: int, fset: int, out, k: int) -> int:
    """A node edge: its word ``inner`` at the edge and the word ``outer`` beside it outside the node;
    templates ``base + 1 .. base + 6`` (the class pair in sentence order), ``base + 7 ..`` with ``fset``."""
    out[k + 0] = fhash(base + 1, w[inner], 0, 0, mask)
    out[k + 1] = fhash(base + 2, c[inner], 0, 0, mask)
    out[k + 2] = fhash(base + 3, w[outer], 0, 0, mask)
    out[k + 3] = fhash(base + 4, c[outer], 0, 0, mask)
    lo_, hi_ = min(inner, outer), max(inner, outer)
    out[k + 4] = fhash(base + 5, c[lo_], c[hi_], 0, mask)
    out[k + 5] = fhash(base + 6, g[inner, VIEW_SHAPE], 0, 0, mask)
    k += 6
    if fset & FSET_CONTEXT:
        far = outer + (outer - inner)  # the second word outside the node
        out[k + 0] = fhash(base + 7, w[lo_], w[hi_], 0, mask)
        out[k + 1] = fhash(base + 8, c[min(far, inner)], c[outer], c[max(far, inner)], mask)
        out[k + 2] = fhash(base + 9, w[far], 0, 0, mask)
        k += 3
    if fset & FSET_POS:
        out[k + 0] = fhash(base + 10, g[inner, VIEW_POS], 0, 0, mask)
        out[k + 1] = fhash(base + 11, g[lo_, VIEW_POS], g[hi_, VIEW_POS], 0, mask)
        out[k + 2] = fhash(base + 12, g[inner, VIEW_INFL], 0, 0, mask)
        out[k + 3] = fhash(base + 13, g[outer, VIEW_INFL], w[inner], 0, mask)
        k += 4
    return k


@njit(cache=True)
def feats_start(w, c, g, lo: int, s: int, mask: int, fset: int, out, k: int) -> int:
    """Node start ``s``: first word ``a`` and the word ``p`` before the node."""
    a = lo + PAD + s
    return _feats_edge(w, c, g, a, a - 1, 0, mask, fset, out, k)


@njit(cache=True)
def feats_split(w, c, g, lo: int, m: int, mask: int, fset: int, out, k: int) -> int:
    """Split ``m``: last word ``x`` of the left child, first word ``y`` of the right child."""
    y = lo + PAD + m
    x = y - 1
    out[k + 0] = fhash(11, w[x], 0, 0, mask)
    out[k + 1] = fhash(12, c[x], 0, 0, mask)
    out[k + 2] = fhash(13, w[y], 0, 0, mask)
    out[k + 3] = fhash(14, c[y], 0, 0, mask)
    out[k + 4] = fhash(15, w[x], w[y], 0, mask)
    out[k + 5] = fhash(16, c[x], c[y], 0, mask)
    out[k + 6] = fhash(17, w[x], c[y], 0, mask)
    out[k + 7] = fhash(18, c[x], w[y], 0, mask)
    out[k + 8] = fhash(19, c[x - 1], c[x], c[y], mask)
    out[k + 9] = fhash(20, c[x], c[y], c[y + 1], mask)
    out[k + 10] = fhash(21, g[x, VIEW_SHAPE], 0, 0, mask)
    out[k + 11] = fhash(22, g[y, VIEW_SHAPE], 0, 0, mask)
    k += N_FEATS_M
    if fset & FSET_CONTEXT:  # two words each side of the split
        out[k + 0] = fhash(71, w[x - 1], w[x], 0, mask)
        out[k + 1] = fhash(72, w[y], w[y + 1], 0, mask)
        out[k + 2] = fhash(73, _pair(c[x - 1], c[x]), c[y], c[y + 1], mask)
        out[k + 3] = fhash(74, c[x - 2], c[x - 1], c[x], mask)
        out[k + 4] = fhash(75, c[y], c[y + 1], c[y + 2], mask)
        out[k + 5] = fhash(76, w[x - 1], w[x], w[y], mask)
        out[k + 6] = fhash(77, w[x], w[y], w[y + 1], mask)
        k += 7
    if fset & FSET_POS:
        px, py = g[x, VIEW_POS], g[y, VIEW_POS]
        out[k + 0] = fhash(101, px, 0, 0, mask)
        out[k + 1] = fhash(102, py, 0, 0, mask)
        out[k + 2] = fhash(103, px, py, 0, mask)
        out[k + 3] = fhash(104, g[x - 1, VIEW_POS], px, py, mask)
        out[k + 4] = fhash(105, px, py, g[y + 1, VIEW_POS], mask)
        out[k + 5] = fhash(106, g[x, VIEW_INFL], g[y, VIEW_INFL], 0, mask)
        out[k + 6] = fhash(107, w[x], py, 0, mask)
        out[k + 7] = fhash(108, px, w[y], 0, mask)
        k += 8
    return k


@njit(cache=True)
def feats_end(w, c, g, lo: int, e: int, mask: int, fset: int, out, k: int) -> int:
    """Node end ``e``: last word ``z`` of the node and the word ``q`` after it."""
    q = lo + PAD + e
    return _feats_edge(w, c, g, q - 1, q, 30, mask, fset, out, k)


@njit(cache=True)
def feats_left(w, c, g, lo: int, s: int, m: int, mask: int, fset: int, out, k: int) -> int:
    """Left child ``[s, m)``."""
    a = lo + PAD + s
    y = lo + PAD + m
    x = y - 1
    out[k + 0] = fhash(41, c[a], c[x], 0, mask)
    out[k + 1] = fhash(42, len_bucket(m - s), 0, 0, mask)
    out[k + 2] = fhash(43, c[a], c[y], 0, mask)
    k += N_FEATS_A
    if fset & FSET_CONTEXT:  # the left child's first and last words
        out[k + 0] = fhash(81, w[a], w[x], 0, mask)
        out[k + 1] = fhash(82, c[a], w[x], 0, mask)
        out[k + 2] = fhash(83, w[x], len_bucket(m - s), 0, mask)
        k += 3
    if fset & FSET_POS:
        out[k + 0] = fhash(111, g[a, VIEW_POS], g[x, VIEW_POS], 0, mask)
        out[k + 1] = fhash(112, g[x, VIEW_INFL], len_bucket(m - s), 0, mask)
        k += 2
    return k


@njit(cache=True)
def feats_right(w, c, g, lo: int, m: int, e: int, mask: int, fset: int, out, k: int) -> int:
    """Right child ``[m, e)``."""
    y = lo + PAD + m
    x = y - 1
    z = lo + PAD + e - 1
    out[k + 0] = fhash(51, c[y], c[z], 0, mask)
    out[k + 1] = fhash(52, len_bucket(e - m), 0, 0, mask)
    out[k + 2] = fhash(53, c[x], c[z], 0, mask)
    out[k + 3] = fhash(54, w[x], w[z], 0, mask)
    out[k + 4] = fhash(55, c[x], g[z, VIEW_SHAPE], 0, mask)
    k += N_FEATS_B
    if fset & FSET_CONTEXT:  # the ends of both children across the split (particle x verb ending)
        out[k + 0] = fhash(91, w[y], w[z], 0, mask)
        out[k + 1] = fhash(92, c[x], w[z], 0, mask)
        out[k + 2] = fhash(93, w[x], c[z], 0, mask)
        out[k + 3] = fhash(94, w[x], w[y], w[z], mask)
        k += 4
    if fset & FSET_POS:
        out[k + 0] = fhash(121, g[y, VIEW_POS], g[z, VIEW_POS], 0, mask)
        out[k + 1] = fhash(122, g[x, VIEW_POS], g[z, VIEW_POS], 0, mask)
        out[k + 2] = fhash(123, g[x, VIEW_INFL], g[z, VIEW_INFL], 0, mask)
        out[k + 3] = fhash(124, w[x], g[z, VIEW_INFL], 0, mask)
        k += 4
    return k


@njit(cache=True)
def feats_span(w, c, g, lo: int, s: int, e: int, mask: int, fset: int, out, k: int) -> int:
    """The whole node ``[s, e)``."""
    a = lo + PAD + s
    q = lo + PAD + e
    out[k + 0] = fhash(61, 0, 0, 0, mask)
    out[k + 1] = fhash(62, c[a], c[q - 1], 0, mask)
    out[k + 2] = fhash(63, len_bucket(e - s), 0, 0, mask)
    out[k + 3] = fhash(64, c[a - 1], c[q], 0, mask)
    k += N_FEATS_D
    if fset & FSET_CONTEXT:
        out[k + 0] = fhash(65, w[a], w[q - 1], 0, mask)
        out[k + 1] = fhash(66, w[q - 1], len_bucket(e - s), 0, mask)
        k += 2
    if fset & FSET_POS:
        out[k + 0] = fhash(131, g[a, VIEW_POS], g[q - 1, VIEW_POS], 0, mask)
        out[k + 1] = fhash(132, g[a - 1, VIEW_POS], g[q, VIEW_POS], 0, mask)
        k += 2
    return k


@njit(cache=True)
def node_features(w, c, g, lo: int, s: int, m: int, e: int, mask: int, fset: int, out) -> int:
    """The feature indices of node ``(s, m, e)`` into ``out`` (at least ``MAX_FEATS_NODE`` long); returns
    their number (``N_FEATS_NODE`` for ``fset = 0``)."""
    k = feats_start(w, c, g, lo, s, mask, fset, out, 0)
    k = feats_split(w, c, g, lo, m, mask, fset, out, k)
    k = feats_end(w, c, g, lo, e, mask, fset, out, k)
    k = feats_left(w, c, g, lo, s, m, mask, fset, out, k)
    k = feats_right(w, c, g, lo, m, e, mask, fset, out, k)
    return feats_span(w, c, g, lo, s, e, mask, fset, out, k)
