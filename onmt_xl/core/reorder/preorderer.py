"""The discriminative BTG preorderer: predicts a reordering from the source sentence alone.

Neubig, Watanabe and Mori (2012), *Inducing a discriminative parser to optimize machine
translation reordering* (lader), as used by Ding et al. (2020, Sec. 3.1) to obtain the
cross-lingual positions ``pos_XL`` of Eq. 6. Word alignments only provide training targets
(target ranks, see :mod:`onmt_xl.core.reorder.oracle`); at test time the model parses the source
with CKY over BTG trees (:mod:`onmt_xl.core.reorder.parser`) using hashed features
(:mod:`onmt_xl.core.reorder.features`).

**The segmentation it was trained on.** A preorderer means something only on the segmentation of its
training source (words, or the pieces of one sub-word model): applied to another one it still returns a
valid permutation. Format version 3 records that segmentation in the file's header
(:attr:`Preorderer.segmentation`, a :class:`~onmt_xl.core.segmentation.SegmentationScheme`), and its users
check it: the ``xl_position`` transform, ``onmt-xl preorder-apply`` / ``preorder-eval`` /
``show-reordering``. Files of version 2 do not record it: they are accepted, with the
segmentation inferred from their vocabulary (sub-words when its tokens carry joiner, spacer or ``@@``
markers, else words; the sub-word model itself is then unknown) and a warning once per file and process
when loaded, so the checks still see words against sub-words.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from onmt_xl.core.reorder import preorderer_io
from onmt_xl.core.reorder.btg import BTGNode, order_to_pos_xl, tree_from_splits
from onmt_xl.core.reorder.features import Vocab
from onmt_xl.core.reorder.preorderer_io import FORMAT, READABLE_VERSIONS, VERSION  # noqa: F401  (public names)
from onmt_xl.core.reorder.threads import caller_threads, set_threads
from onmt_xl.core.reorder.training import (
    PARALLEL_MODES,
    EpochStats,
    Settings,
    check_hash_size,
    check_settings,
    flatten,
    fset_of,
    train_weights,
)
from onmt_xl.core.segmentation import SegmentationMismatch, SegmentationScheme, check_tokens, detect

__all__ = ["Preorderer", "EpochStats", "PARALLEL_MODES", "set_threads"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_LEN = 400
DEFAULT_ITERATIONS = 10
DEFAULT_CLUSTERS = 256
DEFAULT_BATCH = 16
DEFAULT_PARALLEL = "mix"


def _nodes_to_tree(nodes: np.ndarray, n: int) -> Optional[BTGNode]:
    """:class:`BTGNode` tree from the ``(s, m, e, t)`` rows of :func:`onmt_xl.core.reorder.parser.extract`."""
    kids = {(int(s), int(e)): (int(m), bool(t)) for s, m, e, t in nodes.tolist()}
    return tree_from_splits(n, lambda s, e: kids[s, e])


_WARNED_UNRECORDED: set = set()


def _warn_unrecorded(path: str, model: "Preorderer") -> None:
    """Warn once per file and process that a version-2 model records no segmentation."""
    if model.version < 3 and os.path.abspath(path) not in _WARNED_UNRECORDED:
        _WARNED_UNRECORDED.add(os.path.abspath(path))
        logger.warning("%s: preorderer format version %d does not record the segmentation it was trained on; "
                       "taken as %s. Retrain it (onmt-xl preorder-train) to record it.",
                       path, model.version, model.segmentation.describe())


class _IntHParam:
    """An int attribute stored in the model's ``hparams`` (so it is saved with them)."""

    def __init__(self, key: str, doc: str):
        self.key, self.__doc__ = key, doc

    def __get__(self, model, owner=None):
        return self if model is None else int(model.hparams[self.key])

    def __set__(self, model, value) -> None:
        model.hparams[self.key] = int(value)


