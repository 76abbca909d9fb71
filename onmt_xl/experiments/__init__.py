"""The research workbench: the papers' experiments on top of the onmt_xl plug-in.

It imports the plug-in (``onmt_xl`` outside this package) and OpenNMT's stock commands; nothing in the
plug-in imports it back (checked by the import-linter contracts in ``pyproject.toml``).
"""
