#!/usr/bin/env python
"""Time ``fairforensics verify`` on a synthetic tree of empty files (issue 46, item 9: a 100k-file
tree must list in seconds). Prints JSON: seconds to list the tree, to check an index of every
file without decoding, and to write and compare a SHA-256 manifest.

    python scripts/bench_verify.py --files 100000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index  # noqa: E402
from fairforensics.preprocessing.verify import (  # noqa: E402
    compare_manifest,
    scan_tree,
    verify_index,
    verify_tree,
    write_manifest,
)


def make_tree(root: Path, files: int, per_video: int) -> Path:
    """``files`` empty frames, ``per_video`` a folder, and the index that lists them."""
    videos = []
    for v in range(files // per_video):
        folder = root / "synthetic" / "real" / f"{v:06d}" / "frames"
        folder.mkdir(parents=True)
        rels = []
        for f in range(per_video):
            (folder / f"{f:03d}.png").touch()
            rels.append(f"synthetic/real/{v:06d}/frames/{f:03d}.png")
        videos.append(VideoEntry(f"{v:06d}", 0, "real", "test", rels))
    write_index(DatasetIndex("synthetic", "deepfake", videos, root=root), root / "synthetic.json")
    return root / "synthetic.json"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=100_000)
    p.add_argument("--per-video", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        index = make_tree(root, args.files, args.per_video)
        made = time.perf_counter() - start
        times = {}
        start = time.perf_counter()
        listed = scan_tree(root)
        times["list_tree_s"] = time.perf_counter() - start
        start = time.perf_counter()
        report = verify_index(index, decode=False, progress=False)
        times["verify_index_no_decode_s"] = time.perf_counter() - start
        manifest = root.parent / f"{root.name}.sha256"
        start = time.perf_counter()
        write_manifest(root, manifest, workers=args.workers, progress=False)
        times["write_manifest_s"] = time.perf_counter() - start
        start = time.perf_counter()
        check = verify_tree(root)
        compare_manifest(check, manifest, workers=args.workers, progress=False)
        times["compare_manifest_s"] = time.perf_counter() - start
        manifest.unlink()
    result = {
        "files": len(listed),
        "make_tree_s": round(made, 2),
        **{k: round(v, 3) for k, v in times.items()},
        "index_ok": report.ok,
        "manifest_ok": check.ok,
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
