"""Build the demo dataset (FaceForensics++ layout) from real face photographs; see preprocessing.demo_dataset."""

from __future__ import annotations

import argparse
import logging

from fairforensics.cli.errors import run_cli
from fairforensics.preprocessing.demo_dataset import make_demo_dataset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--out", default="demo_data/raw", help="output folder (default: demo_data/raw)"
    )
    parser.add_argument(
        "--faces", help="folder of face photos (default: scikit-image's astronaut.png)"
    )
    parser.add_argument(
        "--attributes", help="CSV with a 'file' column and attribute columns for --faces"
    )
    parser.add_argument("--videos", type=int, default=40, help="number of real videos (even)")
    parser.add_argument(
        "--frames",
        type=int,
        default=8,
        help="frames per video (default 8: what configs/preprocess/demo.yaml samples)",
    )
    parser.add_argument("--size", type=int, default=320, help="frame height (and width)")
    parser.add_argument("--width", type=int, help="frame width, for non-square videos (e.g. 1280)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = make_demo_dataset(  # a DemoDataError or an unwritable --out: one "error:" line, exit 2
        args.out,
        args.videos,
        args.frames,
        args.size,
        width=args.width,
        faces_dir=args.faces,
        attributes_csv=args.attributes,
        seed=args.seed,
    )
    print(f"demo dataset written to {out}")
    return 0


if __name__ == "__main__":
    run_cli(main)
