"""Adaptive-makeup alpha multiplier on the celebrity photos: skin statistics vs the paper's
between-brows patch, per gender and for the eyeglass wearers; prints JSON.

    python scripts/bench_makeup_skin.py [--photos ../shared/data/faces/celebrities]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.fairness.metamorphic import MakeupConfig, adaptive_colours  # noqa: E402
from fairforensics.preprocessing.align import align_face  # noqa: E402
from fairforensics.preprocessing.faces import FaceAnalyzer  # noqa: E402


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "mean": round(float(np.mean(values)), 3),
        "min": round(float(np.min(values)), 3),
        "max": round(float(np.max(values)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "faces" / "celebrities"
    parser.add_argument("--photos", type=Path, default=default)
    args = parser.parse_args()
    attributes = args.photos / "attributes.csv"
    if not attributes.is_file():
        sys.exit(f"{attributes}: not found (pass --photos, the folder with attributes.csv)")
    analyzer = FaceAnalyzer()
    table: dict[str, dict[str, list[float]]] = {"skin": {}, "between_brows": {}}
    with attributes.open(newline="") as fh:
        for row in csv.DictReader(fh):
            rgb = cv2.imread(str(args.photos / row["file"]))[..., ::-1].copy()
            faces = analyzer.analyze(rgb)
            if not faces:
                print(f"{row['file']}: no face, skipped", file=sys.stderr)
                continue
            crop, _, lm = align_face(rgb, faces[0][1], size=256)
            for source, groups in table.items():
                cfg = MakeupConfig(colour="adaptive", skin_source=source)
                scale = adaptive_colours(crop, lm.astype(np.float64), cfg)[1]
                group = "eyeglasses" if row["eyeglasses"] == "yes" else row["gender"]
                groups.setdefault(group, []).append(scale)
    out = {
        src: {g: _summary(v) for g, v in sorted(groups.items())} for src, groups in table.items()
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
