"""The starting points of our modules, put back after a framework's initialisation has drawn every parameter
(OpenNMT-py's ``-param_init``/``-param_init_glorot``, Eole's ``param_init_method``): both adapters call
:func:`reset_starts` on a new model."""

from __future__ import annotations


def reset_starts(model) -> int:
    """Call ``reset_start()`` on every module of ``model`` (a ``torch.nn.Module``) that is one of ours (defined in
    ``onmt_xl``) and has one, in ``model.modules()`` order: DiSAN's fusion gate, InXL's U, V (``xl_inxl_init``). A
    stock model has none. Returns how many were reset."""
    n = 0
    for module in model.modules():
        reset = getattr(module, "reset_start", None)
        if callable(reset) and type(module).__module__.startswith("onmt_xl."):
            reset()
            n += 1
    return n
