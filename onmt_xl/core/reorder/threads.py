"""Threads of the parallel (numba ``prange``) kernels: training, word clustering, batch decoding.

numba's OpenMP threading layer keeps idle threads *spinning* by default; on a machine whose cores
are shared (other processes, or vCPUs that are hyper-threads) the spinning threads steal time from
the working one, so more threads can make a pass slower than one thread. :func:`ensure_threading` therefore starts the
thread pool with ``OMP_WAIT_POLICY=passive`` (unless the variable is already set) and restores the environment right
away, so child processes (e.g. ``onmt_train`` started by the pipeline) do not inherit the setting.

The OpenMP layer also shares the OpenMP runtime with torch: starting numba's pool sets the runtime's thread count
for the calling thread to numba's, and torch's next operations run on that many threads (more than
``OMP_NUM_THREADS`` or ``torch.set_num_threads`` asked for, oversubscribing a loaded machine, and with other float
sums). :func:`ensure_threading` puts torch's count back, and a kernel called inside a torch process (the
``xl_position`` transform in ``onmt_train``, ``onmt_translate`` or a server) runs under :func:`caller_threads`,
which also keeps numba's threads within torch's for the call.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator, Optional

_started = False


def ensure_threading() -> None:
    """Start numba's thread pool once (passive OpenMP waiting, see the module docstring); torch's thread count, where
    torch is loaded, stays what it was (the pool's start sets the OpenMP runtime's to numba's)."""
    global _started
    if _started:
        return
    torch_threads = _torch_threads()
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
        _restore_torch_threads(torch_threads)
    _started = True


def _torch_threads() -> Optional[int]:
    """torch's intra-op thread count, or None where torch is not loaded (it is never imported here)."""
    torch = sys.modules.get("torch")
    return None if torch is None else torch.get_num_threads()


def _restore_torch_threads(threads: Optional[int]) -> None:
    if threads is not None and sys.modules["torch"].get_num_threads() != threads:
        sys.modules["torch"].set_num_threads(threads)


def set_threads(threads: Optional[int]) -> int:
    """Use ``threads`` numba threads (``None`` or ``<= 0``: every core numba sees); returns the count."""
    import numba

    ensure_threading()
    limit = numba.config.NUMBA_NUM_THREADS
    n = limit if threads is None or threads <= 0 else min(threads, limit)
    numba.set_num_threads(n)
    return n


@contextmanager
def caller_threads() -> Iterator[int]:
    """numba's threads for parallel kernels called from a process that may run torch: at most torch's intra-op
    thread count (the process' budget) while open, numba's own count and torch's thread count as they were
    afterwards. Yields the thread count of the call. torch is not imported: without it, numba's count stays."""
    import numba

    torch_threads = _torch_threads()
    ensure_threading()
    own = numba.get_num_threads()
    n = own if torch_threads is None else max(1, min(own, torch_threads))
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(own)
        _restore_torch_threads(torch_threads)
