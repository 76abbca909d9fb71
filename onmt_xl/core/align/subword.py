"""Sub-word segmentation for sub-word-level preordering (Ding et al. 2020 run the preorderer on BPE units).

Segmentation is pyonmttok's: a BPE model (:class:`pyonmttok.BPELearner`) or a SentencePiece model
(:class:`pyonmttok.SentencePieceLearner`), applied by ``pyonmttok.Tokenizer("space", joiner_annotate=True)``
to text that is already tokenized into words (space-separated). ``"space"`` mode splits only on
whitespace, so sub-words never cross a word boundary, and ``joiner_annotate`` marks every split
inside a word with the joiner ``￭`` (BPE puts it at the end of the left piece, ``ハン￭ バ￭ ー``;
SentencePiece at the start of the right piece, ``ハ ￭ンバー ￭ガー``). The pieces are exactly what
OpenNMT's ``onmt_tokenize`` transform produces with the same model and options.

Words are recovered two ways:

* which pieces belong to which word: from a :class:`Segmentation` (pieces + ``offsets``, the word ->
  piece index map), always exact; or from the pieces alone (:func:`offsets_from_pieces`): a boundary
  between two pieces is inside a word when the left piece ends or the right piece starts with the
  joiner, and the model makes sure every word-internal boundary has one;
* the word strings (:meth:`Segmentation.words`, :func:`merge_pieces`): the pieces with their
  word-internal joiners removed, concatenated. Exact for ordinary text; what pyonmttok normalises
  comes back normalised (Unicode spaces inside a token are dropped, a literal ``￭`` becomes ``■``).

**Alignments are projected, not recomputed** (:func:`project_links`): for each word link ``i-j``
every piece of source word ``i`` is linked to every piece of target word ``j``. Compared with running
eflomal on the sub-word text:

* all pieces of a word get the same target span, hence the same target rank (see
  :func:`onmt_xl.core.reorder.oracle.target_ranks`): the oracle and the preorderer's loss never ask to
  tear a word apart or to reorder its pieces, while a sub-word aligner can link the pieces of one word
  to distant target words and so ask for intra-word reordering that no target order justifies;
* one word alignment serves any sub-word model (no re-alignment per segmentation), and the
  preorderer's training targets do not depend on how the aligner copes with fragments;
* the price: a piece cannot be linked more precisely than its word (a compound whose halves
  translate to separate target words keeps one span for both halves), and whatever a sub-word
  aligner gains in word-level accuracy is not used. That gain depends on the data: on the KFTT
  gold set (out of domain for the 50k Tanaka training pairs), eflomal on BPE-8000 pieces, scored at
  word level, has a lower AER than eflomal on words, SentencePiece-2000 a higher one (see
  ``reports/PREORDER.md``, ``reports/PREORDER_HISTORY.md``). Both can be had: align the sub-words,
  :func:`collapse_links` to words, then :func:`project_links` back.

:func:`collapse_links` (words linked when any of their pieces are) also scores a sub-word aligner
against word-level gold; ``tools/bench/bench_align.py --subword`` and ``tools/bench/bench_subword.py
--subword-eflomal`` measure the alternative.

Word orders and sub-word orders are converted with :func:`collapse_order` (sub-words -> words: a word
goes where the **mean** reordered position of its pieces is, ties by source position) and
:func:`expand_order` (words -> sub-words: each word's pieces stay together, in source order).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

JOINER = "\uffed"  # ￭, pyonmttok's default joiner
KINDS = ("bpe", "sentencepiece")

Link = Tuple[int, int]


# --- pure functions on pieces, offsets and orders ------------------------------------------------------


@dataclass
class Segmentation:
    """One sentence's pieces and its word -> piece map.

    ``offsets`` has ``n_words + 1`` entries: the pieces of word ``i`` are ``pieces[offsets[i]:offsets[i+1]]``
    (every word has at least one piece).
    """

    pieces: List[str]
    offsets: List[int]

    @property
    def n_words(self) -> int:
        return len(self.offsets) - 1

    def word_pieces(self, i: int) -> range:
        """Indices of the pieces of word ``i``."""
        return range(self.offsets[i], self.offsets[i + 1])

    def piece_to_word(self) -> List[int]:
        """``out[p]`` = index of the word that piece ``p`` belongs to."""
        return piece_to_word(self.offsets)

    def words(self) -> List[str]:
        """The words, from the map: each word's pieces concatenated, word-internal joiners removed."""
        return [_join(self.pieces[a:b]) for a, b in zip(self.offsets[:-1], self.offsets[1:])]


