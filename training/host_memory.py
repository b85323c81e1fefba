"""Let glibc keep freed activation buffers for reuse instead of handing them back to the OS.

A CPU training step allocates and frees buffers of tens of MiB (Meso4 at batch 32 and 256x256:
67 MiB per first-block activation). glibc serves blocks above its mmap threshold (32 MiB at most
by default) with a fresh ``mmap`` and unmaps them on ``free``, so every step page-faults and
zero-fills them again. Raising the mmap and trim thresholds keeps them in the heap: on 2 cores
Meso4's step goes from about 70 to 120-140 images/s (``scripts/bench_train.py``). The setting
is process-wide and inherited by forked DataLoader workers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def keep_freed_host_memory(threshold_bytes: int = 1 << 30) -> bool:
    """Serve blocks below ``threshold_bytes`` from the heap and keep that much free memory.

    Returns False, changing nothing, where the C library has no ``mallopt`` (not glibc).
    """
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        log.debug("no glibc mallopt here; host memory is managed as usual")
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = bool(
        mallopt(M_MMAP_THRESHOLD, threshold_bytes) and mallopt(M_TRIM_THRESHOLD, threshold_bytes)
    )
    if not ok:
        log.warning("glibc refused mallopt thresholds of %d bytes", threshold_bytes)
    return ok


__all__ = ["keep_freed_host_memory"]
