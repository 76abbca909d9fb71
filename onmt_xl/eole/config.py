"""Eole config of the XL encoders: the class Eole's closed encoder union (``BaseModelConfig.encoder``, keyed on
``encoder_type``) must list (:mod:`onmt_xl.eole.seams`). Imports only Eole's config models and pydantic, so the seam
can run while ``eole.config`` is still being imported."""

from __future__ import annotations

from typing import Dict, Literal, Tuple

from eole.config.models import TransformerEncoderConfig
from pydantic import Field, model_validator

from onmt_xl.eole import registry
from onmt_xl.eole.fields import annotation, field

#: encoder_type -> (uses InXL fusion, uses HeadXL split); same table as the OpenNMT-py adapter's ``XL_ENCODERS``
XL_ENCODERS: Dict[str, Tuple[bool, bool]] = {
    "xl_inxl": (True, False),
    "xl_headxl": (False, True),
    "xl_combination": (True, True),
}


class XLTransformerEncoderConfig(TransformerEncoderConfig):
    """Eole encoder config of the XL encoders: a Transformer encoder config plus our three options."""

    encoder_type: Literal["xl_inxl", "xl_headxl", "xl_combination"] = Field(default="xl_combination")
    xl_heads: annotation("xl_heads") = field("xl_heads")
    xl_inxl_fusion: annotation("xl_inxl_fusion") = field("xl_inxl_fusion")
    xl_inxl_init: annotation("xl_inxl_init") = field("xl_inxl_init")

    @model_validator(mode="after")
    def _validate_xl(self):
        if self.position_encoding_type not in ("SinusoidalInterleaved", "SinusoidalConcat"):
            raise ValueError(f"encoder_type {self.encoder_type} needs a sinusoidal position_encoding_type (PE_abs of "
                             f"Eq. 1), got {self.position_encoding_type}")
        if self.encoder_layer_style != "standard" or self.ffn_layernorm:
            raise ValueError(f"encoder_type {self.encoder_type} supports pre-norm layers only "
                             "(encoder_layer_style: standard, ffn_layernorm: false)")
        if self.heads_kv not in (None, self.heads):
            raise ValueError(f"encoder_type {self.encoder_type} needs heads_kv == heads (HeadXL splits Q, K and V "
                             "alike)")
        if "heads" in self.model_fields_set:
            self._check_xl_heads()
        return self

    def _check_xl_heads(self) -> None:
        if self.xl_heads is not None and not 0 <= self.xl_heads <= self.heads:
            raise ValueError(f"xl_heads must be in [0, heads={self.heads}], got {self.xl_heads}")

    def update(self, **kwargs):
        """Eole's ``update`` (no validation). A model config validates its encoder config first, then passes it the
        model-level values the encoder does not set (``heads`` among them) through this method, every time (Eole's
        ``BaseModelConfig._override_values``): τ ≤ heads is checked here against the heads the model will have, and
        at validation only where the encoder sets ``heads`` itself (else the limit would be Eole's default, 8)."""
        super().update(**kwargs)
        self._check_xl_heads()

    @property
    def resolved_xl_heads(self) -> int:
        return self.heads // 2 if self.xl_heads is None else self.xl_heads


#: encoder_types whose model gets a look-up-only ``src_emb`` (:class:`~onmt_xl.eole.encoders.XLSourceEmbeddings`):
#: the encoder adds ``√d``, its own positions (or none) and the dropout
LOOKUP_SRC_EMB = frozenset((*XL_ENCODERS, "xl_relative", "xl_encoder_free"))


registry.add(configs=(XLTransformerEncoderConfig,))  # completes the union seam if it ran while we imported Eole
