"""The baseline encoders of the Eole adapter, by ``encoder_type`` (what :func:`onmt_xl.eole.seams.encoders` adds to
Eole's ``str2enc``); one module per system family, each with its OpenNMT-py twin in ``onmt_xl/encoders/``. Their
configs are :mod:`onmt_xl.eole.baseline_config`."""

from __future__ import annotations

from onmt_xl.eole import registry
from onmt_xl.eole.disan import DiSANEncoder
from onmt_xl.eole.encoder_free import EncoderFreeEncoder
from onmt_xl.eole.explicit_reordering import ExplicitReorderingEncoder
from onmt_xl.eole.relative import RelativeEncoder
from onmt_xl.eole.reordering_embedding import ReorderingEmbeddingEncoder

ENCODER_CLASSES = {
    "xl_relative": RelativeEncoder,
    "xl_disan": DiSANEncoder,
    "xl_reordering_embedding": ReorderingEmbeddingEncoder,
    "xl_additional_pe": ReorderingEmbeddingEncoder,
    "xl_encoder_free": EncoderFreeEncoder,
    "xl_exgre": ExplicitReorderingEncoder,
    "xl_refsr": ExplicitReorderingEncoder,
}


registry.add(encoders=ENCODER_CLASSES)  # completes the str2enc seam if it ran while we imported Eole