class Preorderer:
    """A trained preorderer. ``reorder(tokens)`` -> ``order``; ``pos_xl(tokens)`` -> its inverse.

    ``segmentation``: what its training source was (see the module docstring); ``None`` infers it
    from the vocabulary's tokens.
    """

    def __init__(self, vocab: Vocab, weights: np.ndarray, hparams: Optional[Dict[str, Any]] = None,
                 segmentation: Optional[SegmentationScheme] = None):
        weights = np.ascontiguousarray(weights, dtype=np.float32)
        if weights.ndim != 2 or weights.shape[1] != 2:
            raise ValueError(f"weights must have shape (hash_size, 2), got {weights.shape}")
        check_hash_size(weights.shape[0])
        self.vocab = vocab
        self.weights = weights
        self.version = VERSION
        self.segmentation: SegmentationScheme = segmentation or preorderer_io.vocab_segmentation(vocab, self.version)
        self.hparams: Dict[str, Any] = dict(hparams or {})
        self.hparams["hash_size"] = weights.shape[0]
        self.hparams.setdefault("max_len", DEFAULT_MAX_LEN)
        self.hparams.setdefault("max_span", 0)
        from onmt_xl.core.reorder.tagger import make_tagger

        self.tagger = make_tagger(self.hparams.get("tagger"))
        self.fset = fset_of(self.features)
        self.train_log: List[EpochStats] = []
        self.train_info: Dict[str, Any] = {}

    # --- properties --------------------------------------------------------------------------

    @property
    def mask(self) -> int:
        return self.weights.shape[0] - 1

    max_len = _IntHParam("max_len", "Longest training sentence; longer inputs are decoded with span limit "
                         "``max_len`` (0 = none).")
    max_span = _IntHParam("max_span", "Span limit ``K`` of decoding (0 = exact CKY up to ``max_len`` tokens): no "
                          "inverted node spans more than ``K`` tokens, and the cost is ``O(n K^2)`` (see "
                          ":mod:`onmt_xl.core.reorder.parser`).")

    @property
    def features(self) -> Tuple[str, ...]:
        """The feature groups added to the base templates (:data:`~onmt_xl.core.reorder.features.FEATURE_GROUPS`; none
        for files of format versions 2 and 3)."""
        return tuple(self.hparams.get("features") or ())

    @property
    def effective_span(self) -> int:
        """The span limit the parser gets: ``max_span``, else ``max_len``, else 0 (no limit)."""
        limits = [k for k in (self.max_span, self.max_len) if k > 0]
        return min(limits) if limits else 0

    # --- training ----------------------------------------------------------------------------

    @classmethod
    def train(
        cls,
        sentences: Sequence[Sequence[str]],
        links_list: Sequence[Sequence[Tuple[int, int]]],
        iterations: int = DEFAULT_ITERATIONS,
        seed: int = 1,
        hash_size: int = 1 << 20,
        min_count: int = 2,
        class_words: int = 100,
        n_clusters: int = DEFAULT_CLUSTERS,
        cluster_passes: int = 10,
        loss_aug: float = 1.0,
        attach_null: str = "none",
        tiebreak_null: str = "left",
        max_len: int = DEFAULT_MAX_LEN,
        max_span: Optional[int] = None,
        batch: int = DEFAULT_BATCH,
        threads: Optional[int] = None,
        parallel: str = DEFAULT_PARALLEL,
        progress: bool = True,
        segmentation: Optional[SegmentationScheme] = None,
        features: Sequence[str] = (),
        tagger: Optional[str] = None,
    ) -> "Preorderer":
        """Averaged latent-oracle perceptron (see :mod:`onmt_xl.core.reorder.parser`).

        ``sentences[k]``: source tokens; ``links_list[k]``: Pharaoh pairs ``(src, tgt)``.
        The loss is the Kendall loss over the target ranks with ``attach_null`` (see
        :func:`~onmt_xl.core.reorder.oracle.target_ranks`); its ties are broken by the loss with
        ``tiebreak_null`` attachment (``"none"``: no tie-breaking), which keeps unaligned words
        next to a neighbour when the aligned words do not decide. ``n_clusters`` > 0: word classes
        from exchange clustering of ``sentences``. Sentences longer than ``max_len`` tokens are
        left out of training. ``max_span``: the span limit of training and decoding (see
        :attr:`max_span`); ``None`` takes the longest training sentence, so that no inverted node
        is longer than any seen in training, ``0`` is exact CKY. ``loss_aug`` > 0 trains with
        loss-augmented decoding.

        ``threads``: numba threads (default: all cores); ``parallel``: how they share the work, ``"mix"``
        or ``"minibatch"`` (see :mod:`onmt_xl.core.reorder.training`).

        ``segmentation``: the segmentation of ``sentences``, recorded in the model (words, or a sub-word
        model, see :mod:`onmt_xl.core.segmentation`); ``None`` records what the tokens show (sub-words of an
        unrecorded model when they carry markers, else words). Raises
        :class:`~onmt_xl.core.segmentation.SegmentationMismatch` when the tokens contradict it.

        ``features``: groups of templates added to the base set (``"context"``: a wider window and word
        conjunctions of the children's ends, see :mod:`onmt_xl.core.reorder.features`); ``tagger``: a morphological
        tagger whose part-of-speech views the ``"pos"`` group reads (``"unidic"``, :mod:`onmt_xl.core.reorder.tagger`;
        it implies that group). Both are recorded in the model, which then tags its own input.
        """
        from onmt_xl.core.reorder.tagger import make_tagger

        features = tuple(features)
        if tagger not in (None, "none") and "pos" not in features:
            features += ("pos",)
        if "pos" in features and tagger in (None, "none"):
            raise ValueError("the 'pos' feature group needs a tagger (tagger='unidic')")
        features = tuple(sorted(set(features)))  # check_settings rejects unknown groups
        tagger_obj = make_tagger(tagger, "training with")
        if segmentation is None:
            segmentation = detect(sentences).with_note("")
        else:
            problem = check_tokens(segmentation, sentences, "the training sentences were declared as",
                                   "declare the segmentation they are in")
            if problem:
                raise SegmentationMismatch(problem)
        settings = Settings(iterations, seed, hash_size, min_count, class_words, n_clusters, cluster_passes, loss_aug,
                            attach_null, tiebreak_null, max_len, max_span, batch, parallel, progress, features,
                            tagger_obj)
        check_settings(settings, len(sentences), len(links_list))
        import numba

        threads_before = numba.get_num_threads()
        n_threads = set_threads(threads)
        try:
            vocab, weights, hparams, log, info = train_weights(sentences, links_list, settings, n_threads)
        finally:
            numba.set_num_threads(threads_before)
        model = cls(vocab, weights, hparams, segmentation)
        model.train_log, model.train_info = log, info
        return model

    # --- inference ---------------------------------------------------------------------------

    def _encode(self, tokens: Sequence[str]):
        """Padded ids and views of ``tokens``, tagged by the model's tagger when it has one."""
        if isinstance(tokens, str):
            raise TypeError("expected a list of tokens, not a string")
        return self.vocab.encode(tokens, self.tagger.tags(tokens) if self.tagger is not None else None)

    def reorder(self, tokens: Sequence[str]) -> List[int]:
        """Predicted ``order`` (source indices in target-like order): a BTG-valid permutation."""
        from onmt_xl.core.reorder.parser import decode_sentence

        if isinstance(tokens, str):
            raise TypeError("reorder() takes a list of tokens, not a string")
        n = len(tokens)
        if n <= 1:
            return list(range(n))
        out = np.empty(n, dtype=np.int64)
        w, c, g = self._encode(tokens)
        decode_sentence(w, c, g, n, self.weights, self.mask, self.fset, self.effective_span, out)
        return out.tolist()

    def reorder_tree(self, tokens: Sequence[str]) -> Tuple[List[int], Optional[BTGNode], float]:
        """``(order, tree, model score)`` of the predicted BTG tree (``tree`` is ``None`` when empty)."""
        from onmt_xl.core.reorder.parser import decode_tree

        if isinstance(tokens, str):
            raise TypeError("reorder_tree() takes a list of tokens, not a string")
        n = len(tokens)
        w, c, g = self._encode(tokens)
        order, nodes, score = decode_tree(w, c, g, n, self.weights, self.mask, self.fset, self.effective_span)
        return order.tolist(), _nodes_to_tree(nodes, n), float(score)

    def pos_xl(self, tokens: Sequence[str]) -> List[int]:
        """Cross-lingual positions (Eq. 6): ``pos_xl[j]`` = place of token ``j`` in the reordering."""
        return order_to_pos_xl(self.reorder(tokens))

    def reorder_batch(self, batch: Sequence[Sequence[str]]) -> List[List[int]]:
        """:meth:`reorder` for many sentences in one compiled call, in parallel over numba's threads (see
        :func:`set_threads`), at most as many as torch uses where torch is loaded, whose thread count it leaves as
        it was (:func:`~onmt_xl.core.reorder.threads.caller_threads`)."""
        from onmt_xl.core.reorder.parser import decode_batch

        for toks in batch:
            if isinstance(toks, str):
                raise TypeError("reorder_batch() takes lists of tokens, not strings")
        if not batch:
            return []
        ws, cs, gs, pad_off, lens = flatten([self._encode(t) for t in batch])
        with caller_threads() as threads:
            flat = decode_batch(ws, cs, gs, pad_off, lens, self.weights, self.mask, self.fset, self.effective_span,
                                threads == 1)
        out, pos = [], 0
        for n in lens.tolist():
            out.append(flat[pos : pos + n].tolist())
            pos += n
        return out

    def pos_xl_batch(self, batch: Sequence[Sequence[str]]) -> List[List[int]]:
        return [order_to_pos_xl(o) for o in self.reorder_batch(batch)]

    # --- persistence -------------------------------------------------------------------------

    def header(self) -> Dict[str, Any]:
        """The file header; a model read from a version-2 file keeps version 2 (no segmentation record)."""
        return preorderer_io.header(self)

    def __getstate__(self) -> Dict[str, Any]:
        """Compact state: header, vocabulary, clusters and the non-zero weight rows (cheap to pickle)."""
        return preorderer_io.pack(self)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        vocab, weights, hparams, segmentation, version = preorderer_io.unpack(state)
        self.__init__(vocab, weights, hparams, segmentation)  # type: ignore[misc]
        self.version = version  # written back as read: version 2 keeps no segmentation record

    def save(self, path: str) -> None:
        """One versioned ``.npz`` file (written to ``path`` as given, no suffix added)."""
        preorderer_io.write(self, path)

    @classmethod
    def load(cls, path: str) -> "Preorderer":
        """Read a model written by :meth:`save`; raises :class:`~onmt_xl.core.errors.XLInputError` naming ``path`` if
        the file is missing, unreadable, of another format or of another format version."""
        def restore(state):
            model = cls.__new__(cls)
            model.__setstate__(state)
            return model

        from onmt_xl.core.reorder.tagger import TaggerMissing

        try:
            model = preorderer_io.read(path, restore)
        except TaggerMissing as exc:
            raise TaggerMissing(path, None, exc.problem.replace("this preorderer uses", "uses", 1)) from None
        _warn_unrecorded(path, model)
        return model