def _join(pieces: Sequence[str]) -> str:
    out = []
    last = len(pieces) - 1
    for k, p in enumerate(pieces):
        if k > 0 and p.startswith(JOINER):
            p = p[len(JOINER):]
        if k < last and p.endswith(JOINER):
            p = p[: -len(JOINER)]
        out.append(p)
    return "".join(out)


def offsets_from_pieces(pieces: Sequence[str]) -> List[int]:
    """Word offsets read from the joiners: piece ``k+1`` continues the word of piece ``k`` when piece
    ``k`` ends with, or piece ``k+1`` starts with, :data:`JOINER`."""
    offsets = [0]
    for k in range(1, len(pieces)):
        if not (pieces[k - 1].endswith(JOINER) or pieces[k].startswith(JOINER)):
            offsets.append(k)
    if len(pieces):
        offsets.append(len(pieces))
    return offsets


def merge_pieces(pieces: Sequence[str]) -> List[str]:
    """Words from joiner-annotated pieces alone (the inverse of segmentation for ordinary text)."""
    return Segmentation(list(pieces), offsets_from_pieces(pieces)).words()


def piece_to_word(offsets: Sequence[int]) -> List[int]:
    out: List[int] = []
    for i in range(len(offsets) - 1):
        out.extend([i] * (offsets[i + 1] - offsets[i]))
    return out


def _check_offsets(offsets: Sequence[int], what: str) -> None:
    if len(offsets) == 0 or offsets[0] != 0 or any(b <= a for a, b in zip(offsets[:-1], offsets[1:])):
        raise ValueError(f"{what} offsets must start at 0 and increase strictly (every word has a piece): "
                         f"{list(offsets)}")


def project_links(
    links: Iterable[Link], src_offsets: Sequence[int], tgt_offsets: Optional[Sequence[int]] = None
) -> List[Link]:
    """Project word links ``(i, j)`` onto sub-words: every piece of source word ``i`` to every piece of
    target word ``j``. ``tgt_offsets=None`` leaves the target side at word level. Sorted, no duplicates.

    Raises ``ValueError`` when a link points outside the sentences described by the offsets.
    """
    _check_offsets(src_offsets, "source")
    n_src = len(src_offsets) - 1
    if tgt_offsets is not None:
        _check_offsets(tgt_offsets, "target")
    out = set()
    for i, j in links:
        if not 0 <= i < n_src:
            raise ValueError(f"link {i}-{j}: source word {i} out of range for a {n_src}-word sentence")
        if tgt_offsets is None:
            if j < 0:
                raise ValueError(f"link {i}-{j}: negative target index")
            tgt_range: Iterable[int] = (j,)
        else:
            if not 0 <= j < len(tgt_offsets) - 1:
                raise ValueError(f"link {i}-{j}: target word {j} out of range for a {len(tgt_offsets) - 1}-word "
                                 "sentence")
            tgt_range = range(tgt_offsets[j], tgt_offsets[j + 1])
        for a in range(src_offsets[i], src_offsets[i + 1]):
            for b in tgt_range:
                out.add((a, b))
    return sorted(out)


