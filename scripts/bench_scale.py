"""Scale benchmark (issue 47): every stage that sees all rows of an index or a predictions file,
at 1e4, 1e5 and 1e6 frames (3e6 with ``--large``), in CPU seconds and peak memory; prints JSON.

Each stage runs in its own process (started with the synthetic files already written) and
reports the CPU seconds of the stage itself (``time.process_time`` plus the CPU of its child
processes, e.g. DataLoader workers) and its process's peak resident memory (``ru_maxrss`` from
``wait4``, imports included; ``rss_before_gib`` is the peak before the stage began). The
references are measured in the same run: ``json.load`` of the index, a C CSV read of the
predictions (pyarrow), a raw ``cv2.imread`` loop over the loader's PNGs. The files are
synthetic, in the project's own formats: 32 frames a video, 40 % real videos and four fake
methods, gender (62/38 %) x race (55/25/15/5 %) groups of unequal size, ten detectors of
different quality whose scores share a per-video effect. The stages call the public entry
points (the CLI functions, ``read_index``, ``FrameDataset`` + ``TrainSampler``, the
DataLoader), so they measure whatever code is installed.

    python scripts/bench_scale.py                         # 1e4 1e5 1e6, every stage
    python scripts/bench_scale.py --large                 # and 3e6
    python scripts/bench_scale.py --sizes 1e4 1e5 --stages read_index combine --timeout 300

``growth`` gives each stage's exponent b of CPU ~ n^b (least squares over the sizes it
completed). A stage past ``--timeout`` wall seconds is killed and reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

FRAMES_PER_VIDEO = 32
DETECTORS = 10
METHODS = ("Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures")
GENDER = (("female", 0.62), ("male", 0.38))
RACE = (("white", 0.55), ("asian", 0.25), ("black", 0.15), ("indian", 0.05))
LOADER_IMAGES = 320  # 256 px PNGs for the loader stages (independent of the size)
SCALED = (
    "json_load", "read_index", "combine", "csv_read", "read_predictions", "write_predictions",
    "leaderboard_inputs", "fairness", "compare_with_best", "leaderboard", "test_predictions",
    "train_index",
)  # fmt: skip
FIXED = ("imread", "loader_raw", "loader_augmented")
CLI_STAGES = ("combine", "fairness", "leaderboard", "test_predictions")  # their exit code counts
STAGES = SCALED + FIXED


# ---------------------------------------------------------------- synthetic files


def _videos(n_frames: int, seed: int) -> dict[str, np.ndarray]:
    """Per video: id, method, label, split, gender, race (seeded)."""
    rng = np.random.default_rng(seed)
    n = max(n_frames // FRAMES_PER_VIDEO, 8)
    label = (rng.random(n) >= 0.4).astype(np.int64)
    method = np.where(label == 0, "real", np.array(METHODS)[rng.integers(0, len(METHODS), n)])
    pick = lambda groups: np.array([g for g, _ in groups])[  # noqa: E731
        rng.choice(len(groups), n, p=[p for _, p in groups])
    ]
    split = np.array(["train", "val", "test"])[rng.choice(3, n, p=[0.8, 0.1, 0.1])]
    return {
        "id": np.array([f"{i:07d}" for i in range(n)]),
        "method": method,
        "label": label,
        "split": split,
        "gender": pick(GENDER),
        "race": pick(RACE),
    }


def write_index(path: Path, videos: dict[str, np.ndarray], name: str) -> None:
    """A dataset index (schema version 1) of the videos, 32 frames and landmarks each."""
    entries = []
    for vid, method, label, split, gender, race in zip(
        videos["id"], videos["method"], videos["label"], videos["split"], videos["gender"],
        videos["race"], strict=True,
    ):  # fmt: skip
        folder = f"{method}/{vid}"
        entries.append(
            {
                "id": str(vid), "label": int(label), "method": str(method), "split": str(split),
                "frames": [f"{folder}/frames/{i:03d}.png" for i in range(FRAMES_PER_VIDEO)],
                "landmarks": [f"{folder}/landmarks/{i:03d}.npy" for i in range(FRAMES_PER_VIDEO)],
                "masks": None,
                "attributes": {"gender": str(gender), "race": str(race)},
            }
        )  # fmt: skip
    data = {"schema_version": 1, "dataset": name, "task": "deepfake", "videos": entries}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def write_predictions_files(folder: Path, videos: dict[str, np.ndarray], seed: int) -> None:
    """Ten detectors' evaluation folders (``eval.json`` + ``predictions/SYN.csv``)."""
    from fairforensics.evaluation.predictions import Predictions, write_predictions

    rng = np.random.default_rng(seed)
    n_videos = len(videos["id"])
    rows = np.repeat(np.arange(n_videos), FRAMES_PER_VIDEO)
    frame = np.tile(np.arange(FRAMES_PER_VIDEO), n_videos)
    label = videos["label"][rows]
    effect = rng.normal(0, 1.0, n_videos)[rows]  # what the detectors share about a video
    for d in range(DETECTORS):
        strength = 1.2 + 0.08 * d
        logit = strength * (2 * label - 1) + effect + rng.normal(0, 1.0, len(rows))
        pred = Predictions(
            dataset=np.full(len(rows), "SYN", dtype=object),
            video_id=videos["id"][rows].astype(object),
            frame=frame,
            label=label,
            score=1 / (1 + np.exp(-logit)),
            method=videos["method"][rows].astype(object),
            attributes={
                "gender": videos["gender"][rows].astype(object),
                "race": videos["race"][rows].astype(object),
            },
        )
        out = folder / f"det{d:02d}"
        (out / "predictions").mkdir(parents=True, exist_ok=True)
        write_predictions(out / "predictions" / "SYN.csv", pred)
        info = {"detector": f"det{d:02d}", "train_data": "FF", "test_data": ["SYN"],
                "threshold": 0.5}  # fmt: skip
        (out / "eval.json").write_text(json.dumps(info), encoding="utf-8")


