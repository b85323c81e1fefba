#!/usr/bin/env python
"""Training input at scale: the training index's memory, and the loader's speed per core (JSON).

``index`` (``--frames N ...``): a synthetic in-memory index of N frames (32 a video, gender x
race groups), then the training dataset + class x group sampler built from it: build seconds,
bytes a frame the main process grew by (RSS), and for ``--workers`` forked processes that each
read every sample once (``__getitem__`` with the image decode replaced by a 1x1 frame, so only
the index is touched) and then run a full garbage collection, the bytes a frame each one owns
(USS: private pages of /proc/<pid>/smaps_rollup) and its PSS.

``loader`` (``--images N``): N 256 px PNG face crops; CPU milliseconds per frame (process time of
the main process and its persistent workers together, after a warm-up pass, so the numbers hold
on a shared machine) of a raw ``cv2.imread`` loop, of the DataLoader with 2 workers and no
augmentation, with the default augmentation as training runs it
(``training.albu_fast.FusedAugment``) and with the same pipeline through albumentations' own
calls, and each one's rate as a share of the raw decode rate.

Examples::

    OMP_NUM_THREADS=1 python scripts/bench_loader.py index --frames 1000000 3000000
    OMP_NUM_THREADS=1 python scripts/bench_loader.py loader --images 512
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FRAMES_PER_VIDEO = 32


def _status(pid: int | str = "self") -> dict[str, int]:
    """VmRSS/VmHWM and the smaps_rollup totals of ``pid``, in bytes."""
    out: dict[str, int] = {}
    for name in ("status", "smaps_rollup"):
        try:
            text = Path(f"/proc/{pid}/{name}").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if len(parts) == 2 and parts[1] == "kB":
                out[key.strip()] = int(parts[0]) * 1024
    out["USS"] = out.get("Private_Clean", 0) + out.get("Private_Dirty", 0)
    return out


def synthetic_index(n_frames: int) -> Any:
    """A DFDC-like in-memory index of ``n_frames`` frames (relative paths, attributes)."""
    from fairforensics.preprocessing.index import DatasetIndex, VideoEntry

    rng = np.random.default_rng(0)
    n_videos = max(n_frames // FRAMES_PER_VIDEO, 1)
    genders = rng.choice(["female", "male"], n_videos, p=[0.35, 0.65])
    races = rng.choice(["asian", "black", "white", "other"], n_videos, p=[0.2, 0.15, 0.55, 0.1])
    labels = (rng.random(n_videos) < 0.8).astype(int)
    videos = []
    for v in range(n_videos):
        label = int(labels[v])
        method = "real" if label == 0 else "DFDC"
        folder = f"dfdc_train_part_{v % 50:02d}/{v:08d}abcd"
        videos.append(
            VideoEntry(
                id=f"{v:08d}abcd",
                label=label,
                method=method,
                split="train",
                frames=[f"{folder}/frames/{f:03d}.png" for f in range(FRAMES_PER_VIDEO)],
                attributes={"gender": str(genders[v]), "race": str(races[v])},
                frame_indices=list(range(0, 10 * FRAMES_PER_VIDEO, 10)),
            )
        )
    return DatasetIndex(dataset="dfdc-synth", task="deepfake", videos=videos, root=Path("/data"))


def _touch_all(ds: Any, start: int, step: int, conn: Any) -> None:
    """Worker body: read every ``step``-th sample from ``start``, collect, report memory."""
    before = _status()
    t0 = time.process_time()
    for i in range(start, len(ds), step):
        ds[(0, i)]
    gc.collect()
    after = _status()
    conn.send({"before": before, "after": after, "cpu_s": time.process_time() - t0})
    conn.close()


def bench_index(n_frames: int, workers: int) -> dict[str, Any]:
    """Build seconds and bytes a frame of the training dataset + sampler over ``n_frames``."""
    import multiprocessing as mp

    import fairforensics.preprocessing.frames as frames_mod
    from fairforensics.preprocessing.frames import FrameDataset
    from fairforensics.training.samplers import TrainSampler

    index = synthetic_index(n_frames)
    gc.collect()
    base = _status()
    t0 = time.process_time()
    ds = FrameDataset([index], "train", frame_num=FRAMES_PER_VIDEO, resolution=1, train=True)
    sampler = TrainSampler(
        ds.labels,
        mode="class_group_balanced",
        groups=ds.group_codes("gender") if hasattr(ds, "group_codes") else ds.groups("gender"),
        seed=0,
        tag_epoch=True,
    )
    order = iter(sampler)  # one epoch's order, as the DataLoader holds it
    next(order)
    build_s = time.process_time() - t0
    gc.collect()
    built = _status()
    n = len(ds)
    one = np.zeros((1, 1, 3), np.uint8)
    frames_mod.read_rgb = lambda path: one  # type: ignore[assignment]  # decode no image
    ctx = mp.get_context("fork")
    procs, pipes = [], []
    for w in range(workers):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_touch_all, args=(ds, w, 1, child))
        p.start()
        procs.append(p)
        pipes.append(parent)
    reports = [c.recv() for c in pipes]
    for p in procs:
        p.join()
    per_worker = [
        {
            "uss_bytes_per_frame": round(r["after"]["USS"] / n, 1),
            "uss_growth_bytes_per_frame": round((r["after"]["USS"] - r["before"]["USS"]) / n, 1),
            "pss_bytes_per_frame": round(r["after"].get("Pss", 0) / n, 1),
            "cpu_s": round(r["cpu_s"], 2),
        }
        for r in reports
    ]
    return {
        "frames": n,
        "videos": len(index.videos),
        "build_cpu_s": round(build_s, 2),
        "main_rss_growth_bytes_per_frame": round((built["VmRSS"] - base["VmRSS"]) / n, 1),
        "index_rss_bytes_per_frame": round(base["VmRSS"] / n, 1),
        "workers_read_every_sample": per_worker,
    }


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (from /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _loader_cpu(ds: Any, workers: int, batch: int, passes: int) -> tuple[float, int]:
    """(CPU seconds of the main process + its persistent workers, frames) over ``passes``
    passes of a DataLoader, after one warm-up pass (workers started, as in training)."""
    import torch
    from torch.utils.data import DataLoader

    from fairforensics.preprocessing import frames

    if hasattr(frames, "opencv_threads_for_loader"):  # absent before issue 47
        frames.opencv_threads_for_loader(workers)
    loader = DataLoader(
        ds,
        batch_size=batch,
        num_workers=workers,
        collate_fn=frames.collate,
        generator=torch.Generator().manual_seed(0),
        persistent_workers=True,
    )
    for _ in loader:  # warm-up: start the workers
        pass
    pids = [w.pid for w in loader._iterator._workers]  # type: ignore[union-attr]
    cpu0 = time.process_time() + sum(_cpu_of(p) for p in pids)
    n = 0
    for _ in range(passes):
        n += sum(len(b["label"]) for b in loader)
    cpu = time.process_time() + sum(_cpu_of(p) for p in pids) - cpu0
    del loader
    return cpu, n


def bench_loader(
    n_images: int, workers: int, batch: int, rounds: int, passes: int
) -> dict[str, Any]:
    """CPU ms a frame: raw imread, the loader without and with the default augmentation."""
    import cv2

    from fairforensics.preprocessing.frames import FrameDataset
    from fairforensics.preprocessing.index import read_index
    from fairforensics.training.albu_fast import FusedAugment
    from fairforensics.training.augment import build_augment
    from fairforensics.training.config import AugmentConfig

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = _write_faces(root, n_images)
        index = read_index(path)
        files = [str(index.resolve(f)) for v in index.videos for f in v.frames]
        pipeline = build_augment(AugmentConfig(), 256)
        sets = {
            "no_aug": None,
            "default_aug": FusedAugment(pipeline),  # as training runs it
            "albumentations_aug": pipeline,  # the same pipeline through albumentations' calls
        }
        datasets = {
            name: FrameDataset(
                [index], "train", frame_num=8, resolution=256, train=True, augment=augment
            )
            for name, augment in sets.items()
        }
        raw: list[float] = []
        loader: dict[str, list[float]] = {name: [] for name in sets}
        for _ in range(rounds):
            t0 = time.process_time()
            for f in files:
                cv2.imread(f, cv2.IMREAD_COLOR)
            raw.append((time.process_time() - t0) / len(files))
            for name, ds in datasets.items():
                cpu, n = _loader_cpu(ds, workers, batch, passes)
                loader[name].append(cpu / n)
    raw_ms = 1e3 * float(np.median(raw))
    ms = {name: 1e3 * float(np.median(x)) for name, x in loader.items()}
    return {
        "images": len(files),
        "workers": workers,
        "rounds": rounds,
        "timed_passes_per_round": passes,
        "raw_imread_cpu_ms_per_frame": round(raw_ms, 3),
        **{f"loader_{name}_cpu_ms_per_frame": round(v, 3) for name, v in ms.items()},
        **{f"loader_{name}_share_of_raw_rate": round(raw_ms / v, 3) for name, v in ms.items()},
    }


def _write_faces(root: Path, n_images: int) -> Path:
    """An index of ``n_images`` 256x256 PNG face crops (dlib's example faces, 8 per video)."""
    import cv2

    from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index

    faces = sorted((REPO / "tests" / "data" / "faces").rglob("*.jpg"))
    faces += sorted((REPO / "tests" / "data" / "faces").rglob("*.png"))
    if not faces:
        raise SystemExit(f"no face images under {REPO / 'tests' / 'data' / 'faces'}")
    videos = []
    for v in range(0, n_images, 8):
        rel = f"faces/v{v:05d}"
        (root / rel).mkdir(parents=True, exist_ok=True)
        frames = []
        for f in range(v, min(v + 8, n_images)):
            img = cv2.imread(str(faces[f % len(faces)]), cv2.IMREAD_COLOR)
            h, w = img.shape[:2]
            s = min(h, w)
            crop = img[(h - s) // 2 : (h + s) // 2, (w - s) // 2 : (w + s) // 2]
            cv2.imwrite(str(root / rel / f"{f:05d}.png"), cv2.resize(crop, (256, 256)))
            frames.append(f"{rel}/{f:05d}.png")
        label = (v // 8) % 2
        videos.append(
            VideoEntry(
                id=f"v{v:05d}",
                label=label,
                method="real" if label == 0 else "fake",
                split="train",
                frames=frames,
            )
        )
    path = root / "faces.json"
    write_index(DatasetIndex(dataset="faces", task="deepfake", videos=videos, root=root), path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("index", "loader"), help="what to measure")
    ap.add_argument("--frames", type=int, nargs="+", default=[100_000], help="index: sizes")
    ap.add_argument("--workers", type=int, default=2, help="readers / loader workers")
    ap.add_argument("--images", type=int, default=512, help="loader: PNG crops")
    ap.add_argument("--batch-size", type=int, default=32, help="loader: batch size")
    ap.add_argument("--rounds", type=int, default=3, help="loader: medians over rounds")
    ap.add_argument("--passes", type=int, default=2, help="loader: timed passes a round")
    args = ap.parse_args(argv)
    if args.what == "index":
        out: Any = [bench_index(n, args.workers) for n in args.frames]
    else:
        out = bench_loader(args.images, args.workers, args.batch_size, args.rounds, args.passes)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
