"""OpenNMT transforms of onmt_xl: ``xl_position`` and ``xl_prereorder`` (registered by :mod:`onmt_xl.opennmt.seams`)."""

#: the example key under which ``xl_position`` stores pos_XL (one index per source token); the plug-in's
#: batching collates it into ``batch[XL_POS_KEY]``, ``(batch, src_len)``
XL_POS_KEY = "xl_pos"
