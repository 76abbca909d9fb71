"""Eole configs of the baseline encoders and of the reordering-embedding decoder (Ding et al. 2020, Tab. 1-2 and 4),
the classes :mod:`onmt_xl.eole.seams` adds to Eole's closed encoder and decoder unions (``BaseModelConfig.encoder``,
keyed on ``encoder_type``; ``BaseModelConfig.decoder``, keyed on ``decoder_type``). Our options come from the tables
the OpenNMT-py adapter declares too (:mod:`onmt_xl.core.options_table`); the other checks are those of
``onmt_xl/opennmt/encoders/`` and ``onmt_xl/opennmt/decoders/``. Imports only Eole's config models, pydantic and
framework-free tables, so the seam can run while ``eole.config`` is still being imported."""

from __future__ import annotations

from typing import Literal

from eole.config.models import EncoderConfig, TransformerDecoderConfig, TransformerEncoderConfig
from eole.constants import PositionEncodingType
from pydantic import Field, model_validator

from onmt_xl.eole import registry
from onmt_xl.eole.fields import annotation, field

SINUSOIDS = ("SinusoidalInterleaved", "SinusoidalConcat")


def pe_name(value) -> str:
    """An Eole position_encoding_type (enum or str) as :mod:`onmt_xl.core.positions` names it."""
    return str(getattr(value, "value", value))


class PreNormEncoderConfig(TransformerEncoderConfig):
    """A Transformer encoder config whose system rewires Eole's sequential pre-norm layer (all baselines but
    ``xl_relative``, which keeps the stock layer)."""

    @model_validator(mode="after")
    def _validate_pre_norm(self):
        if self.encoder_layer_style != "standard" or self.ffn_layernorm or self.parallel_residual:
            raise ValueError(f"encoder_type {self.encoder_type} builds on Eole's sequential pre-norm layer "
                             "(encoder_layer_style: standard, ffn_layernorm: false, parallel_residual: false)")
        return self


class SinusoidEncoderConfig(PreNormEncoderConfig):
    """An encoder that adds the sinusoid ``PE`` itself, in its layers (reordering embeddings, ExGRE/ReFSR)."""

    @model_validator(mode="after")
    def _validate_sinusoid(self):
        if pe_name(self.position_encoding_type) not in SINUSOIDS:
            raise ValueError(f"encoder_type {self.encoder_type} needs a sinusoidal position_encoding_type, got "
                             f"{pe_name(self.position_encoding_type)}")
        return self


class RelativeEncoderConfig(TransformerEncoderConfig):
    """``xl_relative``: encoder-only relative position representations (Shaw et al. 2018), no absolute PE in the
    encoder; the decoder keeps the embeddings' absolute PE."""

    encoder_type: Literal["xl_relative"] = Field(default="xl_relative")
    xl_enc_max_relative_positions: annotation("xl_enc_max_relative_positions") = field("xl_enc_max_relative_positions")


class DiSANEncoderConfig(PreNormEncoderConfig):
    """``xl_disan``: directional self-attention with DiSAN's fusion gate (Shen et al. 2018)."""

    encoder_type: Literal["xl_disan"] = Field(default="xl_disan")
    xl_disan_fusion: annotation("xl_disan_fusion") = field("xl_disan_fusion")

    @model_validator(mode="after")
    def _validate_heads(self):
        if self.heads_kv not in (None, self.heads):
            raise ValueError("encoder_type xl_disan needs heads_kv == heads (one direction per head)")
        return self


class ReorderingEmbeddingEncoderConfig(SinusoidEncoderConfig):
    """``xl_reordering_embedding`` (encoder REs, Chen et al. 2019, Eq. 6-9) and ``xl_additional_pe`` (their
    control: the plain PE in every layer)."""

    encoder_type: Literal["xl_reordering_embedding", "xl_additional_pe"] = Field(default="xl_reordering_embedding")