def project_corpus(
    links_list: Sequence[Iterable[Link]],
    src_segs: Sequence[Segmentation],
    tgt_segs: Optional[Sequence[Segmentation]] = None,
) -> List[List[Link]]:
    """:func:`project_links` for every sentence pair."""
    if len(links_list) != len(src_segs) or (tgt_segs is not None and len(tgt_segs) != len(src_segs)):
        raise ValueError("links and segmentations must have one entry per sentence pair")
    return [
        project_links(ls, s.offsets, None if tgt_segs is None else tgt_segs[k].offsets)
        for k, (ls, s) in enumerate(zip(links_list, src_segs))
    ]


def collapse_links(
    sub_links: Iterable[Link], src_offsets: Sequence[int], tgt_offsets: Optional[Sequence[int]] = None
) -> List[Link]:
    """Word links from sub-word links: words ``i`` and ``j`` are linked when any piece of ``i`` is linked
    to any piece of ``j`` (the usual way to score a sub-word aligner against word-level gold).
    ``tgt_offsets=None``: the target side is at word level already. Inverse of :func:`project_links`
    on its output (``collapse_links(project_links(L, s, t), s, t) == sorted(set(L))``)."""
    _check_offsets(src_offsets, "source")
    s_word = piece_to_word(src_offsets)
    t_word = None
    if tgt_offsets is not None:
        _check_offsets(tgt_offsets, "target")
        t_word = piece_to_word(tgt_offsets)
    out = set()
    for a, b in sub_links:
        if not 0 <= a < len(s_word):
            raise ValueError(f"link {a}-{b}: source piece {a} out of range for {len(s_word)} pieces")
        if t_word is not None and not 0 <= b < len(t_word):
            raise ValueError(f"link {a}-{b}: target piece {b} out of range for {len(t_word)} pieces")
        out.add((s_word[a], b if t_word is None else t_word[b]))
    return sorted(out)


def collapse_order(sub_order: Sequence[int], offsets: Sequence[int]) -> List[int]:
    """Word order from a sub-word order.

    ``sub_order[r]`` = the piece put at position ``r``. Each word gets the **mean** position of its
    pieces in ``sub_order``; words are sorted by that mean, ties by source index. The result is always a
    permutation of the words, and :func:`expand_order` of a word order collapses back to it.
    """
    _check_offsets(offsets, "word")
    n_pieces = offsets[-1]
    if len(sub_order) != n_pieces or sorted(sub_order) != list(range(n_pieces)):
        raise ValueError(f"sub-word order is not a permutation of range({n_pieces}): {list(sub_order)}")
    pos = [0] * n_pieces
    for r, p in enumerate(sub_order):
        pos[p] = r
    n_words = len(offsets) - 1
    key = [Fraction(sum(pos[offsets[i]:offsets[i + 1]]), offsets[i + 1] - offsets[i]) for i in range(n_words)]
    return sorted(range(n_words), key=lambda i: (key[i], i))


def expand_order(word_order: Sequence[int], offsets: Sequence[int]) -> List[int]:
    """Sub-word order from a word order: the words in ``word_order``, each word's pieces in source order."""
    _check_offsets(offsets, "word")
    n_words = len(offsets) - 1
    if len(word_order) != n_words or sorted(word_order) != list(range(n_words)):
        raise ValueError(f"word order is not a permutation of range({n_words}): {list(word_order)}")
    out: List[int] = []
    for i in word_order:
        out.extend(range(offsets[i], offsets[i + 1]))
    return out


# --- pyonmttok models -------------------------------------------------------------------------------------


def _tokenizer(kind: str, model_path: Optional[str] = None):
    import pyonmttok

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    kwargs: Dict[str, str] = {}
    if model_path is not None:
        kwargs["bpe_model_path" if kind == "bpe" else "sp_model_path"] = model_path
    return pyonmttok.Tokenizer("space", joiner_annotate=True, joiner=JOINER, **kwargs)


