"""The portable core: the papers' equations and the preordering, free of both frameworks.

No module here imports OpenNMT-py (``onmt``) or Eole (``eole``), nor either adapter (``onmt_xl.opennmt``,
``onmt_xl.eole``); both adapters build on it (the import-linter contracts in ``pyproject.toml``):

- :mod:`~onmt_xl.core.positions`, :mod:`~onmt_xl.core.modules`: the position encodings and one ``nn.Module`` per
  equation (HeadXL, InXL, DiSAN, ExGRE/ReFSR, reordering embeddings);
- :mod:`~onmt_xl.core.reorder`, :mod:`~onmt_xl.core.align`: the BTG preorderer and oracle, word alignment and AER;
- :mod:`~onmt_xl.core.position_source`, :mod:`~onmt_xl.core.segmentation`, :mod:`~onmt_xl.core.channel`: where pos_XL
  comes from, how it follows subword segmentation, and how it reaches an encoder;
- :mod:`~onmt_xl.core.options_table`, :mod:`~onmt_xl.core.errors`: the options both adapters declare, and the
  package's errors;
- :mod:`~onmt_xl.core.precision`, :mod:`~onmt_xl.core.cpu_training`, :mod:`~onmt_xl.core.resume`: CPU precision,
  speed and exact-resume helpers in plain torch;
- :mod:`~onmt_xl.core.data`: the synthetic corpus.
"""
