"""Pieces shared by the OpenNMT-py adapter's encoders; the positions channel itself is in :mod:`onmt_xl.core.channel`
(portable core, re-exported here). Imports only torch and :mod:`onmt_xl.core.channel`, so that importing any onmt_xl
module first (which triggers registration through the ``onmt`` import hook) never meets a half-imported module."""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch

from onmt_xl.core.channel import (  # noqa: F401  (the channel, re-exported for the OpenNMT-py adapter)
    MissingXLPositionsError, fed_xl_positions, feeding_xl_positions, padding_mask,
)


def split_xl(encoder, src: torch.Tensor, missing: Optional[str] = None) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """(token ids ``(batch, src_len, 1 + n_feats)``, ``pos_XL`` ``(batch, src_len)`` or None) for ``encoder``.

    The positions are those fed by :func:`feeding_xl_positions` (OpenNMT's training, validation and
    translation); a direct call may instead pass them as an extra last column of ``src``
    (``(batch, src_len, 1 + n_feats + 1)``, as the tests and ``onmt-xl sim`` do). ``missing``: for an encoder
    that needs the positions, the message of the :class:`MissingXLPositionsError` raised without them.
    """
    if src.dim() == 3 and src.size(2) == len(encoder.embeddings.emb_luts) + 1:
        return src[:, :, :-1], src[:, :, -1]
    pos_xl = fed_xl_positions()
    if pos_xl is not None and tuple(pos_xl.shape) != tuple(src.shape[:2]):
        raise ValueError(f"XL positions of shape {tuple(pos_xl.shape)} for a source batch of shape "
                         f"{tuple(src.shape[:2])}")
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
