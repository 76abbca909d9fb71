"""Our legacy component names give way to another plug-in's.

The encoders and decoder named before the ``xl_`` prefix (``disan``, ``reordering_embedding``, ...:
:data:`onmt_xl.opennmt.names.LEGACY_ENCODERS`, :data:`~onmt_xl.opennmt.names.LEGACY_DECODERS`) are registered as aliases
of ours where OpenNMT's registries lack them (:func:`onmt_xl.opennmt.names.register_aliases`). OpenNMT refuses a
duplicate name, so a plug-in imported after us that registers one of those names would fail.

Wraps (OpenNMT-py 3.5.1) ``onmt.encoders.register_encoder`` and ``onmt.decoders.register_decoder``: registering a
name that is only our alias removes the alias first, so the other plug-in's component takes the name (a checkpoint
of ours written with the old name still loads, :func:`onmt_xl.opennmt.names.upgrade_namespace`). Any other registration,
a duplicate included, is stock's.
"""

from __future__ import annotations

from onmt_xl.opennmt import names
from onmt_xl.opennmt.seams.base import log_once, wrapper

LOST = ("a plug-in imported after onmt_xl cannot register an encoder or decoder under one of onmt_xl's legacy names "
        "(disan, encoder_free, exgre, refsr, additional_pe, reordering_embedding)")


def _giving_way(stock, registry, table, kind):
    def register(name, *args, **kwargs):
        decorate = stock(name, *args, **kwargs)

        def register_cls(cls):
            new = table.get(name)
            if new is not None and names.is_alias(registry, name, new):
                del registry[name]
                log_once(f"onmt_xl: the {kind} name {name} is now {cls.__module__}.{cls.__name__}; onmt_xl's is {new}")
            return decorate(cls)

        return register_cls

    return wrapper(stock, register)


def apply() -> None:
    import onmt.decoders as decoders
    import onmt.encoders as encoders

    encoders.register_encoder = _giving_way(encoders.register_encoder, encoders.str2enc, names.LEGACY_ENCODERS,
                                            "encoder")
    decoders.register_decoder = _giving_way(decoders.register_decoder, decoders.str2dec, names.LEGACY_DECODERS,
                                            "decoder")
