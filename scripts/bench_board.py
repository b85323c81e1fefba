"""Scale benchmark of the board's site (issue 49, item 5): stand-in bundles of ten detectors on
one synthetic test set (``scripts/bench_scale.py``'s predictions: 32 frames a video, gender and
race groups), built into a site; prints JSON of CPU seconds and peak memory.

Each phase runs in its own process, the bundles already written: ``summaries`` (each bundle's
statistics computed once and cached: what a new bundle costs), ``cold`` (the tables and pages
from cached summaries, the column tie tests computed), ``warm`` (a rebuild from the same bundles:
everything cached) and ``add`` (one more bundle: its summary and the new column's ties). CPU is
``time.process_time`` of the phase, memory the process's peak resident set (imports included).

    python scripts/bench_board.py                      # 1e5 frames, 10 detectors
    python scripts/bench_board.py --frames 1e4 1e5 3e5 --detectors 10

``growth`` gives each phase's exponent b of CPU ~ frames^b over the sizes run.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PHASES = ("summaries", "cold", "warm", "add")


def _bundles(folder: Path, detectors: int) -> list[Any]:
    """The admitted stand-in bundles of the evaluation folders under ``folder``."""
    from fairforensics.benchmarks.submissions.admitted import AdmittedBundle

    out = []
    for d in range(detectors):
        name = f"det{d:02d}"
        sha = hashlib.sha256(name.encode()).hexdigest()
        out.append(AdmittedBundle(sha, name, folder / name, (folder / name,),
                                  f"2026-01-01T00:{d:02d}:00Z", "bench"))  # fmt: skip
    return out


def prepare(folder: Path, frames: int, detectors: int) -> None:
    """``detectors`` evaluation folders of ``frames`` rows and one more (for ``add``), written
    ten at a time by ``scripts/bench_scale.py``."""
    spec = importlib.util.spec_from_file_location(
        "bench_scale", Path(__file__).with_name("bench_scale.py")
    )
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)  # a sibling script, not a package: loaded by its path
    DETECTORS, _videos, write_predictions_files = (
        scale.DETECTORS,
        scale._videos,
        scale.write_predictions_files,
    )

    videos = _videos(frames, seed=0)
    done = 0
    while done < detectors + 1:  # bench_scale writes DETECTORS folders a call
        part = folder / f"part{done}"
        write_predictions_files(part, videos, seed=done)
        for d in range(DETECTORS):
            if done < detectors + 1:
                (part / f"det{d:02d}").rename(folder / f"det{done:02d}")
                info = json.loads((folder / f"det{done:02d}" / "eval.json").read_text())
                info["detector"] = f"det{done:02d}"
                (folder / f"det{done:02d}" / "eval.json").write_text(json.dumps(info))
                done += 1


def phase(name: str, folder: Path, detectors: int) -> dict[str, Any]:
    """Run one phase in this process; its CPU seconds and peak memory."""
    from fairforensics.benchmarks.site import build_site
    from fairforensics.benchmarks.site.build import build
    from fairforensics.benchmarks.site.summary import SiteSettings, summarize

    bundles = _bundles(folder, detectors + 1)
    cache_dir, site = folder / "cache", folder / "site"
    cpu = time.process_time()
    if name == "summaries":
        settings = SiteSettings()
        cache = settings.cache(cache_dir, ["SYN"])
        for b in bundles[:detectors]:
            summarize(b, settings, cache, ["SYN"])
    elif name in ("cold", "warm"):
        build(bundles[:detectors], site, benchmark="bench", test_sets=["SYN"], cache_dir=cache_dir)
    else:
        build_site(bundles, site, benchmark="bench", test_sets=["SYN"], cache_dir=cache_dir)
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {"cpu_s": round(cpu, 2), "peak_rss_gib": round(peak, 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--frames", nargs="+", type=float, default=[1e5], help="test set sizes")
    p.add_argument("--detectors", type=int, default=10)
    p.add_argument("--child", choices=PHASES, help=argparse.SUPPRESS)
    p.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(phase(args.child, args.folder, args.detectors)))
        return 0
    runs: dict[str, dict[str, Any]] = {}
    for frames in map(int, args.frames):
        with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
            folder = Path(tmp)
            prepare(folder, frames, args.detectors)
            row: dict[str, Any] = {}
            for name in PHASES:
                done = subprocess.run(
                    [sys.executable, __file__, "--child", name, "--folder", str(folder),
                     "--detectors", str(args.detectors)],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                row[name] = json.loads(done.stdout.strip().splitlines()[-1])
            row["pages"] = len(list((folder / "site").rglob("*.html")))
            runs[str(frames)] = row
        print(json.dumps({str(frames): row}), file=sys.stderr)
    sizes = [int(f) for f in runs]
    growth = {}
    if len(sizes) > 1:
        for name in PHASES:
            cpu = [max(runs[str(n)][name]["cpu_s"], 1e-3) for n in sizes]
            growth[name] = round(float(np.polyfit(np.log(sizes), np.log(cpu), 1)[0]), 2)
    print(json.dumps({"detectors": args.detectors, "runs": runs, "growth": growth}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
