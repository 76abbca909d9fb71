"""Pieces shared by our encoders. Imports only torch, so that importing any onmt_xl module first
(which triggers registration through the ``onmt`` import hook) never meets a half-imported module."""

from __future__ import annotations

import math

import torch


class MissingXLPositionsError(RuntimeError):
    """An XL encoder got a batch without XL positions (the ``xl_position`` transform is missing)."""


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
