"""torch.distributed helpers: one code path for a single process and for ``torchrun`` jobs.

``torchrun`` sets ``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK``; with them :func:`setup` joins the
process group (NCCL on CUDA, gloo on CPU). Without them everything runs as world size 1.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup(device_type: str) -> DistInfo:
    """Join the process group described by the ``torchrun`` environment (no-op for 1 process)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if not dist.is_initialized():
        backend = "nccl" if device_type == "cuda" else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local)
        dist.init_process_group(backend=backend)
    return DistInfo(world_size=dist.get_world_size(), rank=dist.get_rank(), local_rank=local)


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_lists(items: list[Any]) -> list[Any]:
    """Concatenate a Python list over all ranks (rank order); the list itself for 1 process."""
    if not active():
        return list(items)
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, items)
    return [x for part in parts for x in part]


def broadcast(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if not active():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def any_flag(flag: bool, device: torch.device) -> bool:
    """True on every rank if ``flag`` is true on any rank."""
    if not active():
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def barrier() -> None:
    if active():
        dist.barrier()


def teardown() -> None:
    """Leave the process group (end of a ``torchrun`` job)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
