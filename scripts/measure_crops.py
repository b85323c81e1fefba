"""How wide are these face crops? side / max(eye distance, eye-to-mouth distance), measured with
dlib on each image, and on our crops of the same faces (``--crop method:scale``); a Markdown table.

    python scripts/measure_crops.py ../shared/data/mesonet/test_images \
        --crop mesonet:2.86 --crop template:1.3 --crop template:1.0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.configs.crop import CropSpec  # noqa: E402
from fairforensics.preprocessing.crop_ratio import compare_crops  # noqa: E402
from fairforensics.preprocessing.video import IMAGE_SUFFIXES  # noqa: E402


def _spec(text: str) -> CropSpec:
    method, _, scale = text.partition(":")
    try:
        return CropSpec(method, float(scale or 1.3), 256)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc} (e.g. mesonet:2.86)") from None


def _images(paths: list[Path]) -> list[Path]:
    files = []
    for path in paths:
        found = sorted(path.rglob("*")) if path.is_dir() else [path]
        files += [p for p in found if p.suffix.lower() in IMAGE_SUFFIXES]
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="+", type=Path, help="images or folders of images")
    parser.add_argument("--crop", type=_spec, action="append", default=[], metavar="METHOD:SCALE")
    args = parser.parse_args()
    files = _images(args.images)
    if not files:
        parser.error("no images found")
    rgbs = [cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB) for p in files]
    rows = compare_crops(rgbs, args.crop)
    columns = list(rows[0])
    print("| image | " + " | ".join(f"{c} ratio (nose x, y)" for c in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for path, row in zip(files, rows, strict=True):
        cells = [
            "no face" if m is None else f"{m.ratio:.3f} ({m.nose[0]:.2f}, {m.nose[1]:.2f})"
            for m in row.values()
        ]
        print(f"| {path.parent.name}/{path.name} | " + " | ".join(cells) + " |")
    ranges = []
    for c in columns:
        values = [r[c].ratio for r in rows if r[c] is not None]
        ranges.append(f"{min(values):.2f}-{max(values):.2f} (mean {np.mean(values):.2f})")
    print("| range | " + " | ".join(ranges) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
