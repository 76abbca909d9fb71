"""The discriminative BTG preorderer: predicts a reordering from the source sentence alone.

Neubig, Watanabe and Mori (2012), *Inducing a discriminative parser to optimize machine
translation reordering* (lader), as used by Ding et al. (2020, Sec. 3.1) to obtain the
cross-lingual positions ``pos_XL`` of Eq. 6. Word alignments only provide training targets
(target ranks, see :mod:`onmt_xl.reorder.oracle`); at test time the model parses the source
with CKY over BTG trees (:mod:`onmt_xl.reorder.parser`) using hashed features
(:mod:`onmt_xl.reorder.features`).

**The segmentation it was trained on.** A preorderer means something only on the segmentation of its
training source (words, or the pieces of one sub-word model): applied to another one it still returns a
valid permutation. Format version 3 records that segmentation in the file's header
(:attr:`Preorderer.segmentation`, a :class:`~onmt_xl.segmentation.SegmentationScheme`), and its users
check it: the ``xl_position`` transform, ``onmt-xl preorder-apply`` / ``preorder-eval`` /
``show-reordering``. Files of version 2 do not record it: they are accepted, with the
segmentation inferred from their vocabulary (sub-words when its tokens carry joiner, spacer or ``@@``
markers, else words; the sub-word model itself is then unknown) and a warning once per file and process
when loaded, so the checks still see words against sub-words.
"""

from __future__ import annotations

import io
import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from onmt_xl.errors import XLInputError
from onmt_xl.reorder.btg import BTGNode, order_to_pos_xl, tree_from_splits
from onmt_xl.reorder.features import PAD, Vocab
from onmt_xl.reorder.oracle import ATTACH_NULL, target_ranks
from onmt_xl.reorder.threads import ensure_threading, set_threads
from onmt_xl.segmentation import SegmentationMismatch, SegmentationScheme, check_tokens, detect

logger = logging.getLogger(__name__)

FORMAT = "onmt_xl.preorderer"
VERSION = 3  # 2: exchange-clustering classes, three-view features, span limit; 3: + the source segmentation
READABLE_VERSIONS = (2, 3)  # version 2 records no segmentation
DEFAULT_MAX_LEN = 400
DEFAULT_ITERATIONS = 10
DEFAULT_CLUSTERS = 256
DEFAULT_BATCH = 16
PARALLEL_MODES = ("mix", "minibatch")
DEFAULT_PARALLEL = "mix"


@dataclass
class EpochStats:
    """One training pass: summed Kendall losses of predicted and latent-oracle trees."""

    iteration: int
    sentences: int
    pred_loss: int
    oracle_loss: int
    updates: int
    seconds: float


def _check_size(hash_size: int) -> None:
    if hash_size < 2 or hash_size & (hash_size - 1):
        raise ValueError(f"hash_size must be a power of two >= 2, got {hash_size}")


def _flatten(encoded: Sequence[Tuple[np.ndarray, np.ndarray, np.ndarray]]):
    """Concatenate padded ``(w, c, g)`` triples; returns ``ws, cs, gs, pad_off (k,), lens (k,)``."""
    lens = np.array([len(w) - 2 * PAD for w, _, _ in encoded], dtype=np.int64)
    pad_off = np.zeros(len(encoded), dtype=np.int64)
    if len(encoded):
        pad_off[1:] = np.cumsum(lens[:-1] + 2 * PAD)
        ws = np.concatenate([e[0] for e in encoded])
        cs = np.concatenate([e[1] for e in encoded])
        gs = np.concatenate([e[2] for e in encoded])
    else:
        ws = cs = gs = np.zeros(0, dtype=np.int64)
    return ws, cs, gs, pad_off, lens


def _nodes_to_tree(nodes: np.ndarray, n: int) -> Optional[BTGNode]:
    """:class:`BTGNode` tree from the ``(s, m, e, t)`` rows of :func:`onmt_xl.reorder.parser.extract`."""
    kids = {(int(s), int(e)): (int(m), bool(t)) for s, m, e, t in nodes.tolist()}
    return tree_from_splits(n, lambda s, e: kids[s, e])


_WARNED_UNRECORDED: set = set()


