"""The positions channel, framework-free (portable core): the batch's ``pos_XL`` reach an encoder without changing
the framework's call ``encoder(emb, ...)``. The adapters' seams open :func:`feeding_xl_positions` around every call
that encodes a batch; the encoders of both adapters read :func:`fed_xl_positions`. Imports only torch and
:mod:`onmt_xl.core.errors` (standard library only)."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional

import torch

from onmt_xl.core.errors import XLUsageError


class MissingXLPositionsError(XLUsageError):
    """An XL encoder got a batch without XL positions (the ``xl_position`` transform is missing): a usage error,
    so the stock commands print its message alone (:func:`onmt_xl.core.errors.install_excepthook`)."""

    def __init__(self, problem: str):
        super().__init__(None, None, problem)

    def __reduce__(self):
        return (type(self), (self.problem,))


_fed = threading.local()


@contextlib.contextmanager
def feeding_xl_positions(pos_xl: Optional[torch.Tensor]) -> Iterator[None]:
    """Within the block, the encoders read ``pos_xl`` ``(batch, src_len)`` (``batch["xl_pos"]``, or None) as the
    positions of the source they encode (:func:`fed_xl_positions`). The seams (:mod:`onmt_xl.opennmt.seams.positions`,
    :mod:`onmt_xl.eole.seams`) open it around every stock call that encodes a batch, so ``batch["src"]`` itself
    holds token ids only."""
    previous = getattr(_fed, "pos_xl", None)
    _fed.pos_xl = pos_xl
    try:
        yield
    finally:
        _fed.pos_xl = previous


def fed_xl_positions() -> Optional[torch.Tensor]:
    """The positions :func:`feeding_xl_positions` feeds now (``(batch, src_len)``), or None outside such a block."""
    return getattr(_fed, "pos_xl", None)


def padding_mask(src_len: torch.Tensor, max_len: int) -> torch.Tensor:
    """``(batch, 1, src_len, src_len)`` bool, True on padded keys (OpenNMT's convention)."""
    pad = torch.arange(max_len, device=src_len.device)[None, :] >= src_len[:, None]  # (batch, src_len)
    return pad[:, None, None, :].expand(-1, 1, max_len, -1)