class ExplicitReorderingEncoderConfig(SinusoidEncoderConfig):
    """``xl_exgre`` / ``xl_refsr`` (Chen et al. 2020, Eq. 5-11)."""

    encoder_type: Literal["xl_exgre", "xl_refsr"] = Field(default="xl_exgre")
    xl_reordering_loss_weight: annotation("xl_reordering_loss_weight") = field("xl_reordering_loss_weight")
    xl_reordering_loss: annotation("xl_reordering_loss") = field("xl_reordering_loss")
    xl_exgre_window: annotation("xl_exgre_window") = field("xl_exgre_window")


class EncoderFreeConfig(EncoderConfig):
    """``xl_encoder_free`` (Tang et al. 2019): no encoder layers; the source embeddings (+ position information) go
    straight to the decoder."""

    encoder_type: Literal["xl_encoder_free"] = Field(default="xl_encoder_free")
    position_encoding_type: PositionEncodingType | None = Field(
        default=PositionEncodingType.SinusoidalInterleaved, description="Kind of the sinusoid PE_abs (Eq. 1).")
    xl_encoder_free_pe: annotation("xl_encoder_free_pe") = field("xl_encoder_free_pe")
    heads: int = Field(default=8, gt=0, description="xl_encoder_free_pe relative: heads of the relative attention "
                       "(the model's heads; one table of hidden_size / heads columns, shared by the heads).")
    xl_enc_max_relative_positions: annotation("xl_enc_max_relative_positions") = field("xl_enc_max_relative_positions")
    xl_inxl_fusion: annotation("xl_inxl_fusion") = field("xl_inxl_fusion")
    xl_inxl_init: annotation("xl_inxl_init") = field("xl_inxl_init")

    @model_validator(mode="after")
    def _validate_pe(self):
        if self.xl_encoder_free_pe in ("absolute", "inxl") and pe_name(self.position_encoding_type) not in SINUSOIDS:
            raise ValueError(f"xl_encoder_free_pe {self.xl_encoder_free_pe} needs a sinusoidal position_encoding_type, "
                             f"got {pe_name(self.position_encoding_type)}")
        if self.xl_encoder_free_pe == "relative" and self.hidden_size % self.heads:
            raise ValueError(f"xl_encoder_free_pe relative splits hidden_size {self.hidden_size} into heads "
                             f"{self.heads}: make it a multiple")
        return self


class ReorderingEmbeddingDecoderConfig(TransformerDecoderConfig):
    """``decoder_type: xl_reordering_embedding``: decoder reordering embeddings (Chen et al. 2019, "Decoder REs";
    with the encoder's, "Both REs"), on Eole's sequential pre-norm encoder-decoder layer."""

    decoder_type: Literal["xl_reordering_embedding"] = Field(default="xl_reordering_embedding")

    @model_validator(mode="after")
    def _validate_reordering_decoder(self):
        if self.parallel_residual or self.ffn_layernorm or self.layer_types is not None or self.num_experts > 0:
            raise ValueError(f"decoder_type {self.decoder_type} builds on Eole's sequential pre-norm layer "
                             "(parallel_residual: false, ffn_layernorm: false, no layer_types, num_experts: 0)")
        if pe_name(self.position_encoding_type) not in SINUSOIDS:
            raise ValueError(f"decoder_type {self.decoder_type} needs a sinusoidal position_encoding_type, got "
                             f"{pe_name(self.position_encoding_type)}")
        return self


BASELINE_CONFIGS = (RelativeEncoderConfig, DiSANEncoderConfig, ReorderingEmbeddingEncoderConfig,
                    ExplicitReorderingEncoderConfig, EncoderFreeConfig)
DECODER_CONFIGS = (ReorderingEmbeddingDecoderConfig,)


# completes the union seams if they ran while we imported Eole
registry.add(configs=BASELINE_CONFIGS, decoder_configs=DECODER_CONFIGS)
