"""The old path of :mod:`onmt_xl.core.errors`, kept because the start-up hook installed in site-packages
(``onmt_xl_hook``, non-editable installs) imports ``onmt_xl.errors.quiet_onmt_warnings``: the same module object,
not a copy (so ``except XLInputError`` matches either name)."""

import sys

from onmt_xl.core import errors as _errors

sys.modules[__name__] = _errors
