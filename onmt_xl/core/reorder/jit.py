"""numba for the kernels of :mod:`onmt_xl.core.reorder`: every kernel module takes ``njit`` / ``prange`` from here.

numba's first compilation (or cached-kernel load) in a process imports its NumPy implementations, and
``numba.np.arraymath`` probes for BLAS at import by importing ``scipy.linalg``. Where SciPy is installed
(``tools/install.sh`` does not need it; research environments usually have it) that import is a sizeable
part of loading a preorderer and computing its first ``pos_xl`` in a fresh process.
The probe only decides whether numba's ``np.correlate`` / ``np.convolve`` call BLAS, which no kernel
here uses, so this module imports ``numba.np.arraymath`` once with ``scipy.linalg`` hidden. Nothing
else changes: ``scipy.linalg`` stays importable, and ``np.dot`` / ``np.linalg`` in any numba code still
find BLAS when they compile (they check again then). Where ``scipy.linalg`` or ``numba.np.arraymath``
is already imported there is nothing to save and nothing is done.
"""

from __future__ import annotations

import sys


def _import_arraymath_without_blas_probe() -> None:
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # its import fails at once
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules["scipy.linalg"]


_import_arraymath_without_blas_probe()

from numba import njit, prange  # noqa: E402

__all__ = ["njit", "prange"]
