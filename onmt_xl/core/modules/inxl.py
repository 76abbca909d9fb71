"""Inputting-level XL fusion (paper Eq. 7): ``PE_IN-XL = tanh(PE_abs U + PE_XL V)``."""

from __future__ import annotations

import torch
import torch.nn as nn

INXL_FUSIONS = ("block", "diagonal", "full")
#: starting points of ``(U, V)``: ``absolute`` = ``(I, 0)`` (the default), ``identity`` = ``(I, I)``
INXL_STARTS = ("identity", "absolute")


class InXLPositionFusion(nn.Module):
    """Fuse absolute and cross-lingual position encodings (Eq. 7); Eq. 8 adds the result to ``X``.

    The paper reports +0.01M parameters for this on Transformer BIG (``d_model`` 1024), so ``U`` and
    ``V`` cannot be full ``d×d`` matrices (2.1M). Parameterisations (no bias, as in Eq. 7):

    * ``block`` (default): one 2×2 matrix per sinusoid frequency, acting on its ``(sin, cos)`` pair.
      A 2×2 map of ``(sin ωp, cos ωp)`` can rescale and phase-shift it, i.e. move the position
      ``p`` by a learned per-frequency offset — the natural small map on a sinusoid.
      ``2 · 4 · d/2 = 4d`` parameters (4,096 at d=1024, i.e. +0.004M).
    * ``diagonal``: element-wise ``U``, ``V`` (``2d`` parameters).
    * ``full``: dense ``d×d`` ``U``, ``V`` (``2d²`` parameters).

    Starting point (``start``; the paper does not say how ``U`` and ``V`` start). ``absolute`` (default):
    ``U = I``, ``V = 0``, so ``PE_IN-XL = tanh(PE_abs)``, an element-wise monotone squashing of the stock absolute
    PE that keeps all of its order information, and ``V`` learns from there (its gradient
    ``PE_XL ⊗ ∂L/∂Z · (1 − tanh²)`` is not zero), but the model starts without the XL positions. ``identity``:
    ``U = V = I``, ``tanh(PE_abs + PE_XL)``; in each frequency ``ω`` the sum of the two sinusoids has amplitude
    ``2|cos(ω (p_abs − p_XL) / 2)|``, so wherever ``pos_XL`` differs from the position some frequencies cancel
    and others saturate the tanh. The default is the start that trained better on a Japanese→English tuning
    split carved from the training data (``tools/study/tune_options.py``, ``reports/TUNING.md``).

    Inputs: ``pe_abs``, ``pe_xl`` ``(batch, src_len, d_model)``; output: same shape.
    """

    def __init__(self, d_model: int, fusion: str = "block", kind: str = "SinusoidalInterleaved",
                 start: str = "absolute"):
        super().__init__()
        if fusion not in INXL_FUSIONS:
            raise ValueError(f"unknown InXL fusion {fusion!r}; choose one of {INXL_FUSIONS}")
        if start not in INXL_STARTS:
            raise ValueError(f"unknown InXL start {start!r}; choose one of {INXL_STARTS}")
        if fusion == "block" and kind != "SinusoidalInterleaved":
            raise ValueError("xl_inxl_fusion 'block' pairs (sin, cos) dimensions and needs SinusoidalInterleaved")
        self.d_model, self.fusion, self.start = d_model, fusion, start
        shape = {"full": (d_model, d_model), "diagonal": (d_model,)}.get(fusion, (d_model // 2, 2, 2))
        # not named "weight": OpenNMT's -param_init_glorot (Xavier) must leave the start alone
        self.U = nn.Parameter(torch.empty(shape))
        self.V = nn.Parameter(torch.empty(shape))
        self.reset_start()

    def identity(self) -> torch.Tensor:
        """The identity map in this parameterisation: ``I`` (``full``), ones (``diagonal``), or one 2×2 ``I`` per
        frequency (``block``, ``(d/2, 2, 2)``: ``(sin_k, cos_k) -> (sin_k', cos_k')``)."""
        if self.fusion == "full":
            return torch.eye(self.d_model)
        if self.fusion == "diagonal":
            return torch.ones(self.d_model)
        return torch.eye(2).expand(self.d_model // 2, 2, 2)

    def reset_start(self) -> None:
        """Puts the parameters back to the starting point the paper/our tuning uses (``start``): ``U = I`` and
        ``V = I`` (``identity``) or ``V = 0`` (``absolute``).

        OpenNMT's initialisation of a new model (``-param_init``) overwrites it; the ``init`` seam
        (:mod:`onmt_xl.opennmt.seams.init`) calls this again afterwards."""
        eye = self.identity()
        with torch.no_grad():
            self.U.copy_(eye)
            if self.start == "identity":
                self.V.copy_(eye)
            else:
                self.V.zero_()

    def _project(self, pe: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if self.fusion == "full":
            return pe @ w
        if self.fusion == "diagonal":
            return pe * w
        pairs = pe.unflatten(-1, (self.d_model // 2, 2))  # (..., d/2, 2): (sin_k, cos_k)
        # (sin_k, cos_k) @ w[k], written element-wise (cheaper than einsum's batched 2x2 products)
        return (pairs[..., 0:1] * w[:, 0, :] + pairs[..., 1:2] * w[:, 1, :]).flatten(-2)

    def forward(self, pe_abs: torch.Tensor, pe_xl: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self._project(pe_abs, self.U) + self._project(pe_xl, self.V))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, fusion={self.fusion}, start={self.start}"