def write_pngs(folder: Path, count: int, seed: int) -> None:
    """``count`` 256 px face-like PNG crops and an index over them (10 frames a video)."""
    import cv2

    rng = np.random.default_rng(seed)
    videos = []
    per_video = 10
    for v in range(count // per_video):
        frames = []
        for i in range(per_video):
            rel = f"real/{v:04d}/frames/{i:03d}.png"
            image = cv2.GaussianBlur(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8), (0, 0), 3)
            cv2.circle(image, (128, 128), 80 + i, (200, 170, 150), -1)
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(folder / rel), image)
            frames.append(rel)
        videos.append({"id": f"{v:04d}", "label": v % 2, "method": "fake" if v % 2 else "real",
                       "split": "train", "frames": frames, "landmarks": None, "masks": None,
                       "attributes": {}})  # fmt: skip
    data = {"schema_version": 1, "dataset": "PNG", "task": "deepfake", "videos": videos}
    (folder / "png.json").write_text(json.dumps(data), encoding="utf-8")


def prepare(folder: Path, n_frames: int, seed: int) -> None:
    """Every synthetic file of one size under ``folder``."""
    videos = _videos(n_frames, seed)
    write_index(folder / "index.json", videos, "SYN")
    half = len(videos["id"]) // 2
    write_index(folder / "a" / "A.json", {k: v[:half] for k, v in videos.items()}, "A")
    write_index(folder / "b" / "B.json", {k: v[half:] for k, v in videos.items()}, "B")
    write_predictions_files(folder / "evals", videos, seed)


# ---------------------------------------------------------------- stages


def _predictions_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("evals/det*/predictions/SYN.csv"))


