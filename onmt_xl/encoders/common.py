"""Pieces shared by our encoders. Imports only torch and :mod:`onmt_xl.errors` (standard library only), so that importing any onmt_xl module first
(which triggers registration through the ``onmt`` import hook) never meets a half-imported module."""

from __future__ import annotations

import contextlib
import math
import threading
from typing import Iterator, Optional, Tuple

import torch

from onmt_xl.errors import XLUsageError


class MissingXLPositionsError(XLUsageError):
    """An XL encoder got a batch without XL positions (the ``xl_position`` transform is missing): a usage error,
    so the stock commands print its message alone (:func:`onmt_xl.errors.install_excepthook`)."""

    def __init__(self, problem: str):
        super().__init__(None, None, problem)

    def __reduce__(self):
        return (type(self), (self.problem,))


_fed = threading.local()


@contextlib.contextmanager
def feeding_xl_positions(pos_xl: Optional[torch.Tensor]) -> Iterator[None]:
    """Within the block, :func:`split_xl` hands ``pos_xl`` ``(batch, src_len)`` (``batch["xl_pos"]``, or
    None) to the encoder as the positions of the source it encodes. :mod:`onmt_xl.seams.positions` opens it around
    every stock call that encodes a batch, so ``batch["src"]`` itself holds token ids only."""
    previous = getattr(_fed, "pos_xl", None)
    _fed.pos_xl = pos_xl
    try:
        yield
    finally:
        _fed.pos_xl = previous


def fed_xl_positions() -> Optional[torch.Tensor]:
    """The positions :func:`feeding_xl_positions` feeds now (``(batch, src_len)``), or None outside such a block.
    Framework-free: the Eole adapter's encoders read the same channel (:mod:`onmt_xl.eole.encoders`)."""
    return getattr(_fed, "pos_xl", None)


def split_xl(encoder, src: torch.Tensor, missing: Optional[str] = None) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """(token ids ``(batch, src_len, 1 + n_feats)``, ``pos_XL`` ``(batch, src_len)`` or None) for ``encoder``.

    The positions are those fed by :func:`feeding_xl_positions` (OpenNMT's training, validation and
    translation); a direct call may instead pass them as an extra last column of ``src``
    (``(batch, src_len, 1 + n_feats + 1)``, as the tests and ``onmt-xl sim`` do). ``missing``: for an encoder
    that needs the positions, the message of the :class:`MissingXLPositionsError` raised without them.
    """
    if src.dim() == 3 and src.size(2) == len(encoder.embeddings.emb_luts) + 1:
        return src[:, :, :-1], src[:, :, -1]
    pos_xl = getattr(_fed, "pos_xl", None)
    if pos_xl is not None and tuple(pos_xl.shape) != tuple(src.shape[:2]):
        raise ValueError(f"XL positions of shape {tuple(pos_xl.shape)} for a source batch of shape {tuple(src.shape[:2])}")
    if pos_xl is None and missing is not None:
        raise MissingXLPositionsError(missing)
    return src, pos_xl


def embed_words(embeddings, src: torch.Tensor) -> torch.Tensor:
    """``X``: OpenNMT's word (+ feature) embeddings scaled by ``sqrt(d)``, before any PE and dropout.

    ``embeddings``: ``onmt.modules.Embeddings``; ``src`` ``(batch, src_len, 1 + n_feats)`` ->
    ``(batch, src_len, d_model)``.
    """
    x = src
    for name, module in embeddings.make_embedding.named_children():
        if name != "pe":
            x = module(x)
    return x * math.sqrt(embeddings.embedding_size)


def padding_mask(src_len: torch.Tensor, max_len: int) -> torch.Tensor:
    """``(batch, 1, src_len, src_len)`` bool, True on padded keys (OpenNMT's convention)."""
    pad = torch.arange(max_len, device=src_len.device)[None, :] >= src_len[:, None]  # (batch, src_len)
    return pad[:, None, None, :].expand(-1, 1, max_len, -1)
