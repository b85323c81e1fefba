#!/usr/bin/env python
"""Print JSON: memory of one training step and step time of registered detectors (image or video).

Each detector runs in a fresh process (its memory is its own). Examples::

    python scripts/bench_detectors.py --detectors meso4 xception --batch-size 2
    python scripts/bench_detectors.py --detectors video --batch-size 1 --clip-size 8
    python scripts/bench_detectors.py --detectors video --device cuda --precision bf16

``--detectors`` takes names, or ``video`` / ``image`` / ``all`` (every registered detector of
that kind). Without ``--batch-size`` each detector uses its YAML's (DeepfakeBench's) batch size,
without ``--clip-size`` its own clip size, without ``--resolution`` its input size.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fairforensics.benchmarks.detectors import bench_detector  # noqa: E402
from fairforensics.configs import import_modules  # noqa: E402
from fairforensics.detectors import get_detector_class, list_detectors  # noqa: E402

KINDS = {"video": "clip", "image": "frame"}


def detector_names(names: list[str]) -> list[str]:
    """Names as given, or every registered detector of a kind (``video``, ``image``, ``all``)."""
    if len(names) == 1 and names[0] in (*KINDS, "all"):
        every = list_detectors()
        if names[0] == "all":
            return every
        return [n for n in every if get_detector_class(n).input_kind == KINDS[names[0]]]
    unknown = sorted(set(names) - set(list_detectors()))
    if unknown:
        raise SystemExit(
            f"error: unknown detectors {unknown}; known: {', '.join(list_detectors())}"
        )
    return names


def _one(imports: list[str], name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """One detector in this (fresh) process; an error is returned, not raised."""
    import_modules(imports)
    try:
        return bench_detector(name, **kwargs)
    except Exception as exc:  # noqa: BLE001 - report it and go on with the next detector
        logging.getLogger("bench_detectors").debug("%s", traceback.format_exc())
        return {"detector": name, "error": f"{type(exc).__name__}: {exc}"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--detectors", nargs="+", required=True, help="names, or video | image | all")
    p.add_argument("--batch-size", type=int, help="default: the detector YAML's (DeepfakeBench's)")
    p.add_argument("--clip-size", type=int, help="video detectors: frames per clip")
    p.add_argument("--resolution", type=int, help="default: the detector's input size")
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32")
    p.add_argument("--steps", type=int, default=3, help="timed steps after the measured one")
    p.add_argument("--variant", choices=("deepfakebench", "paper"), help="detector YAML variant")
    p.add_argument(
        "--channels-last", action=argparse.BooleanOptionalAction, default=True,
        help="4-D weights in NHWC, as the trainer does",
    )  # fmt: skip
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    import_modules(args.imports)
    kwargs = {
        "batch_size": args.batch_size,
        "resolution": args.resolution,
        "device": args.device,
        "precision": args.precision,
        "steps": args.steps,
        "channels_last": args.channels_last,
        "variant": args.variant,
    }
    results = []
    ctx = multiprocessing.get_context("spawn")
    for name in detector_names(args.detectors):
        clip = args.clip_size if get_detector_class(name).input_kind == "clip" else None
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            results.append(
                pool.submit(_one, args.imports, name, {**kwargs, "clip_size": clip}).result()
            )
    print(json.dumps(results, indent=1))
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
