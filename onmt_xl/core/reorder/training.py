"""Training of the BTG preorderer: the averaged latent-oracle perceptron of :mod:`onmt_xl.core.reorder.parser`
(Neubig et al. 2012), over one shard per thread (``mix``) or minibatches (``minibatch``).

:meth:`onmt_xl.core.reorder.preorderer.Preorderer.train` documents the settings; this module turns sentences
and alignments into the flat arrays the compiled passes read, runs the passes and averages the weights.

The threads share the work as ``parallel`` says: ``"mix"`` (iterative parameter mixing, McDonald et al. 2010):
each pass cuts the data into one shard per thread, trains a copy of the weights on each shard and averages the
copies -- one synchronization per pass, so it keeps its speed on a machine whose cores are shared, but the
model depends on the number of threads (one thread = the plain online perceptron); ``"minibatch"``: ``batch``
sentences are parsed in parallel with the same weights, then their updates are applied in order -- the same
model for any number of threads, but one synchronization per batch, which stalls when another process holds a
core.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from onmt_xl.core.reorder.features import FEATURE_GROUPS, N_VIEWS, PAD, Vocab
from onmt_xl.core.reorder.oracle import ATTACH_NULL, target_ranks

logger = logging.getLogger("onmt_xl.core.reorder.preorderer")

PARALLEL_MODES = ("mix", "minibatch")


@dataclass
class EpochStats:
    """One training pass: summed Kendall losses of predicted and latent-oracle trees."""

    iteration: int
    sentences: int
    pred_loss: int
    oracle_loss: int
    updates: int
    seconds: float


@dataclass
class Settings:
    """The settings of one training run (see :meth:`Preorderer.train
    <onmt_xl.core.reorder.preorderer.Preorderer.train>`)."""

    iterations: int
    seed: int
    hash_size: int
    min_count: int
    class_words: int
    n_clusters: int
    cluster_passes: int
    loss_aug: float
    attach_null: str
    tiebreak_null: str
    max_len: int
    max_span: Optional[int]
    batch: int
    parallel: str
    progress: bool
    features: Tuple[str, ...] = ()  # feature groups added to the base templates (features.FEATURE_GROUPS)
    tagger: Optional[Any] = None  # a tagger.Tagger, for the "pos" group


@dataclass
class Corpus:
    """The kept training sentences as the compiled passes read them: padded ids ``ws, cs, gs`` of all
    sentences end to end, each sentence's ``pad_off`` and length ``lens``, target ranks ``flat1``
    (tie-broken: ``flat2``) end to end with their offsets ``rank_off``."""

    ws: np.ndarray
    cs: np.ndarray
    gs: np.ndarray
    pad_off: np.ndarray
    lens: np.ndarray
    flat1: np.ndarray
    flat2: np.ndarray
    rank_off: np.ndarray
    use_r2: bool


def check_hash_size(hash_size: int) -> None:
    if hash_size < 2 or hash_size & (hash_size - 1):
        raise ValueError(f"hash_size must be a power of two >= 2, got {hash_size}")


def check_settings(settings: Settings, n_sentences: int, n_links: int) -> None:
    """Raise ``ValueError`` for settings no training can use."""
    if n_sentences != n_links:
        raise ValueError(f"{n_sentences} sentences but {n_links} alignment lines")
    check_hash_size(settings.hash_size)
    if settings.batch < 1:
        raise ValueError(f"batch must be >= 1, got {settings.batch}")
    if settings.parallel not in PARALLEL_MODES:
        raise ValueError(f"parallel must be one of {PARALLEL_MODES}, got {settings.parallel!r}")
    unknown = [f for f in settings.features if f not in FEATURE_GROUPS]
    if unknown:
        raise ValueError(f"unknown feature groups {unknown}: the groups are {sorted(FEATURE_GROUPS)}")
    if ("pos" in settings.features) != (settings.tagger is not None):
        raise ValueError("the 'pos' feature group needs a tagger, and a tagger needs the 'pos' group")
    for name in ("attach_null", "tiebreak_null"):
        mode = getattr(settings, name)
        if mode not in ATTACH_NULL:
            raise ValueError(f"{name} must be one of {ATTACH_NULL}, got {mode!r}")


def fset_of(features: Sequence[str]) -> int:
    """The feature-set bit mask of the compiled feature functions for the groups ``features``."""
    out = 0
    for name in features:
        out |= FEATURE_GROUPS[name]
    return out


def flatten(encoded: Sequence[Tuple[np.ndarray, np.ndarray, np.ndarray]]):
    """Concatenate padded ``(w, c, g)`` triples; returns ``ws, cs, gs, pad_off (k,), lens (k,)``."""
    lens = np.array([len(w) - 2 * PAD for w, _, _ in encoded], dtype=np.int64)
    pad_off = np.zeros(len(encoded), dtype=np.int64)
    if len(encoded):
        pad_off[1:] = np.cumsum(lens[:-1] + 2 * PAD)
        ws = np.concatenate([e[0] for e in encoded])
        cs = np.concatenate([e[1] for e in encoded])
        gs = np.concatenate([e[2] for e in encoded])
    else:
        ws = cs = np.zeros(0, dtype=np.int64)
        gs = np.zeros((0, N_VIEWS), dtype=np.int64)
    return ws, cs, gs, pad_off, lens


def kept_sentences(sentences: Sequence[Sequence[str]], max_len: int) -> List[int]:
    """Indices of the sentences trained on: at least 2 tokens and at most ``max_len`` (0: no limit)."""
    keep = [k for k, s in enumerate(sentences) if 2 <= len(s) and (max_len <= 0 or len(s) <= max_len)]
    n_long = sum(1 for s in sentences if max_len > 0 and len(s) > max_len)
    if n_long:
        logger.warning("preorderer: %d training sentences longer than %d tokens left out", n_long, max_len)
    return keep


def prepare(sentences, links_list, keep: List[int], s: Settings) -> Tuple[Vocab, Corpus]:
    """The vocabulary (with word classes) and the :class:`Corpus` of the kept sentences."""
    # ranks first: they validate the links before the (slower) clustering
    use_r2 = s.tiebreak_null != "none" and s.tiebreak_null != s.attach_null
    r1 = [target_ranks(len(sentences[k]), links_list[k], s.attach_null) for k in keep]
    r2 = [target_ranks(len(sentences[k]), links_list[k], s.tiebreak_null) for k in keep] if use_r2 else r1
    vocab = Vocab.build(sentences, min_count=s.min_count, class_words=s.class_words, n_clusters=s.n_clusters,
                        cluster_passes=s.cluster_passes)
    tag = s.tagger.tags if s.tagger is not None else (lambda tokens: None)
    ws, cs, gs, pad_off, lens = flatten([vocab.encode(sentences[k], tag(sentences[k])) for k in keep])
    rank_off = np.zeros(len(keep) + 1, dtype=np.int64)
    rank_off[1:] = np.cumsum(lens)
    flat1 = np.concatenate(r1) if r1 else np.zeros(0, dtype=np.int64)
    flat2 = np.concatenate(r2) if r2 else np.zeros(0, dtype=np.int64)
    return vocab, Corpus(ws, cs, gs, pad_off, lens, flat1, flat2, rank_off, use_r2)


class Perceptron:
    """The weights ``W`` and their running sums ``U`` over the passes (minibatch: step-weighted updates;
    mix: weight sums), with the step count ``step`` that averages them."""

    def __init__(self, s: Settings, max_span: int, n_threads: int):
        self.s, self.max_span, self.n_threads = s, max_span, n_threads
        self.W = np.zeros((s.hash_size, 2), dtype=np.float32)
        self.U = np.zeros((s.hash_size, 2), dtype=np.float64)
        self.step = 0.0
        self.mix = s.parallel == "mix"
        self.fset = fset_of(s.features)

    def run(self, data: Corpus, idx: np.ndarray):
        """Train on the sentences ``idx``; returns (predicted loss, oracle loss, updates)."""
        from onmt_xl.core.reorder.parser import train_pass, train_pass_mix

        s, mask = self.s, self.s.hash_size - 1
        head = (data.ws, data.cs, data.gs, data.pad_off, data.lens, data.flat1, data.flat2, data.rank_off,
                data.use_r2, idx, self.W, self.U)
        if self.mix:
            n_steps, pl, gl, nu = train_pass_mix(*head, float(s.loss_aug), mask, self.fset, int(self.max_span),
                                             self.n_threads)
            self.step += float(n_steps)
        else:
            self.step, pl, gl, nu = train_pass(*head, self.step, float(s.loss_aug), mask, self.fset, int(self.max_span),
                                               int(s.batch), self.n_threads == 1 or s.batch == 1)
        return pl, gl, nu

    def iteration(self, data: Corpus, it: int, perm: np.ndarray) -> EpochStats:
        """One pass over ``perm``, in chunks that set the progress bar's granularity (a multiple of
        ``batch``; the whole pass for ``mix``, one shard per thread)."""
        from onmt_xl.core import progress

        s, n = self.s, len(perm)
        t0 = time.perf_counter()
        chunk = max(n, 1) if self.mix else max(s.batch, 2048 // s.batch * s.batch)
        tot = np.zeros(3, dtype=np.int64)
        desc = f"preorder-train it {it}/{s.iterations}"
        # the parser's first call in a process loads it compiled (numba), compiling it on its very first use
        first = f"{desc} (loading the compiled parser; its first use compiles it, once)" if it == 1 else desc
        with progress.bar(total=n, desc=first, unit="sent", enabled=s.progress, leave=False) as bar:
            for a in range(0, n, chunk):
                idx = perm[a : a + chunk]
                tot += self.run(data, idx)
                if a == 0 and first != desc:
                    bar.set_description(desc, refresh=False)
                bar.update(len(idx))
                bar.set_postfix(loss=f"{tot[0] / max(tot[1] + 1, 1):.3g}x", updates=int(tot[2]))
        stats = EpochStats(it, n, int(tot[0]), int(tot[1]), int(tot[2]), time.perf_counter() - t0)
        logger.info("preorder-train iteration %d: predicted loss %d, oracle loss %d, %d updates, %.1fs",
                    it, stats.pred_loss, stats.oracle_loss, stats.updates, stats.seconds)
        return stats

    def averaged(self) -> np.ndarray:
        """The averaged weights ``(hash_size, 2)`` float32."""
        if not self.step:
            return self.W
        if self.mix:
            return (self.U / self.step).astype(np.float32)
        return (self.W - self.U / self.step).astype(np.float32)


def train_weights(sentences, links_list, s: Settings, n_threads: int):
    """``(vocab, averaged weights, hparams, per-pass EpochStats, train_info)`` of one training run."""
    t_start = time.perf_counter()
    keep = kept_sentences(sentences, s.max_len)
    max_span = s.max_span
    if max_span is None:
        max_span = max((len(sentences[k]) for k in keep), default=0)
    vocab, data = prepare(sentences, links_list, keep, s)
    t_vocab = time.perf_counter() - t_start
    perceptron = Perceptron(s, max_span, n_threads)
    rng = np.random.default_rng(s.seed)
    log = [perceptron.iteration(data, it, rng.permutation(len(keep)).astype(np.int64))
           for it in range(1, s.iterations + 1)]
    hparams: Dict[str, Any] = dict(
        iterations=s.iterations, seed=s.seed, min_count=s.min_count, class_words=s.class_words,
        n_clusters=s.n_clusters, loss_aug=float(s.loss_aug), attach_null=s.attach_null,
        tiebreak_null=s.tiebreak_null, max_len=int(s.max_len), max_span=int(max_span), parallel=s.parallel,
        batch=int(s.batch), train_threads=n_threads, train_sentences=len(keep), features=list(s.features),
        tagger=s.tagger.record() if s.tagger is not None else None)
    info = dict(threads=n_threads, vocab_seconds=t_vocab, seconds=time.perf_counter() - t_start)
    return vocab, perceptron.averaged(), hparams, log, info
