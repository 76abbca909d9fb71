"""The discriminative BTG preorderer: predicts a reordering from the source sentence alone.

Neubig, Watanabe and Mori (2012), *Inducing a discriminative parser to optimize machine
translation reordering* (lader), as used by Ding et al. (2020, Sec. 3.1) to obtain the
cross-lingual positions ``pos_XL`` of Eq. 6. Word alignments only provide training targets
(target ranks, see :mod:`onmt_xl.reorder.oracle`); at test time the model parses the source
with CKY over BTG trees (:mod:`onmt_xl.reorder.parser`) using hashed features
(:mod:`onmt_xl.reorder.features`).
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
from onmt_xl.reorder.btg import order_to_pos_xl
from onmt_xl.reorder.features import Vocab
from onmt_xl.reorder.oracle import target_ranks

logger = logging.getLogger(__name__)

FORMAT = "onmt_xl.preorderer"
VERSION = 1
DEFAULT_MAX_LEN = 400


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


def _flatten(encoded: Sequence[Tuple[np.ndarray, np.ndarray]]):
    """Concatenate padded ``(w, c)`` pairs; returns ``ws, cs, pad_off (k,), lens (k,)``."""
    lens = np.array([len(w) - 2 for w, _ in encoded], dtype=np.int64)
    pad_off = np.zeros(len(encoded), dtype=np.int64)
    if len(encoded):
        pad_off[1:] = np.cumsum(lens[:-1] + 2)
        ws = np.concatenate([w for w, _ in encoded])
        cs = np.concatenate([c for _, c in encoded])
    else:
        ws = cs = np.zeros(0, dtype=np.int64)
    return ws, cs, pad_off, lens


class Preorderer:
    """A trained preorderer. ``reorder(tokens)`` -> ``order``; ``pos_xl(tokens)`` -> its inverse."""

    def __init__(self, vocab: Vocab, weights: np.ndarray, hparams: Optional[Dict[str, Any]] = None):
        weights = np.ascontiguousarray(weights, dtype=np.float32)
        if weights.ndim != 2 or weights.shape[1] != 2:
            raise ValueError(f"weights must have shape (hash_size, 2), got {weights.shape}")
        _check_size(weights.shape[0])
        self.vocab = vocab
        self.weights = weights
        self.hparams: Dict[str, Any] = dict(hparams or {})
        self.hparams["hash_size"] = weights.shape[0]
        self.hparams.setdefault("max_len", DEFAULT_MAX_LEN)
        self.train_log: List[EpochStats] = []

    # --- properties --------------------------------------------------------------------------

    @property
    def mask(self) -> int:
        return self.weights.shape[0] - 1

    @property
    def max_len(self) -> int:
        """Sentences longer than this are decoded in chunks (0 = always exact)."""
        return int(self.hparams["max_len"])

    @max_len.setter
    def max_len(self, value: int) -> None:
        self.hparams["max_len"] = int(value)

    # --- training ----------------------------------------------------------------------------

    @classmethod
    def train(
        cls,
        sentences: Sequence[Sequence[str]],
        links_list: Sequence[Sequence[Tuple[int, int]]],
        iterations: int = 5,
        seed: int = 1,
        hash_size: int = 1 << 22,
        min_count: int = 2,
        class_words: int = 100,
        loss_aug: float = 1.0,
        attach_null: str = "right",
        max_len: int = DEFAULT_MAX_LEN,
        progress: bool = True,
    ) -> "Preorderer":
        """Averaged latent-oracle perceptron (see :mod:`onmt_xl.reorder.parser`).

        ``sentences[k]``: source tokens; ``links_list[k]``: Pharaoh pairs ``(src, tgt)``.
        Sentences longer than ``max_len`` tokens are left out of training (and decoded in
        chunks at test time). ``loss_aug`` > 0 trains with loss-augmented decoding.
        """
        from tqdm import tqdm

        from onmt_xl.reorder.parser import train_chunk

        if len(sentences) != len(links_list):
            raise ValueError(f"{len(sentences)} sentences but {len(links_list)} alignment lines")
        _check_size(hash_size)
        vocab = Vocab.build(sentences, min_count=min_count, class_words=class_words)
        keep = [k for k, s in enumerate(sentences) if 2 <= len(s) and (max_len <= 0 or len(s) <= max_len)]
        n_long = sum(1 for s in sentences if max_len > 0 and len(s) > max_len)
        if n_long:
            logger.warning("preorderer: %d training sentences longer than %d tokens left out", n_long, max_len)
        encoded = [vocab.encode(sentences[k]) for k in keep]
        ranks = [target_ranks(len(sentences[k]), links_list[k], attach_null) for k in keep]
        ws, cs, pad_off, lens = _flatten(encoded)
        rank_off = np.zeros(len(keep) + 1, dtype=np.int64)
        rank_off[1:] = np.cumsum(lens)
        flat_ranks = np.concatenate(ranks) if ranks else np.zeros(0, dtype=np.int64)

        W = np.zeros((hash_size, 2), dtype=np.float32)
        U = np.zeros((hash_size, 2), dtype=np.float64)
        mask = hash_size - 1
        rng = np.random.default_rng(seed)
        step = 0.0
        log: List[EpochStats] = []
        chunk = 256
        for it in range(1, iterations + 1):
            t0 = time.perf_counter()
            perm = rng.permutation(len(keep)).astype(np.int64)
            tot = np.zeros(3, dtype=np.int64)
            with tqdm(total=len(keep), desc=f"preorder-train it {it}/{iterations}", unit="sent",
                      disable=None if progress else True, leave=False) as bar:
                for a in range(0, len(perm), chunk):
                    idx = perm[a : a + chunk]
                    step, pl, gl, nu = train_chunk(ws, cs, pad_off, flat_ranks, rank_off, idx, W, U,
                                                   step, float(loss_aug), mask)
                    tot += (pl, gl, nu)
                    bar.update(len(idx))
                    bar.set_postfix(loss=f"{tot[0] / max(tot[1] + 1, 1):.3g}x", updates=int(tot[2]))
            stats = EpochStats(it, len(keep), int(tot[0]), int(tot[1]), int(tot[2]), time.perf_counter() - t0)
            log.append(stats)
            logger.info("preorder-train iteration %d: predicted loss %d, oracle loss %d, %d updates, %.1fs",
                        it, stats.pred_loss, stats.oracle_loss, stats.updates, stats.seconds)
        avg = (W - U / max(step, 1.0)).astype(np.float32) if step else W
        hparams = dict(iterations=iterations, seed=seed, min_count=min_count, class_words=class_words,
                       loss_aug=float(loss_aug), attach_null=attach_null, max_len=int(max_len), train_sentences=len(keep))
        model = cls(vocab, avg, hparams)
        model.train_log = log
        return model

    # --- inference ---------------------------------------------------------------------------

    def reorder(self, tokens: Sequence[str]) -> List[int]:
        """Predicted ``order`` (source indices in target-like order): a BTG-valid permutation."""
        from onmt_xl.reorder.parser import decode_sentence

        if isinstance(tokens, str):
            raise TypeError("reorder() takes a list of tokens, not a string")
        n = len(tokens)
        if n <= 1:
            return list(range(n))
        w, c = self.vocab.encode(tokens)
        out = np.empty(n, dtype=np.int64)
        decode_sentence(w, c, n, self.weights, self.mask, self.max_len, out)
        return out.tolist()

    def pos_xl(self, tokens: Sequence[str]) -> List[int]:
        """Cross-lingual positions (Eq. 6): ``pos_xl[j]`` = place of token ``j`` in the reordering."""
        return order_to_pos_xl(self.reorder(tokens))

    def reorder_batch(self, batch: Sequence[Sequence[str]]) -> List[List[int]]:
        """:meth:`reorder` for many sentences in one compiled call (faster)."""
        from onmt_xl.reorder.parser import decode_batch

        for toks in batch:
            if isinstance(toks, str):
                raise TypeError("reorder_batch() takes lists of tokens, not strings")
        if not batch:
            return []
        ws, cs, pad_off, lens = _flatten([self.vocab.encode(t) for t in batch])
        flat = decode_batch(ws, cs, pad_off, lens, self.weights, self.mask, self.max_len)
        out, pos = [], 0
        for n in lens.tolist():
            out.append(flat[pos : pos + n].tolist())
            pos += n
        return out

    def pos_xl_batch(self, batch: Sequence[Sequence[str]]) -> List[List[int]]:
        return [order_to_pos_xl(o) for o in self.reorder_batch(batch)]

    # --- persistence -------------------------------------------------------------------------

    def header(self) -> Dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, **self.hparams, "class_words": self.vocab.class_words}

    def __getstate__(self) -> Dict[str, Any]:
        """Compact state: header, vocabulary and the non-zero weight rows (cheap to pickle)."""
        rows = np.flatnonzero(np.any(self.weights != 0, axis=1))
        return {
            "header": self.header(),
            "vocab": list(self.vocab.tokens),
            "feat_index": rows.astype(np.int64),
            "feat_weight": self.weights[rows],
        }

    def __setstate__(self, state: Dict[str, Any]) -> None:
        header = state["header"]
        weights = np.zeros((int(header["hash_size"]), 2), dtype=np.float32)
        weights[state["feat_index"]] = state["feat_weight"]
        vocab = Vocab(list(state["vocab"]), int(header["class_words"]))
        hparams = {k: v for k, v in header.items() if k not in ("format", "version")}
        self.__init__(vocab, weights, hparams)  # type: ignore[misc]

    def save(self, path: str) -> None:
        """One versioned ``.npz`` file (written to ``path`` as given, no suffix added)."""
        state = self.__getstate__()
        as_bytes = lambda obj: np.frombuffer(json.dumps(obj, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            header=as_bytes(state["header"]),
            vocab=as_bytes(state["vocab"]),
            feat_index=state["feat_index"],
            feat_weight=state["feat_weight"],
        )
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
        if header.get("version") != VERSION:
            raise XLInputError(
                path, None,
                f"{FORMAT} format version {header.get('version')!r}, but this onmt_xl reads version "
                f"{VERSION}: retrain the preorderer (onmt-xl preorder-train) or use a matching onmt_xl",
            )
        try:
            vocab = json.loads(arrays["vocab"].tobytes().decode("utf-8"))
            state = {
                "header": header,
                "vocab": vocab,
                "feat_index": np.asarray(arrays["feat_index"], dtype=np.int64),
                "feat_weight": np.asarray(arrays["feat_weight"], dtype=np.float32),
            }
            size = int(header["hash_size"])
            idx = state["feat_index"]
            if idx.size and (idx.min() < 0 or idx.max() >= size) or state["feat_weight"].shape != (idx.size, 2):
                raise ValueError("weight arrays do not match the header's hash_size")
            model = cls.__new__(cls)
            model.__setstate__(state)
        except XLInputError:
            raise
        except Exception as exc:
            raise XLInputError(path, None, f"corrupt preorderer model: {exc}") from exc
        return model
