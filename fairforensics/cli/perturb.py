"""Apply DeeperForensics-1.0's perturbations (seven types, five levels) to an image or a video.

  fairforensics perturb --type GB --level 3 INPUT OUTPUT
  fairforensics perturb --type GB:2+VC:3 in.mp4 out.mp4        (a chain, in order)
  fairforensics perturb --type random --level random --meta meta.txt in.mp4 out.mkv

Types: CS colour saturation, CC colour contrast, BW local block-wise, GNC white Gaussian noise,
GB Gaussian blur, JPEG (down/up-sampling), VC video compression (H.264 CRF; videos only).
A video's frames are written losslessly (.mkv/.avi: FFV1; .mp4/.mov/.m4v: lossless RGB H.264)
unless the chain ends with VC, whose H.264 encode is the output.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fairforensics.cli.errors import configure_logging, run_cli
from fairforensics.cli.helptext import guide
from fairforensics.configs.writable import check_writable_file
from fairforensics.preprocessing.perturb_files import perturb_file
from fairforensics.preprocessing.perturbations import chain_name


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("perturb"),
    )
    p.add_argument(
        "--type",
        required=True,
        help="CS | CC | BW | GNC | GB | JPEG | VC | random, or a chain TYPE:LEVEL+TYPE:LEVEL",
    )
    p.add_argument("--level", help="1-5 | random (for the types given without a level)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random draws (default 0)")
    p.add_argument("--meta", type=Path, help="add the output to this meta file (the reference's)")
    p.add_argument("input", type=Path, help="an image or a video")
    p.add_argument("output", type=Path, help="the perturbed image or video")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_writable_file(args.output, "OUTPUT")  # before any frame is decoded
    configure_logging(level=logging.INFO, format="%(message)s")
    chain = perturb_file(args.input, args.output, args.type, args.level, args.seed, args.meta)
    print(f"{args.output}: {chain_name(chain)}")
    return 0


if __name__ == "__main__":
    run_cli(main)
