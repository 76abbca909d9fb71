"""Threads of the parallel (numba ``prange``) kernels: training, word clustering, batch decoding.

numba's OpenMP threading layer keeps idle threads *spinning* by default; on a machine whose cores
are shared (other processes, or vCPUs that are hyper-threads) the spinning threads steal time from
the working one, so more threads can make a pass slower than one thread. :func:`ensure_threading` therefore starts the thread pool with ``OMP_WAIT_POLICY=passive``
(unless the variable is already set) and restores the environment right away, so child processes
(e.g. ``onmt_train`` started by the pipeline) do not inherit the setting.
"""

from __future__ import annotations

import os
from typing import Optional

_started = False


def ensure_threading() -> None:
    """Start numba's thread pool once (passive OpenMP waiting, see the module docstring)."""
    global _started
    if _started:
        return
    prev = os.environ.get("OMP_WAIT_POLICY")
    if prev is None:
        os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        from numba.np.ufunc import parallel

        parallel._launch_threads()
    except Exception:  # a numba without this (private) entry point: the pool starts on first use
        pass
    finally:
        if prev is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
    _started = True


def set_threads(threads: Optional[int]) -> int:
    """Use ``threads`` numba threads (``None`` or ``<= 0``: every core numba sees); returns the count."""
    import numba

    ensure_threading()
    limit = numba.config.NUMBA_NUM_THREADS
    n = limit if threads is None or threads <= 0 else min(threads, limit)
    numba.set_num_threads(n)
    return n
