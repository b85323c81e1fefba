"""Thread settings against the demo's training (issue 46, item 7): the default thread policy
against ``OMP_NUM_THREADS=1`` and ``=2``, wall and CPU seconds of each, and the numbers each run
wrote (the same numbers whatever the threads, where the threads are the same).

  OMP_NUM_THREADS= python scripts/bench_threads.py --epochs 2 --repeats 1 > threads.json

Needs the demo's index (``make demo``, or its first two steps). Each setting runs
``scripts/train.py`` with ``configs/train/demo.yaml`` in a fresh process; CPU seconds are the
child's user + system time (``resource.getrusage``), so they stay meaningful on a shared machine
where wall seconds do not. ``--repo`` runs another checkout's code (e.g. before a change).
Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: setting -> OMP_NUM_THREADS (None: unset, the default policy decides)
SETTINGS = {"default": None, "omp1": "1", "omp2": "2"}

#: the variables a user sets to choose thread counts; unset for the default
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "FF_NUM_THREADS")


def run_training(
    setting: str, *, repo: Path, python: str, epochs: int, workers: int, out: Path
) -> dict:
    """Train the demo once under ``setting``; wall and CPU seconds and the run's test metrics."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if SETTINGS[setting] is not None:
        env["OMP_NUM_THREADS"] = SETTINGS[setting]
    env["PYTHONPATH"] = str(repo)
    run_name = f"bench-{setting}"
    command = [python, str(repo / "scripts" / "train.py"), "--detector", "meso4"]
    command += ["--config", str(repo / "configs" / "train" / "demo.yaml")]
    command += ["--set", f"train.epochs={epochs}", "--set", f"data.num_workers={workers}"]
    command += ["--set", f"output_dir={out}", "--set", f"run_name={run_name}"]
    command += ["--set", f"data.data_root={REPO / 'demo_data' / 'processed'}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=out, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{setting}: training failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    metrics = {}
    for path in sorted((out / run_name / "metrics").glob("*.json")):
        metrics[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "final_metrics": metrics.get("final") or metrics,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=1, help="training epochs of each run")
    p.add_argument("--workers", type=int, default=0, help="data.num_workers (the demo's: 0)")
    p.add_argument("--repeats", type=int, default=1, help="runs of each setting (interleaved)")
    p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--repo", type=Path, default=REPO, help="checkout whose code runs")
    p.add_argument("--python", default=sys.executable, help="its interpreter")
    args = p.parse_args()
    if not (REPO / "demo_data" / "processed" / "demo.json").is_file():
        raise SystemExit("no demo_data/processed/demo.json: run make demo first")
    report: dict = {
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average_1min_start": os.getloadavg()[0],
        "repo": str(args.repo),
        "epochs": args.epochs,
        "workers": args.workers,
        "runs": {s: [] for s in args.settings},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for setting in args.settings:
                out = Path(tmp) / f"{setting}-{repeat}"
                out.mkdir()
                report["runs"][setting].append(
                    run_training(
                        setting,
                        repo=args.repo,
                        python=args.python,
                        epochs=args.epochs,
                        workers=args.workers,
                        out=out,
                    )
                )
    report["load_average_1min_end"] = os.getloadavg()[0]
    report["summary"] = {
        s: {
            "wall_s_min": min(r["wall_s"] for r in runs),
            "cpu_s_min": min(r["cpu_s"] for r in runs),
        }
        for s, runs in report["runs"].items()
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
