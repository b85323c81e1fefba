"""Cost columns of the leaderboard (issue 38, item 6): parameters, multiply-accumulates per
input and CPU time per frame at batch 1, on the machine the table is made on.

* Parameters: every parameter of the built detector (``pretrained: false``; the count does not
  depend on the weights).
* MACs per input: torch's own counter (:class:`torch.utils.flop_counter.FlopCounterMode`) over
  one forward pass of one input at the detector's ``input_size``; it counts 2 FLOPs per
  multiply-accumulate of matmuls and convolutions, so MACs = FLOPs / 2. Operations it has no
  formula for (e.g. elementwise ones) are not counted. A video detector's input is one clip;
  its per-frame figures divide by the clip's frames.
* CPU ms per frame: the median wall time of ``repeats`` forward passes of one input (batch 1,
  ``torch.inference_mode``, after one warm-up pass) on ``threads`` CPU threads, divided by the
  frames of the input. The machine (CPU model, cores, threads) is written beside the figures.
"""

from __future__ import annotations

import logging
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.evaluation.tables import Table
from fairforensics.preprocessing.files import write_json

log = logging.getLogger(__name__)


def machine() -> str:
    """The CPU model and core count (Linux: ``/proc/cpuinfo``), for the table's caption."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores"


def detector_cost(name: str, *, repeats: int = 5, threads: int = 1) -> dict[str, Any]:
    """``{"detector", "params", "macs_per_frame", "cpu_ms_per_frame", "input", "threads"}`` of
    detector ``name`` (module docstring)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from fairforensics.detectors import build_detector

    if repeats < 1 or threads < 1:
        raise ValueError(f"repeats and threads must be >= 1, got {repeats} and {threads}")
    detector = build_detector(name, pretrained=False).eval()
    size = int(detector.cfg.input_size)
    frames = int(detector.test_clip_size) if detector.input_kind == "clip" else 1
    shape = (1, frames, 3, size, size) if detector.input_kind == "clip" else (1, 3, size, size)
    batch = {"image": torch.zeros(shape), "label": torch.zeros(1, dtype=torch.long)}
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            counter = FlopCounterMode(display=False)
            with counter:
                detector(batch)
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                detector(batch)
                times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(previous)
    return {
        "detector": name,
        "params": int(sum(p.numel() for p in detector.parameters())),
        "macs_per_frame": counter.get_total_flops() / 2 / frames,
        "cpu_ms_per_frame": 1000.0 * float(np.median(times)) / frames,
        "input": list(shape),
        "threads": threads,
    }


def cost_table(names: list[str], out: Path, *, repeats: int = 5, threads: int = 1) -> Table:
    """The cost table of ``names`` (``costs.*`` and ``costs.json`` with the machine in
    ``out``); a detector that cannot be built or run is logged and left out."""
    rows, records = [], []
    for name in names:
        try:
            cost = detector_cost(name, repeats=repeats, threads=threads)
        except Exception as exc:  # noqa: BLE001 - a plugin's failure must not end the sweep
            log.warning("costs: %s: %s: %s", name, type(exc).__name__, exc)
            continue
        records.append(cost)
        rows.append(
            [name, cost["params"], cost["macs_per_frame"] / 1e9, cost["cpu_ms_per_frame"],
             "x".join(map(str, cost["input"][1:]))]
        )  # fmt: skip
    where = machine()
    table = Table(
        ["Detector", "Params", "GMACs/frame", "CPU ms/frame", "input"],
        rows,
        title=f"Cost at batch 1 on {where}, {threads} thread(s) (torch.utils.flop_counter)",
    )
    table.write(out / "costs")
    write_json(
        out / "costs.json", {"machine": where, "threads": threads, "rows": records}, indent=2
    )
    return table
