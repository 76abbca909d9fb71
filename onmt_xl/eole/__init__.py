"""The Eole adapter of onmt_xl (issue 38): our transform and encoders for Eole 0.6.x, OpenNMT-py's successor.

It sits beside the OpenNMT-py adapter (``onmt_xl.opennmt.seams``, ``onmt_xl.opennmt.encoders``,
``onmt_xl.opennmt.transforms``, ``onmt_xl.opennmt.decoders``) and imports none of it; both read the batch's positions
through the portable :mod:`onmt_xl.core.channel`; neither adapter imports the other (``pyproject.toml``,
``[tool.importlinter]``). The shared portable core is :mod:`onmt_xl.core.positions`, :mod:`onmt_xl.core.modules`,
:mod:`onmt_xl.core.reorder`, :mod:`onmt_xl.core.align` and :mod:`onmt_xl.core.segmentation`.

What it registers: the ``xl_position`` and ``xl_prereorder`` transforms (:mod:`onmt_xl.eole.transforms`, the
preorderer a model artifact), the encoders of Ding et al. (``xl_inxl``, ``xl_headxl``, ``xl_combination``,
:mod:`onmt_xl.eole.encoders`), ``xl_relative`` and the baselines' encoders (:mod:`onmt_xl.eole.baselines`), through
the seams Eole needs (:mod:`onmt_xl.eole.seams`, applied by the import hook :mod:`onmt_xl.eole.hook`, which the
start-up hook ``onmt_xl_hook`` installs in every process that imports ``eole``); :mod:`onmt_xl.eole.weights` maps
OpenNMT-py parameter names to Eole's. ``python -m onmt_xl.eole ...`` runs Eole's CLI with them installed first. Not
ported: the reordering-embedding decoder (``dec_re``, ``both_re``; ``reports/EOLE.md``).
"""

from __future__ import annotations


def register() -> None:
    """Apply the Eole adapter's seams (:mod:`onmt_xl.eole.seams`) to the Eole modules already imported and hook the
    others, so that our transform and encoders are in Eole's registries and config unions (idempotent).

    Call it before ``eole.config`` is imported: ``eole.config.data`` freezes the transforms' configs and
    ``eole.config.run`` the model-config union at import time. ``python -m onmt_xl.eole ...`` does.
    """
    from onmt_xl.eole.hook import install

    install()
