#!/usr/bin/env python
"""Print training throughput as JSON: data loading, training step, and both together.

Each figure comes with the same measurement for a re-creation of DeepfakeBench's loader and
training step (fp32, NCHW) on the same frames and model. Example::

    python scripts/bench_train.py --detector xception --batch-size 8 --resolution 256
    python scripts/bench_train.py --detector xception --device cuda --precision bf16
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fairforensics.benchmarks.train import bench_train  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--detector", default="meso4")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--resolution", type=int, default=256)
    p.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32")
    p.add_argument(
        "--channels-last",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="NHWC memory format for our step (the trainer's default); the reference is NCHW fp32",
    )
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument(
        "--keep-host-memory",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the trainer's glibc heap setting (process-wide: the reference gains too)",
    )
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (median)")
    p.add_argument("--compile", action="store_true", help="torch.compile our step's forward")
    p.add_argument("--no-cache", action="store_true", help="skip the packed-cache measurements")
    p.add_argument(
        "--index", help="dataset index to read frames from (default: 224 photos of --faces-dir)"
    )
    p.add_argument(
        "--faces-dir",
        type=Path,
        default=REPO.parent / "shared" / "data" / "faces",
        help="face photos for the default frames (default: ../shared/data/faces)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    result = bench_train(
        args.detector,
        batch_size=args.batch_size,
        resolution=args.resolution,
        precision=args.precision,
        channels_last=args.channels_last,
        device=args.device,
        steps=args.steps,
        num_workers=args.num_workers,
        index=args.index,
        faces_dir=args.faces_dir,
        cache=not args.no_cache,
        rounds=args.rounds,
        compile=args.compile,
        keep_host_memory=args.keep_host_memory,
    )
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
