"""The baseline encoders of the Eole adapter, by ``encoder_type`` (what :func:`onmt_xl.eole.seams.encoders` adds to
Eole's ``str2enc``), and the baseline decoder, by ``decoder_type`` (:func:`onmt_xl.eole.seams.decoders`, ``str2dec``);
one module per system family, each with its OpenNMT-py twin in ``onmt_xl/opennmt/encoders/`` or
``onmt_xl/opennmt/decoders/``. Their configs are :mod:`onmt_xl.eole.baseline_config`."""

from __future__ import annotations

from onmt_xl.eole import registry
from onmt_xl.eole.disan import DiSANEncoder
from onmt_xl.eole.encoder_free import EncoderFreeEncoder
from onmt_xl.eole.explicit_reordering import ExplicitReorderingEncoder
from onmt_xl.eole.relative import RelativeEncoder
from onmt_xl.eole.reordering_decoder import ReorderingEmbeddingDecoder
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

DECODER_CLASSES = {
    "xl_reordering_embedding": ReorderingEmbeddingDecoder,
}


# completes the str2enc and str2dec seams if they ran while we imported Eole
registry.add(encoders=ENCODER_CLASSES, decoders=DECODER_CLASSES)
