"""How many threads torch and OpenCV use (issue 46, item 7): chosen from the cores this process
may run on and the loader workers beside it, so that the main process and the workers do not
oversubscribe the cores; a thread count the user set is kept.

The rule (:func:`main_threads`): the user's ``FF_NUM_THREADS``, else ``OMP_NUM_THREADS``, else
the cores left after one core for each loader worker and one for the main process's own Python
work (loading batches when there are no workers, logging, checkpoints), at least one. A loader
worker (:func:`init_worker_threads`) uses one thread for each. On the 2-core machine of the docs
the demo's training (no workers) thus runs on one thread, as fast as the best manual setting
(``scripts/bench_threads.py``; README, "Set-up"). Thread counts change the order in which floats
are summed, so results equal those of ``OMP_NUM_THREADS`` set to the same count.

Lowest layer: training, evaluation and preprocessing apply it; torch and OpenCV are imported only
when a function that sets them runs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from fairforensics.configs.loader import ConfigError

log = logging.getLogger(__name__)

#: environment variables that set the thread count, first found wins
USER_VARIABLES = ("FF_NUM_THREADS", "OMP_NUM_THREADS")


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which containers and ``taskset``
    narrow; else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def user_threads(env: Mapping[str, str] | None = None) -> int | None:
    """The thread count the user set (:data:`USER_VARIABLES`), or None; a value that is not a
    positive integer is a :class:`ConfigError` naming the variable."""
    env = os.environ if env is None else env
    for name in USER_VARIABLES:
        value = (env.get(name) or "").strip()
        if not value:
            continue
        try:
            count = int(value)
        except ValueError:
            count = 0
        if count < 1:
            raise ConfigError(f"{name}={value!r}: the thread count must be an integer >= 1")
        return count
    return None


def main_threads(
    workers: int = 0, *, cores: int | None = None, env: Mapping[str, str] | None = None
) -> int:
    """Threads of the main process's torch and OpenCV with ``workers`` loader workers beside
    it: the user's setting, else ``cores - workers - 1``, at least 1."""
    chosen = user_threads(env)
    if chosen is not None:
        return chosen
    cores = available_cores() if cores is None else cores
    return max(1, cores - max(0, workers) - 1)


def set_threads(count: int) -> None:
    """Give torch's intra-op pool and OpenCV's pool ``count`` threads in this process."""
    import cv2
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    cv2.setNumThreads(count)


def apply_main_threads(workers: int = 0) -> int:
    """Set this (main) process's thread counts by :func:`main_threads`; returns the count."""
    count = main_threads(workers)
    set_threads(count)
    log.debug("threads: %d (%d cores, %d loader workers)", count, available_cores(), workers)
    return count


def init_worker_threads(worker_id: int = 0) -> None:
    """A DataLoader ``worker_init_fn``: one torch and one OpenCV thread in a loader worker (the
    workers together use one core each; torch already sets its own, OpenCV does not)."""
    set_threads(1)