def _vocab_segmentation(vocab, version: int) -> SegmentationScheme:
    """The segmentation the vocabulary's tokens show (for models that do not record it)."""
    note = "inferred from the vocabulary"
    if version < 3:
        note += f"; format version {version} records no segmentation"
    return detect([list(vocab.tokens)], note=note)


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
        _check_size(weights.shape[0])
        self.vocab = vocab
        self.weights = weights
        self.version = VERSION
        self.segmentation: SegmentationScheme = segmentation or _vocab_segmentation(vocab, self.version)
        self.hparams: Dict[str, Any] = dict(hparams or {})
        self.hparams["hash_size"] = weights.shape[0]
        self.hparams.setdefault("max_len", DEFAULT_MAX_LEN)
        self.hparams.setdefault("max_span", 0)
        self.train_log: List[EpochStats] = []
        self.train_info: Dict[str, Any] = {}

    # --- properties --------------------------------------------------------------------------

    @property
    def mask(self) -> int:
        return self.weights.shape[0] - 1

    @property
    def max_len(self) -> int:
        """Longest training sentence; longer inputs are decoded with span limit ``max_len`` (0 = none)."""
        return int(self.hparams["max_len"])

    @max_len.setter
    def max_len(self, value: int) -> None:
        self.hparams["max_len"] = int(value)

    @property
    def max_span(self) -> int:
        """Span limit ``K`` of decoding (0 = exact CKY up to ``max_len`` tokens): no inverted node
        spans more than ``K`` tokens, and the cost is ``O(n K^2)`` (see :mod:`onmt_xl.reorder.parser`)."""
        return int(self.hparams["max_span"])

    @max_span.setter
    def max_span(self, value: int) -> None:
        self.hparams["max_span"] = int(value)

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
    ) -> "Preorderer":
        """Averaged latent-oracle perceptron (see :mod:`onmt_xl.reorder.parser`).

        ``sentences[k]``: source tokens; ``links_list[k]``: Pharaoh pairs ``(src, tgt)``.
        The loss is the Kendall loss over the target ranks with ``attach_null`` (see
        :func:`~onmt_xl.reorder.oracle.target_ranks`); its ties are broken by the loss with
        ``tiebreak_null`` attachment (``"none"``: no tie-breaking), which keeps unaligned words
        next to a neighbour when the aligned words do not decide. ``n_clusters`` > 0: word classes
        from exchange clustering of ``sentences``. Sentences longer than ``max_len`` tokens are
        left out of training. ``max_span``: the span limit of training and decoding (see
        :attr:`max_span`); ``None`` takes the longest training sentence, so that no inverted node
        is longer than any seen in training, ``0`` is exact CKY. ``loss_aug`` > 0 trains with
        loss-augmented decoding.

        ``threads``: numba threads (default: all cores). ``parallel`` chooses how they share the
        work: ``"mix"`` (iterative parameter mixing, McDonald et al. 2010): each pass cuts the
        data into one shard per thread, trains a copy of the weights on each shard and averages
        the copies -- one synchronization per pass, so it keeps its speed on a machine whose cores
        are shared, but the model depends on the number of threads (one thread = the plain online
        perceptron); ``"minibatch"``: ``batch`` sentences are parsed in parallel with the same
        weights, then their updates are applied in order -- the same model for any number of
        threads, but one synchronization per batch, which stalls when another process holds a core.

        ``segmentation``: the segmentation of ``sentences``, recorded in the model (words, or a sub-word
        model, see :mod:`onmt_xl.segmentation`); ``None`` records what the tokens show (sub-words of an
        unrecorded model when they carry markers, else words). Raises
        :class:`~onmt_xl.segmentation.SegmentationMismatch` when the tokens contradict it.
        """
        if segmentation is None:
            segmentation = detect(sentences).with_note("")
        else:
            problem = check_tokens(segmentation, sentences, "the training sentences were declared as",
                                   "declare the segmentation they are in")
            if problem:
                raise SegmentationMismatch(problem)
        if len(sentences) != len(links_list):
            raise ValueError(f"{len(sentences)} sentences but {len(links_list)} alignment lines")
        _check_size(hash_size)
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if parallel not in PARALLEL_MODES:
            raise ValueError(f"parallel must be one of {PARALLEL_MODES}, got {parallel!r}")
        for name, mode in (("attach_null", attach_null), ("tiebreak_null", tiebreak_null)):
            if mode not in ATTACH_NULL:
                raise ValueError(f"{name} must be one of {ATTACH_NULL}, got {mode!r}")
        import numba

        threads_before = numba.get_num_threads()
        n_threads = set_threads(threads)
        try:
            model = cls._train(sentences, links_list, iterations, seed, hash_size, min_count, class_words, n_clusters,
                               cluster_passes, loss_aug, attach_null, tiebreak_null, max_len, max_span, batch,
                               n_threads, parallel, progress)
        finally:
            numba.set_num_threads(threads_before)
        model.segmentation = segmentation
        return model

    @classmethod
    def _train(cls, sentences, links_list, iterations, seed, hash_size, min_count, class_words, n_clusters,
               cluster_passes, loss_aug, attach_null, tiebreak_null, max_len, max_span, batch, n_threads, parallel,
               progress):
        from tqdm import tqdm

        from onmt_xl.reorder.parser import train_pass, train_pass_mix

        t_start = time.perf_counter()
        keep = [k for k, s in enumerate(sentences) if 2 <= len(s) and (max_len <= 0 or len(s) <= max_len)]
        if max_span is None:
            max_span = max((len(sentences[k]) for k in keep), default=0)
        n_long = sum(1 for s in sentences if max_len > 0 and len(s) > max_len)
        if n_long:
            logger.warning("preorderer: %d training sentences longer than %d tokens left out", n_long, max_len)
        # ranks first: they validate the links before the (slower) clustering
        use_r2 = tiebreak_null != "none" and tiebreak_null != attach_null
        r1 = [target_ranks(len(sentences[k]), links_list[k], attach_null) for k in keep]
        r2 = [target_ranks(len(sentences[k]), links_list[k], tiebreak_null) for k in keep] if use_r2 else r1
        vocab = Vocab.build(sentences, min_count=min_count, class_words=class_words, n_clusters=n_clusters,
                            cluster_passes=cluster_passes)
        t_vocab = time.perf_counter() - t_start
        ws, cs, gs, pad_off, lens = _flatten([vocab.encode(sentences[k]) for k in keep])
        rank_off = np.zeros(len(keep) + 1, dtype=np.int64)
        rank_off[1:] = np.cumsum(lens)
        flat1 = np.concatenate(r1) if r1 else np.zeros(0, dtype=np.int64)
        flat2 = np.concatenate(r2) if r2 else np.zeros(0, dtype=np.int64)

        W = np.zeros((hash_size, 2), dtype=np.float32)
        U = np.zeros((hash_size, 2), dtype=np.float64)  # minibatch: step-weighted updates; mix: weight sums
        mask = hash_size - 1
        rng = np.random.default_rng(seed)
        step = 0.0
        log: List[EpochStats] = []
        mix = parallel == "mix"
        # progress-bar granularity: a multiple of batch; a whole pass for "mix" (one shard per thread)
        chunk = max(len(keep), 1) if mix else max(batch, 2048 // batch * batch)
        for it in range(1, iterations + 1):
            t0 = time.perf_counter()
            perm = rng.permutation(len(keep)).astype(np.int64)
            tot = np.zeros(3, dtype=np.int64)
            with tqdm(total=len(keep), desc=f"preorder-train it {it}/{iterations}", unit="sent",
                      disable=None if progress else True, leave=False) as bar:
                for a in range(0, len(perm), chunk):
                    idx = perm[a : a + chunk]
                    if mix:
                        n_steps, pl, gl, nu = train_pass_mix(ws, cs, gs, pad_off, lens, flat1, flat2, rank_off, use_r2,
                                                             idx, W, U, float(loss_aug), mask, int(max_span), n_threads)
                        step += float(n_steps)
                    else:
                        step, pl, gl, nu = train_pass(ws, cs, gs, pad_off, lens, flat1, flat2, rank_off, use_r2, idx,
                                                      W, U, step, float(loss_aug), mask, int(max_span), int(batch),
                                                      n_threads == 1 or batch == 1)
                    tot += (pl, gl, nu)
                    bar.update(len(idx))
                    bar.set_postfix(loss=f"{tot[0] / max(tot[1] + 1, 1):.3g}x", updates=int(tot[2]))
            stats = EpochStats(it, len(keep), int(tot[0]), int(tot[1]), int(tot[2]), time.perf_counter() - t0)
            log.append(stats)
            logger.info("preorder-train iteration %d: predicted loss %d, oracle loss %d, %d updates, %.1fs",
                        it, stats.pred_loss, stats.oracle_loss, stats.updates, stats.seconds)
        if not step:
            avg = W
        elif mix:
            avg = (U / step).astype(np.float32)
        else:
            avg = (W - U / step).astype(np.float32)
        hparams = dict(iterations=iterations, seed=seed, min_count=min_count, class_words=class_words,
                       n_clusters=n_clusters, loss_aug=float(loss_aug), attach_null=attach_null,
                       tiebreak_null=tiebreak_null, max_len=int(max_len), max_span=int(max_span), parallel=parallel,
                       batch=int(batch), train_threads=n_threads, train_sentences=len(keep))
        model = cls(vocab, avg, hparams)
        model.train_log = log
        model.train_info = dict(threads=n_threads, vocab_seconds=t_vocab, seconds=time.perf_counter() - t_start)
        return model

    # --- inference ---------------------------------------------------------------------------

    def _encode(self, tokens: Sequence[str]):
        if isinstance(tokens, str):
            raise TypeError("expected a list of tokens, not a string")
        return self.vocab.encode(tokens)

    def reorder(self, tokens: Sequence[str]) -> List[int]:
        """Predicted ``order`` (source indices in target-like order): a BTG-valid permutation."""
        from onmt_xl.reorder.parser import decode_sentence

        if isinstance(tokens, str):
            raise TypeError("reorder() takes a list of tokens, not a string")
        n = len(tokens)
        if n <= 1:
            return list(range(n))
        out = np.empty(n, dtype=np.int64)
        w, c, g = self.vocab.encode(tokens)
        decode_sentence(w, c, g, n, self.weights, self.mask, self.effective_span, out)
        return out.tolist()

    def reorder_tree(self, tokens: Sequence[str]) -> Tuple[List[int], Optional[BTGNode], float]:
        """``(order, tree, model score)`` of the predicted BTG tree (``tree`` is ``None`` when empty)."""
        from onmt_xl.reorder.parser import decode_tree

        if isinstance(tokens, str):
            raise TypeError("reorder_tree() takes a list of tokens, not a string")
        n = len(tokens)
        w, c, g = self.vocab.encode(tokens)
        order, nodes, score = decode_tree(w, c, g, n, self.weights, self.mask, self.effective_span)
        return order.tolist(), _nodes_to_tree(nodes, n), float(score)

    def pos_xl(self, tokens: Sequence[str]) -> List[int]:
        """Cross-lingual positions (Eq. 6): ``pos_xl[j]`` = place of token ``j`` in the reordering."""
        return order_to_pos_xl(self.reorder(tokens))

    def reorder_batch(self, batch: Sequence[Sequence[str]]) -> List[List[int]]:
        """:meth:`reorder` for many sentences in one compiled call, in parallel over all cores
        (see :func:`set_threads`)."""
        from onmt_xl.reorder.parser import decode_batch

        for toks in batch:
            if isinstance(toks, str):
                raise TypeError("reorder_batch() takes lists of tokens, not strings")
        if not batch:
            return []
        import numba

        ensure_threading()
        ws, cs, gs, pad_off, lens = _flatten([self.vocab.encode(t) for t in batch])
        flat = decode_batch(ws, cs, gs, pad_off, lens, self.weights, self.mask, self.effective_span,
                            numba.get_num_threads() == 1)
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
        out = {"format": FORMAT, "version": self.version, **self.hparams, "class_words": self.vocab.class_words,
               "clustered": self.vocab.clusters is not None}
        if self.version >= 3:
            out["segmentation"] = self.segmentation.to_dict()
        return out

    def __getstate__(self) -> Dict[str, Any]:
        """Compact state: header, vocabulary, clusters and the non-zero weight rows (cheap to pickle)."""
        rows = np.flatnonzero(np.any(self.weights != 0, axis=1))
        clusters = self.vocab.clusters
        return {
            "header": self.header(),
            "vocab": list(self.vocab.tokens),
            "clusters": np.zeros(0, dtype=np.int32) if clusters is None else clusters.astype(np.int32),
            "feat_index": rows.astype(np.int64),
            "feat_weight": self.weights[rows],
        }

    def __setstate__(self, state: Dict[str, Any]) -> None:
        header = state["header"]
        weights = np.zeros((int(header["hash_size"]), 2), dtype=np.float32)
        weights[state["feat_index"]] = state["feat_weight"]
        clusters = np.asarray(state["clusters"], dtype=np.int64) if header.get("clustered") else None
        vocab = Vocab(list(state["vocab"]), int(header["class_words"]), clusters)
        version = int(header.get("version", VERSION))
        if version >= 3:
            if "segmentation" not in header:
                raise ValueError(f"format version {version} header has no segmentation record")
            segmentation = SegmentationScheme.from_dict(header["segmentation"])
        else:
            segmentation = _vocab_segmentation(vocab, version)
        hparams = {k: v for k, v in header.items() if k not in ("format", "version", "clustered", "segmentation")}
        self.__init__(vocab, weights, hparams, segmentation)  # type: ignore[misc]
        if version == 2:
            self.version = 2  # written back as read: version 2, no segmentation record

    def save(self, path: str) -> None:
        """One versioned ``.npz`` file (written to ``path`` as given, no suffix added)."""
        state = self.__getstate__()
        as_bytes = lambda obj: np.frombuffer(json.dumps(obj, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
        buf = io.BytesIO()
        arrays = dict(header=as_bytes(state["header"]), vocab=as_bytes(state["vocab"]),
                      clusters=state["clusters"], feat_index=state["feat_index"], feat_weight=state["feat_weight"])
        np.savez_compressed(buf, **arrays)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str) -> "Preorderer":
        """Read a model written by :meth:`save`; raises :class:`XLInputError` naming ``path`` if
        the file is missing, unreadable, of another format or of another format version."""
        if not os.path.exists(path):
            raise XLInputError(path, None, "preorderer model file not found")
        if os.path.isdir(path):
            raise XLInputError(path, None, "is a directory, expected a preorderer model file")
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except Exception as exc:  # zipfile.BadZipFile, ValueError (pickle/garbage), OSError, EOFError, zlib.error
            raise XLInputError(
                path, None, f"cannot read as a preorderer model (corrupt or not an .npz file): {exc}"
            ) from exc
        if "header" not in arrays:
            raise XLInputError(path, None, f"not an {FORMAT} model (no header; arrays: {sorted(arrays)})")
        try:
            header = json.loads(arrays["header"].tobytes().decode("utf-8"))
        except Exception as exc:
            raise XLInputError(path, None, f"corrupt preorderer header: {exc}") from exc
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            fmt = header.get("format") if isinstance(header, dict) else None
            raise XLInputError(path, None, f"not an {FORMAT} model (format {fmt!r})")
        if header.get("version") not in READABLE_VERSIONS:
            raise XLInputError(
                path, None,
                f"{FORMAT} format version {header.get('version')!r}, but this onmt_xl reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}: retrain the preorderer (onmt-xl preorder-train) "
                "or use a matching onmt_xl",
            )
        try:
            vocab = json.loads(arrays["vocab"].tobytes().decode("utf-8"))
            state = {
                "header": header,
                "vocab": vocab,
                "clusters": np.asarray(arrays.get("clusters", np.zeros(0)), dtype=np.int64),
                "feat_index": np.asarray(arrays["feat_index"], dtype=np.int64),
                "feat_weight": np.asarray(arrays["feat_weight"], dtype=np.float32),
            }
            size = int(header["hash_size"])
            idx = state["feat_index"]
            if idx.size and (idx.min() < 0 or idx.max() >= size) or state["feat_weight"].shape != (idx.size, 2):
                raise ValueError("weight arrays do not match the header's hash_size")
            if header.get("clustered") and state["clusters"].shape != (len(vocab),):
                raise ValueError(f"{state['clusters'].size} word classes for {len(vocab)} vocabulary entries")
            model = cls.__new__(cls)
            model.__setstate__(state)
        except XLInputError:
            raise
        except Exception as exc:
            raise XLInputError(path, None, f"corrupt preorderer model: {exc}") from exc
        if model.version < 3 and os.path.abspath(path) not in _WARNED_UNRECORDED:
            _WARNED_UNRECORDED.add(os.path.abspath(path))
            logger.warning("%s: preorderer format version %d does not record the segmentation it was trained on; "
                           "taken as %s. Retrain it (onmt-xl preorder-train) to record it.",
                           path, model.version, model.segmentation.describe())
        return model