def stage(name: str, folder: Path) -> Callable[[], Any]:
    """The work of stage ``name`` on the files in ``folder`` (its set-up done before)."""
    first = _predictions_files(folder)[0] if name in SCALED else None
    out = folder / "out" / name
    if name == "json_load":
        return lambda: json.loads((folder / "index.json").read_text(encoding="utf-8"))
    if name == "read_index":
        from fairforensics.preprocessing.index import read_index

        return lambda: read_index(folder / "index.json")
    if name == "combine":
        from fairforensics.cli.combine import main

        argv = ["--name", "AB", "--out", str(out / "AB.json"), str(folder / "a" / "A.json"),
                str(folder / "b" / "B.json")]  # fmt: skip
        return lambda: main(argv)
    if name == "csv_read":
        import pyarrow.csv

        return lambda: pyarrow.csv.read_csv(first)
    if name == "read_predictions":
        from fairforensics.evaluation.predictions import read_predictions

        return lambda: read_predictions(first)
    if name == "write_predictions":
        from fairforensics.evaluation.predictions import read_predictions, write_predictions

        pred = read_predictions(first)
        out.mkdir(parents=True, exist_ok=True)
        return lambda: write_predictions(out / "SYN.csv", pred)
    if name == "leaderboard_inputs":  # the ten files of one leaderboard column, held at once
        from fairforensics.evaluation.predictions import read_predictions

        return lambda: len([read_predictions(p) for p in _predictions_files(folder)])
    if name == "fairness":
        import shutil

        from fairforensics.cli.fairness import main

        alone = folder / "alone" / "SYN.csv"  # outside its evaluation folder (no eval.json)
        alone.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(first, alone)
        argv = ["--predictions", str(alone), "--attributes", "gender", "race", "--out",
                str(out), "--no-figures"]  # fmt: skip
        return lambda: main(argv)
    if name == "compare_with_best":
        from fairforensics.evaluation.predictions import read_predictions
        from fairforensics.evaluation.significance import compare_with_best

        preds = {p.parent.parent.name: read_predictions(p) for p in _predictions_files(folder)}
        return lambda: compare_with_best(preds, level="frame")
    if name == "leaderboard":
        from fairforensics.cli.test import main

        dirs = [str(p.parent.parent) for p in _predictions_files(folder)]
        return lambda: main(["--leaderboard", *dirs, "--out", str(out)])
    if name == "test_predictions":
        from fairforensics.cli.test import main

        return lambda: main(["--predictions", f"SYN={first}", "--name", "det00", "--out", str(out)])
    if name == "train_index":
        return lambda: _train_index(folder / "index.json")
    if name == "imread":
        return lambda: _imread(folder)
    if name in ("loader_raw", "loader_augmented"):
        return lambda: _loader(folder, augmented=name == "loader_augmented")
    raise ValueError(f"unknown stage {name!r}; stages: {', '.join(STAGES)}")


def _train_index(path: Path) -> int:
    """The training set and its class x group balanced sampler from the index; one epoch drawn."""
    from fairforensics.preprocessing.frames import FrameDataset
    from fairforensics.preprocessing.index import read_index
    from fairforensics.training.samplers import TrainSampler

    data = FrameDataset([read_index(path)], "train", frame_num=FRAMES_PER_VIDEO, resolution=256,
                        train=True)  # fmt: skip
    sampler = TrainSampler(data.labels, mode="class_group_balanced", groups=data.groups("gender"))
    return sum(1 for _ in sampler)


def _imread(folder: Path) -> int:
    """The reference: every loader PNG read by ``cv2.imread`` and turned into RGB."""
    import cv2

    index = json.loads((folder / "png.json").read_text(encoding="utf-8"))
    n = 0
    for video in index["videos"]:
        for rel in video["frames"]:
            cv2.cvtColor(cv2.imread(str(folder / rel)), cv2.COLOR_BGR2RGB)
            n += 1
    return n


def _loader(folder: Path, *, augmented: bool) -> dict[str, float]:
    """The training DataLoader (2 workers) over the PNGs, with or without the default
    augmentation: the CPU per frame of an epoch of all PNGs less an epoch of 32 (start-up
    left out), the workers' CPU included."""
    from torch.utils.data import DataLoader

    from fairforensics.preprocessing.frames import FrameDataset, collate
    from fairforensics.preprocessing.index import read_index
    from fairforensics.training.albu_fast import FusedAugment
    from fairforensics.training.augment import build_augment
    from fairforensics.training.config import AugmentConfig

    augment = FusedAugment(build_augment(AugmentConfig(), 256)) if augmented else None
    index = read_index(folder / "png.json")
    cpu = []
    for videos in (index.videos[:3], index.videos):
        index.videos = videos
        data = FrameDataset([index], "train", frame_num=10, resolution=256, augment=augment,
                            train=True)  # fmt: skip
        loader = DataLoader(data, batch_size=32, num_workers=2, collate_fn=collate)
        start = _cpu_with_children()
        frames = sum(len(batch["label"]) for batch in loader)
        cpu.append((_cpu_with_children() - start, frames))
    (small, n_small), (full, n_full) = cpu
    return {
        "frames": n_full,
        "cpu_ms_per_frame": round(1000 * (full - small) / (n_full - n_small), 3),
    }


