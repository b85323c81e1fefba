#!/usr/bin/env python
"""Time the checks of a board on one bundle of a large test set (issue 49, item 4: a 1e6-row
predictions file checked in a few CPU seconds). Prints JSON: CPU and wall seconds to pack the
bundle (``make_bundle``, manifest included), to admit it the first time (manifest, provenance,
every row against the test items) and again (the cached verdict: the manifest only).

    python scripts/bench_submissions.py --rows 1000000 --frames 32
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.benchmarks.submissions.bundle import make_bundle  # noqa: E402
from fairforensics.benchmarks.submissions.checks import admit  # noqa: E402
from fairforensics.benchmarks.submissions.definition import (  # noqa: E402
    definition_json,
    parse_definition,
    set_json,
)
from fairforensics.evaluation.predictions import Predictions, write_predictions  # noqa: E402
from fairforensics.evaluation.provenance import write_provenance  # noqa: E402


def make_eval(folder: Path, videos: int, frames: int, seed: int = 0) -> Path:
    """An evaluation folder of ``videos`` x ``frames`` rows on the test set ``big``."""
    rng = np.random.default_rng(seed)
    n = videos * frames
    vid = np.repeat(np.arange(videos), frames)
    ids = np.array([f"{v:06d}" for v in range(videos)], dtype=object)
    methods = np.array(["real", "Deepfakes"], dtype=object)
    label = (vid % 2).astype(np.int64)
    pred = Predictions(
        dataset=np.full(n, "big", dtype=object), video_id=ids[vid],
        frame=np.tile(np.arange(frames), videos), label=label, score=rng.uniform(size=n),
        method=methods[label], attributes={"gender": np.array(["f", "m"], dtype=object)[vid % 2]},
    )  # fmt: skip
    path = folder / "predictions" / "big.csv"
    path.parent.mkdir(parents=True)
    write_predictions(path, pred)
    write_provenance(path, {"detector": "xception", "index_sha256": "ab" * 32, "settings": {}})
    info = {"detector": "xception", "train_data": "x", "test_data": ["big"], "threshold": 0.5}
    (folder / "eval.json").write_text(json.dumps(info), encoding="utf-8")
    return folder


def timed(fn, *args, **kw):
    """``fn(*args, **kw)`` with its CPU and wall seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn(*args, **kw)
    return out, round(time.process_time() - cpu, 3), round(time.perf_counter() - wall, 3)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--frames", type=int, default=32, help="rows per video")
    args = p.parse_args()
    videos = args.rows // args.frames
    items = [("real" if v % 2 == 0 else "Deepfakes", f"{v:06d}", args.frames)
             for v in range(videos)]  # fmt: skip
    definition = parse_definition(
        definition_json("bench", [set_json("big", items, index_sha256="ab" * 32)])
    )
    with tempfile.TemporaryDirectory(prefix="bench-submissions-") as tmp:
        root = Path(tmp)
        ev = make_eval(root / "eval", videos, args.frames)
        size = (ev / "predictions" / "big.csv").stat().st_size
        bundle, pack_cpu, pack_wall = timed(make_bundle, [ev], root / "bundle")
        cache = root / "cache"
        first, cpu1, wall1 = timed(admit, bundle, definition, cache_dir=cache)
        _, cpu2, wall2 = timed(admit, bundle, definition, cache_dir=cache)
    print(json.dumps({
        "rows": videos * args.frames, "videos": videos, "csv_mb": round(size / 1e6, 1),
        "pack_cpu_s": pack_cpu, "pack_wall_s": pack_wall,
        "admit_cpu_s": cpu1, "admit_wall_s": wall1, "track": first.track,
        "admit_cached_cpu_s": cpu2, "admit_cached_wall_s": wall2,
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
