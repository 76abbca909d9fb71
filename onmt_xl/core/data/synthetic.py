"""A synthetic parallel corpus with controlled word-order divergence and gold word alignments.

One synchronous grammar yields an SVO, English-like source (prepositions, determiners,
post-nominal relative clauses) and a head-final, SOV, Japanese-like target (postpositions,
case particles ``ga``/``wa``/``o``, prenominal modifiers, verb stem + tense suffix). Every
construction has two children, so the true reordering is BTG-expressible (Wu 1997).
Each construction is head-final on the target side with probability ``divergence``
(0 = monotone, 1 = fully SOV):

=================  ==============================  ==============================
construction       source                          head-final target
=================  ==============================  ==============================
object             V NP                            NP o V
PP adjunct         VP PP                           PP VP
adverb             VP Adv                          Adv VP
modal              Modal V                         V-stem Modal
PP                 P NP                            NP P
NP + PP            NP PP                           PP no NP
relative clause    NP wat VP                       VP NP
=================  ==============================  ==============================

Alignments are 0-indexed Pharaoh pairs ``(src, tgt)``: content words 1-1, a finite verb 1-to-2
(stem and tense suffix); articles and ``wat`` are unaligned source words, case particles and
``no`` unaligned target words. The lexicon is fixed (its own seed), so corpora drawn with
different ``seed`` share vocabularies.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from onmt_xl.core.align.pharaoh import write_pharaoh

Links = List[Tuple[int, int]]

LEXICON_SEED = 20200705
MIN_LEN, MAX_LEN = 4, 25


@dataclass
class SyntheticCorpus:
    """Parallel sentences: ``src[k]``/``tgt[k]`` token lists, ``links[k]`` Pharaoh pairs.

    ``orders[k]`` is the generating tree's source order (source indices in target order).
    """

    src: List[List[str]]
    tgt: List[List[str]]
    links: List[Links]
    orders: List[List[int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.src)


# --- lexicon -------------------------------------------------------------------------------

_SRC_ONSETS = "b bl br c ch cl d dr f fl g gr h j k l m n p pl pr r s sh sl sn st t th tr v w".split()
_SRC_VOWELS = "a e i o u ea oo ai".split()
_SRC_CODAS = "n nk ck st rd mp ll t g sh x m".split()
_TGT_ONSETS = "k s t n h m y r w g z d b p sh ch ts".split()
_TGT_VOWELS = "a i u e o".split()


@dataclass(frozen=True)
class Lexicon:
    """Source word -> target word(s) for each category (fixed, seeded)."""

    nouns: Tuple[Tuple[str, str], ...]
    adjs: Tuple[Tuple[str, str], ...]
    advs: Tuple[Tuple[str, str], ...]
    preps: Tuple[Tuple[str, str], ...]
    tverbs: Tuple[Tuple[str, str], ...]  # (source base, target stem)
    iverbs: Tuple[Tuple[str, str], ...]
    modals: Tuple[Tuple[str, str], ...]
    demonstratives: Tuple[Tuple[str, str], ...]
    articles: Tuple[str, ...] = ("da", "en", "sim")
    rel: str = "wat"
    conj: Tuple[str, str] = ("end", "soshite")


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    rng = random.Random(LEXICON_SEED)
    src_seen = {"da", "en", "sim", "wat", "end", "."}
    tgt_seen = {"ga", "wa", "o", "no", "ta", "ru", "soshite", "。"}

    def src_word(syllables: int, suffix: str = "") -> str:
        while True:
            w = "".join(rng.choice(_SRC_ONSETS) + rng.choice(_SRC_VOWELS) for _ in range(syllables - 1))
            w += rng.choice(_SRC_ONSETS) + rng.choice(_SRC_VOWELS) + rng.choice(_SRC_CODAS) + suffix
            if w not in src_seen and w not in tgt_seen:
                src_seen.add(w)
                return w

    def tgt_word(syllables: int, suffix: str = "") -> str:
        while True:
            w = "".join(rng.choice(_TGT_ONSETS) + rng.choice(_TGT_VOWELS) for _ in range(syllables)) + suffix
            if w not in tgt_seen and w not in src_seen:
                tgt_seen.add(w)
                return w

    def pairs(k: int, s_syl: Tuple[int, int], t_syl: Tuple[int, int], s_suf: str = "", t_suf: str = ""):
        return tuple(
            (src_word(rng.randint(*s_syl), s_suf), tgt_word(rng.randint(*t_syl), t_suf)) for _ in range(k)
        )

    nouns = pairs(50, (1, 2), (2, 3))
    adjs = pairs(20, (1, 2), (1, 2), t_suf="i")
    advs = pairs(10, (1, 2), (1, 2), s_suf="ly", t_suf="ku")
    preps = tuple((src_word(1), tgt_word(1)) for _ in range(8))
    tverbs = pairs(24, (1, 1), (1, 2))
    iverbs = pairs(12, (1, 1), (1, 2))
    modals = tuple((src_word(1), tgt_word(2)) for _ in range(3))
    demonstratives = (("dis", "kono"), ("dat", "ano"))
    return Lexicon(nouns, adjs, advs, preps, tverbs, iverbs, modals, demonstratives)


# --- synchronous trees -----------------------------------------------------------------------


@dataclass
class _Leaf:
    src: List[str]
    tgt: List[str]
    links: Links  # local (src, tgt) pairs


@dataclass
class _Node:
    children: List[object]
    inverted: bool = False  # target yields the children right to left (binary nodes only)


def _lin(tree) -> Tuple[List[str], List[str], Links, List[int]]:
    """Linearize: source tokens, target tokens, links, and the source order in target order."""
    if isinstance(tree, _Leaf):
        return list(tree.src), list(tree.tgt), list(tree.links), list(range(len(tree.src)))
    parts = [_lin(c) for c in tree.children]
    src: List[str] = []
    src_off = []
    for s, _, _, _ in parts:
        src_off.append(len(src))
        src.extend(s)
    tgt: List[str] = []
    links: Links = []
    order: List[int] = []
    seq = range(len(parts) - 1, -1, -1) if tree.inverted else range(len(parts))
    for k in seq:
        s, t, lk, o = parts[k]
        links.extend((i + src_off[k], j + len(tgt)) for i, j in lk)
        order.extend(i + src_off[k] for i in o)
        tgt.extend(t)
    return src, tgt, links, order


class _Grammar:
    """Draws one synchronous tree; ``d`` = probability that a construction is head-final."""

    def __init__(self, rng: random.Random, divergence: float):
        self.rng, self.d, self.lex = rng, divergence, lexicon()

    def flip(self) -> bool:
        return self.rng.random() < self.d

    def pick(self, items):
        return self.rng.choice(items)

    def bin(self, a, b) -> _Node:
        """A reorderable construction: ``a b`` in the source, ``b a`` in a head-final target."""
        return _Node([a, b], inverted=self.flip())

    def np(self, depth: int):
        lex, rng = self.lex, self.rng
        words: List[_Leaf] = []
        r = rng.random()
        if r < 0.55:
            words.append(_Leaf([self.pick(lex.articles)], [], []))  # article: dropped in the target
        elif r < 0.7:
            s, t = self.pick(lex.demonstratives)
            words.append(_Leaf([s], [t], [(0, 0)]))
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
            s, t = self.pick(lex.adjs)
            words.append(_Leaf([s], [t], [(0, 0)]))
        s, t = self.pick(lex.nouns)
        words.append(_Leaf([s], [t], [(0, 0)]))
        core = words[0] if len(words) == 1 else _Node(words)  # Det Adj* N keeps its order
        r = rng.random()
        if depth < 2 and r < 0.18:
            return self.bin(core, _Node([self.pp(depth + 1), _Leaf([], ["no"], [])]))
        if depth < 2 and r < 0.28:
            rel = _Node([_Leaf([lex.rel], [], []), self.vp(depth + 1)])
            return self.bin(core, rel)
        return core

    def pp(self, depth: int):
        s, t = self.pick(self.lex.preps)
        return self.bin(_Leaf([s], [t], [(0, 0)]), self.np(depth))

    def verb(self, transitive: bool):
        lex, rng = self.lex, self.rng
        base, stem = self.pick(lex.tverbs if transitive else lex.iverbs)
        if rng.random() < 0.2:  # Modal V  <->  V-stem Modal
            ms, mt = self.pick(lex.modals)
            return self.bin(_Leaf([ms], [mt], [(0, 0)]), _Leaf([base], [stem], [(0, 0)]))
        past = rng.random() < 0.5
        return _Leaf([base + ("ed" if past else "s")], [stem, "ta" if past else "ru"], [(0, 0), (0, 1)])

    def vp(self, depth: int):
        rng = self.rng
        transitive = rng.random() < 0.65
        vp = self.verb(transitive)
        if transitive:
            obj = _Node([self.np(depth + 1), _Leaf([], ["o"], [])])
            vp = self.bin(vp, obj)
        if depth < 2 and rng.random() < 0.3:
            vp = self.bin(vp, self.pp(depth + 1))
        if rng.random() < 0.2:
            s, t = self.pick(self.lex.advs)
            vp = self.bin(vp, _Leaf([s], [t], [(0, 0)]))
        return vp

    def clause(self):
        subj = _Node([self.np(1), _Leaf([], [self.pick(("ga", "wa"))], [])])
        return _Node([subj, self.vp(0)])

    def sentence(self):
        s = self.clause()
        if self.rng.random() < 0.1:
            a, b = self.lex.conj
            s = _Node([s, _Node([_Leaf([a], [b], [(0, 0)]), self.clause()])])
        return _Node([s, _Leaf(["."], ["。"], [(0, 0)])])


def generate(n: int, seed: int = 1, divergence: float = 1.0) -> SyntheticCorpus:
    """``n`` sentence pairs (source 4-25 tokens); the same ``(n, seed, divergence)`` gives the same corpus."""
    if not 0.0 <= divergence <= 1.0:
        raise ValueError(f"divergence must be in [0, 1], got {divergence}")
    rng = random.Random(seed)
    grammar = _Grammar(rng, divergence)
    corpus = SyntheticCorpus([], [], [], [])
    while len(corpus) < n:
        src, tgt, links, order = _lin(grammar.sentence())
        if not MIN_LEN <= len(src) <= MAX_LEN:
            continue
        corpus.src.append(src)
        corpus.tgt.append(tgt)
        corpus.links.append(sorted(links))
        corpus.orders.append(order)
    return corpus


def write(corpus: SyntheticCorpus, prefix: str) -> Dict[str, str]:
    """Write ``prefix.src``, ``prefix.tgt`` (space-separated tokens) and ``prefix.align`` (Pharaoh)."""
    paths = {"src": f"{prefix}.src", "tgt": f"{prefix}.tgt", "align": f"{prefix}.align"}
    for key in ("src", "tgt"):
        with open(paths[key], "w", encoding="utf-8") as f:
            for toks in getattr(corpus, key):
                f.write(" ".join(toks) + "\n")
    write_pharaoh(paths["align"], corpus.links)
    return paths


def vocab(sentences: List[List[str]], extra: Optional[List[str]] = None) -> List[str]:
    """Sorted distinct tokens (for sanity checks)."""
    out = {t for s in sentences for t in s}
    out.update(extra or [])
    return sorted(out)