def _cpu_with_children() -> float:
    """CPU seconds of this process and its reaped children."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# ---------------------------------------------------------------- driver


def child(name: str, folder: Path) -> None:
    """Run one stage in this process and print its CPU and wall seconds as JSON."""
    work = stage(name, folder)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = time.process_time(), time.perf_counter()
    result = work()
    cpu = time.process_time() - cpu
    if name in CLI_STAGES and result != 0:
        raise SystemExit(f"{name}: the command exited with {result}")
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += (after.ru_utime - kids.ru_utime) + (after.ru_stime - kids.ru_stime)
    info = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "rss_before_gib": round(before / 2**20, 3),
            "self_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
            "children_peak_rss_gib": round(after.ru_maxrss / 2**20, 3)}  # fmt: skip
    if name in ("loader_raw", "loader_augmented"):
        info.update(result)
    elif name == "imread":
        info["frames"] = result
        info["cpu_ms_per_frame"] = round(1000 * cpu / max(result, 1), 3)
    print(json.dumps(info))


def run_child(args: list[str], timeout: float) -> dict[str, Any]:
    """Run this script as a child; its JSON, peak RSS (``wait4``), or why it has none."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, *args], stdout=out, stderr=err,
                                env=env, start_new_session=True)  # fmt: skip
        start = time.monotonic()
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"error": f"killed at {timeout:.0f} s wall",
                        "peak_rss_gib": round(usage.ru_maxrss / 2**20, 3)}  # fmt: skip
            time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        lines = [line for line in out.read().splitlines() if line.startswith("{")]
        peak = round(usage.ru_maxrss / 2**20, 3)
        if proc.returncode != 0 or not lines:
            tail = err.read().strip().splitlines()[-3:]
            return {"error": f"exit {proc.returncode}: {' | '.join(tail)}", "peak_rss_gib": peak}
        return {**json.loads(lines[-1]), "peak_rss_gib": peak}


def growth(sizes: list[int], cpu: list[float | None]) -> float | None:
    """The exponent b of cpu ~ n^b by least squares over the completed sizes (>= 2)."""
    pts = [(np.log(n), np.log(c)) for n, c in zip(sizes, cpu, strict=True) if c and c > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return round(float(np.polyfit(x, y, 1)[0]), 2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", nargs="+", type=float, default=[1e4, 1e5, 1e6], help="frames")
    p.add_argument("--large", action="store_true", help="add 3e6 frames (DFDC)")
    p.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    p.add_argument("--timeout", type=float, default=900.0, help="wall seconds a stage may run")
    p.add_argument(
        "--workdir", type=Path, help="where the synthetic files go (default: a temp dir)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--prepare", type=int, help=argparse.SUPPRESS)
    p.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.prepare is not None:  # 0: the loader's PNGs
        if args.prepare:
            prepare(args.folder, args.prepare, args.seed)
        else:
            write_pngs(args.folder, LOADER_IMAGES, args.seed)
        return 0
    if args.child:
        child(args.child, args.folder)
        return 0
    sizes = sorted({int(n) for n in args.sizes} | ({3_000_000} if args.large else set()))
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        report: dict[str, Any] = {"cpu_count": os.cpu_count(), "sizes": sizes, "stages": {}}
        scaled = [s for s in args.stages if s in SCALED]
        for n in sizes if scaled else []:
            folder = Path(tmp) / f"n{n}"
            t = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--prepare", str(n), "--folder", str(folder),
                            "--seed", str(args.seed)], check=True)  # fmt: skip
            print(
                f"# {n} frames: files written in {time.perf_counter() - t:.0f} s", file=sys.stderr
            )
            for name in scaled:
                res = run_child(["--child", name, "--folder", str(folder)], args.timeout)
                report["stages"].setdefault(name, {})[str(n)] = res
                print(f"# {n} {name}: {res}", file=sys.stderr)
        fixed = [s for s in args.stages if s in FIXED]
        if fixed:
            folder = Path(tmp) / "png"
            subprocess.run([sys.executable, __file__, "--prepare", "0", "--folder", str(folder),
                            "--seed", str(args.seed)], check=True)  # fmt: skip
            for name in fixed:
                res = run_child(["--child", name, "--folder", str(folder)], args.timeout)
                report["stages"][name] = res
                print(f"# {name}: {res}", file=sys.stderr)
        report["growth"] = {
            name: growth(sizes, [by.get(str(n), {}).get("cpu_s") for n in sizes])
            for name, by in report["stages"].items()
            if name in SCALED
        }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
