"""Speed of the preprocessing pipeline on real videos, and of a DeepfakeBench-style baseline.

The baseline re-creates, with the same dlib models, what DeepfakeBench's
``preprocessing/preprocess.py`` does per video: load the models, decode every frame with
colour conversion, detect on the full-size frame with upsample 1, 68 landmarks, align, and
detect again on the aligned crop. It is an emulation for a same-machine comparison, not their code.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import cv2

from fairforensics.configs.loader import config_to_dict
from fairforensics.preprocessing.align import align_face
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.preprocessing.faces import FaceAnalyzer, _load
from fairforensics.preprocessing.pipeline import run_preprocess
from fairforensics.preprocessing.video import count_frames, sample_indices

logger = logging.getLogger(__name__)


class TreeCPU:
    """User+sys CPU seconds of this process and all its descendants while the block runs.

    Linux: the descendants' times are polled from ``/proc`` every ``interval`` seconds (a pool
    worker's CPU after the last poll, at most ``interval`` s each, is missed), minus what the
    ones alive at the start (a forkserver) had used before; a child that started before the
    block and is waited for inside it counts whole. The polling thread's own CPU is not
    counted. Elsewhere only this process and the children it waited for are counted.
    """

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.seconds = 0.0
        self._seen: dict[int, float] = {}
        self._before: dict[int, float] = {}
        self._stop = threading.Event()
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def _descendants(self) -> dict[int, float]:
        """CPU seconds so far of every live descendant process."""
        procs: dict[int, tuple[int, int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # fields[1] = ppid, fields[11:13] = utime, stime (clock ticks)
            procs[int(stat.parent.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
        me, out = os.getpid(), {}
        for pid, (_, ticks) in procs.items():
            parent, hops = pid, 0
            while parent in procs and parent != me and hops < 16:
                parent, hops = procs[parent][0], hops + 1
            if parent == me and pid != me:
                out[pid] = ticks / self._tick
        return out

    def _poll(self) -> None:
        for pid, sec in self._descendants().items():
            self._seen[pid] = max(self._seen.get(pid, 0.0), sec - self._before.get(pid, 0.0))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()
        self._poll_cpu = time.thread_time()  # what measuring cost, not the work measured

    def __enter__(self) -> TreeCPU:
        self._self0 = resource.getrusage(resource.RUSAGE_SELF)
        self._kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._thread = None
        self._poll_cpu = 0.0
        if Path("/proc/self/stat").is_file():
            self._before = self._descendants()  # e.g. a forkserver started by an earlier run
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()

        def cpu(a: resource.struct_rusage, b: resource.struct_rusage) -> float:
            return b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime

        own = cpu(self._self0, resource.getrusage(resource.RUSAGE_SELF))
        waited = cpu(self._kids0, resource.getrusage(resource.RUSAGE_CHILDREN))
        self.seconds = own - self._poll_cpu + max(waited, sum(self._seen.values()))


def bench_pipeline(
    videos: list[Path],
    num_frames: int = 32,
    workers: int | None = None,
    size: int = 256,
    repeat: int = 1,
    overrides: list[str] | None = None,
) -> dict[str, Any]:
    """Run the real pipeline (generic layout in a temporary folder) and report its speed.

    ``repeat`` lists every video that many times (under other names), so that the one-off
    start of the worker processes weighs as little as on a real dataset. ``overrides`` are
    extra config settings (``decode.threads=2``...).
    """
    workers = workers or os.cpu_count() or 1
    tmp = Path(tempfile.mkdtemp(prefix="bench_preprocess_"))
    try:
        real = tmp / "raw" / "real"
        real.mkdir(parents=True)
        for r in range(repeat):
            for i, video in enumerate(videos):
                os.symlink(video.resolve(), real / f"{r:02d}_{i:03d}_{video.name}")
        cfg = load_preprocess_config(
            overrides=[
                "dataset.name=bench",
                "dataset.type=generic",
                f"dataset.root={tmp / 'raw'}",
                f"output.root={tmp / 'out'}",
                f"sampling.num_frames={num_frames}",
                f"align.size={size}",
                *(overrides or []),
            ]  # fmt: skip
        )
        start = time.perf_counter()
        with TreeCPU() as tree:
            s = run_preprocess(cfg, workers=workers, progress=False)
        wall = time.perf_counter() - start
        manifest = json.loads(s.manifest_path.read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    frames = max(s.frames_sampled, 1)
    return {
        "videos": s.videos_total,
        "frames": s.frames_sampled,
        "faces_found": s.faces,
        "wall_s": round(wall, 2),
        "frames_per_s": round(s.frames_sampled / wall, 2),
        "cpu_s_per_frame": round(tree.seconds / frames, 4),  # the whole process tree
        "cpu_s_per_frame_in_items": round(s.cpu_s / frames, 4),  # workers on their videos
        "stage_cpu_s_per_frame": {k: round(v / frames, 4) for k, v in s.timing.items()},
        "workers": workers,
        "decode": config_to_dict(cfg.decode),
        # videos the configured decoder failed on (read by OpenCV instead): should be 0
        "decode_fallbacks": sum("could not decode" in n["note"] for n in manifest["notes"]),
    }


def bench_deepfakebench_style(videos: list[Path], num_frames: int = 32) -> dict[str, Any]:
    """The emulated DeepfakeBench per-video procedure, one process, same frames."""
    stages = dict.fromkeys(
        ("load_models", "decode", "detect", "landmarks", "align", "redetect"), 0.0
    )
    frames_done = faces = 0
    start, cpu0 = time.perf_counter(), time.process_time()
    for video in videos:
        t0 = time.process_time()
        _load.cache_clear()  # DeepfakeBench loads the models again for every video
        analyzer = FaceAnalyzer("hog", upsample=1, detect_max_side=None, detect_on="rgb")
        _load("hog"), _load("shape68")
        stages["load_models"] += time.process_time() - t0
        keep = set(sample_indices(count_frames(video), "fixed_num_frames", num_frames))
        cap = cv2.VideoCapture(str(video))
        i = 0
        while True:
            t0 = time.process_time()
            ok, bgr = cap.read()
            if not ok:
                break
            rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            stages["decode"] += time.process_time() - t0
            if i in keep:
                frames_done += 1
                t0 = time.process_time()
                boxes = analyzer.detect(rgb)
                stages["detect"] += time.process_time() - t0
                if boxes:
                    faces += 1
                    t0 = time.process_time()
                    lm = analyzer.landmarks(rgb, boxes[0])
                    stages["landmarks"] += time.process_time() - t0
                    t0 = time.process_time()
                    crop, _, _ = align_face(rgb, lm)
                    stages["align"] += time.process_time() - t0
                    t0 = time.process_time()
                    analyzer.analyze(crop)
                    stages["redetect"] += time.process_time() - t0
            i += 1
        cap.release()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    return {
        "videos": len(videos),
        "frames": frames_done,
        "faces_found": faces,
        "wall_s": round(wall, 2),
        "frames_per_s": round(frames_done / wall, 2),
        "stage_cpu_s_per_frame": {k: round(v / max(frames_done, 1), 4) for k, v in stages.items()},
        "cpu_s_per_frame": round(cpu / max(frames_done, 1), 4),
        "workers": 1,
    }