class SubwordModel:
    """A BPE or SentencePiece model applied word by word (pyonmttok, ``"space"`` mode, joiner-annotated).

    ``segment(words)`` -> :class:`Segmentation`. Word segmentations are cached (segmentation is
    deterministic: no BPE dropout, no SentencePiece sampling). A word pyonmttok turns into no piece at
    all (a token made only of Unicode spaces, e.g. U+3000 in KFTT) is kept as one piece, unchanged.
    """

    def __init__(self, kind: str, model_path: str):
        if not os.path.isfile(model_path):
            raise FileNotFoundError(f"{kind} model {model_path} not found")
        self.kind = kind
        self.model_path = model_path
        self.tokenizer = _tokenizer(kind, model_path)
        self._cache: Dict[str, List[str]] = {}

    @classmethod
    def learn(
        cls,
        sentences: Iterable[Sequence[str]],
        model_path: str,
        kind: str = "bpe",
        size: int = 8000,
        **learner_options,
    ) -> "SubwordModel":
        """Learn a model on tokenized sentences and write it to ``model_path``.

        ``kind="bpe"``: ``size`` merge operations (``pyonmttok.BPELearner(symbols=size)``; fewer merges
        are learned if no pair is frequent enough). ``kind="sentencepiece"``: a unigram model with a
        vocabulary of ``size`` pieces (``pyonmttok.SentencePieceLearner(vocab_size=size)``; other
        SentencePiece trainer options, e.g. ``model_type="bpe"``, go in ``learner_options``).
        """
        import pyonmttok

        size = int(size)
        if size < 1:
            raise ValueError(f"size must be positive, got {size}")
        tok = _tokenizer(kind)
        if kind == "bpe":
            learner = pyonmttok.BPELearner(tokenizer=tok, symbols=size, **learner_options)
        else:
            opts = dict(character_coverage=1.0, **learner_options)
            learner = pyonmttok.SentencePieceLearner(tokenizer=tok, vocab_size=size, **opts)
        n = 0
        for words in sentences:
            if isinstance(words, str):
                raise TypeError("learn() takes token lists, not strings")
            learner.ingest(" ".join(words))
            n += 1
        if n == 0:
            raise ValueError("no sentences to learn a sub-word model from")
        os.makedirs(os.path.dirname(os.path.abspath(model_path)), exist_ok=True)
        learner.learn(model_path)
        return cls(kind, model_path)

    def segment_word(self, word: str) -> List[str]:
        pieces = self._cache.get(word)
        if pieces is None:
            pieces = list(self.tokenizer.tokenize(word)[0]) or [word]
            # Every word-internal boundary must carry a joiner, so that merge_pieces() sees one word.
            for k in range(1, len(pieces)):
                if not (pieces[k - 1].endswith(JOINER) or pieces[k].startswith(JOINER)):
                    pieces[k - 1] += JOINER
            self._cache[word] = pieces
        return pieces

    def segment(self, words: Sequence[str]) -> Segmentation:
        if isinstance(words, str):
            raise TypeError("segment() takes a list of words, not a string")
        pieces: List[str] = []
        offsets = [0]
        for w in words:
            pieces.extend(self.segment_word(w))
            offsets.append(len(pieces))
        return Segmentation(pieces, offsets)

    def segment_corpus(self, sentences: Iterable[Sequence[str]]) -> List[Segmentation]:
        return [self.segment(s) for s in sentences]

    def segmentation(self):
        """The :class:`~onmt_xl.core.segmentation.SegmentationScheme` of this model's pieces (joiner ``￭``, the
        model file hashed), to record in a preorderer trained on them (``Preorderer.train(segmentation=...)``)."""
        from onmt_xl.core.segmentation import SegmentationScheme, marker

        return SegmentationScheme.subword(marker("joiner", JOINER), self.model_path, "pyonmttok")

    def tokenize_line(self, line: str) -> List[str]:
        """pyonmttok's own tokenization of a whole line (what OpenNMT's ``onmt_tokenize`` gives)."""
        return list(self.tokenizer.tokenize(line)[0])
