"""The OpenNMT-py adapter: our encoders, decoder and transforms in OpenNMT-py's registries, and the seams.

- :mod:`~onmt_xl.opennmt.encoders`, :mod:`~onmt_xl.opennmt.decoders`, :mod:`~onmt_xl.opennmt.transforms`: the
  components, registered with ``register_encoder`` / ``register_decoder`` / ``register_transform``;
- :mod:`~onmt_xl.opennmt.seams`: the only code that wraps OpenNMT-py's functions (one concern per module);
- :mod:`~onmt_xl.opennmt.opts`, :mod:`~onmt_xl.opennmt.names`: our options and names in OpenNMT-py's namespaces,
  with their legacy aliases.

Its twin for Eole is :mod:`onmt_xl.eole`; both build on :mod:`onmt_xl.core`. :func:`onmt_xl.register` (called by
the start-up hook at the first ``import onmt``) applies it.
"""
