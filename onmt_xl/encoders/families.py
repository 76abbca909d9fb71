"""The encoder families of onmt_xl, one module each; importing this module registers their encoders.

A family module declares ``ENCODERS`` (its ``-encoder_type`` names) and, where it has options,
``add_options(group)`` and ``validate(opt)`` (see :mod:`onmt_xl.encoders.options`). Their options appear
in ``-h`` in the order of :data:`FAMILIES`. A new family is its own module plus one entry here.
"""

from __future__ import annotations

from onmt_xl.encoders import disan, encoder_free, explicit_reordering, reordering_embedding, xl_transformer

FAMILIES = (xl_transformer, disan, reordering_embedding, encoder_free, explicit_reordering)
