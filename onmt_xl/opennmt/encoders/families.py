"""The encoder families of onmt_xl, one module each; importing this module registers their encoders.

A family module declares ``ENCODERS`` (its ``-encoder_type`` names, all ``xl_*``) and, where it has options,
``add_options(group)`` and ``validate(opt)`` (see :mod:`onmt_xl.opennmt.encoders.options`). Their options appear
in ``-h`` in the order of :data:`FAMILIES`. A new family is its own module plus one entry here. The names the
baselines had before the ``xl_`` prefix (:data:`onmt_xl.opennmt.names.LEGACY_ENCODERS`) are registered as aliases
where OpenNMT's registry does not have them.
"""

from __future__ import annotations

from onmt.encoders import str2enc

from onmt_xl.opennmt.encoders import disan, encoder_free, explicit_reordering, reordering_embedding, xl_transformer
from onmt_xl.opennmt.names import LEGACY_ENCODERS, register_aliases

FAMILIES = (xl_transformer, disan, reordering_embedding, encoder_free, explicit_reordering)

register_aliases(str2enc, LEGACY_ENCODERS)
