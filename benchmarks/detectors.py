"""Memory and time of one training step of any registered detector, image or video.

Used by ``scripts/bench_detectors.py``. The step is the trainer's own
(:class:`training.step.TrainStep`: normalisation on the device, forward, the detector's loss,
backward, the optimiser of its YAML) on a synthetic uint8 batch that carries every key the
detector ``requires``, at the detector's resolution (and ``clip_size`` for a video detector) and
the batch size of its YAML (DeepfakeBench's) unless given, with random weights. The synthetic
training data is FF++'s: its four manipulation methods (method labels, LSDA's domain groups of a
real face and one fake per method, UCF's and PG-FDD's method heads) and the eight gender x race
groups PG-FDD's fairness losses use. Memory: on CUDA the peak of
``torch.cuda.max_memory_allocated`` during the first step above what was allocated before it;
on the CPU the peak resident set size (``VmHWM``, reset through ``/proc/self/clear_refs``)
during the first step above the resident size before it. The first step includes the
optimiser's state; later steps are timed. Numbers are printed, never asserted in tests.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from fairforensics.detectors import build_detector, get_detector_class
from fairforensics.detectors.registry import detector_family
from fairforensics.preprocessing.device import amp_dtype, to_channels_last
from fairforensics.training.config import load_train_config
from fairforensics.training.host_memory import keep_freed_host_memory
from fairforensics.training.step import TrainStep
from fairforensics.training.trainer import build_optimizer

MB = 1024 * 1024
#: the training methods of the synthetic data: FaceForensics++'s (DeepfakeBench's training set)
FF_METHODS = ("Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures")
GENDERS = ("male", "female")
RACES = ("Asian", "White", "Black", "others")


def _attributes(i: int) -> dict[str, str]:
    """Sample ``i``'s demographic attributes: the 8 gender x race groups in turn."""
    return {"gender": GENDERS[i % 2], "race": RACES[(i // 2) % 4]}


def step_batch(
    detector: Any, batch_size: int, pixel_map_size: int = 14, seed: int = 0
) -> dict[str, Any]:
    """A uint8 batch as the data pipeline gives it for ``batch_size`` dataset items, with every key
    ``detector`` requires: an item is one image, a fake and its real partner (``pairs``), a real
    frame and its blend (``blend:*``) or a real face and one fake of each method
    (``method_groups``)."""
    g = torch.Generator().manual_seed(seed)
    n, size = batch_size, int(detector.cfg.input_size)
    time_axis = (int(detector.cfg.clip_size),) if detector.input_kind == "clip" else ()
    req = detector.requires
    n_methods = len(FF_METHODS)
    # images per dataset item as the pipeline collates them (preprocessing.frames.collate)
    if "method_groups" in req:  # a real face, then one fake of each method
        method_label = torch.arange(n_methods + 1).repeat(n)
    elif "pairs" in req:  # [fakes..., reals...], each with its partner in the other half
        method_label = torch.tensor([i % n_methods + 1 for i in range(n)] + [0] * n)
    else:  # real, fake, real, fake, ...: a frame and its blend, or frames of both classes
        m = 2 * n if any(k.startswith("blend:") for k in req) else n
        method_label = torch.tensor([(i // 2) % n_methods + 1 if i % 2 else 0 for i in range(m)])
    pairs = n if "pairs" in req else 0
    n = len(method_label)
    label = (method_label > 0).long()
    fake = (label == 1).view(-1, *[1] * (len(time_axis) + 3))
    batch: dict[str, Any] = {
        "image": torch.randint(
            0, 256, (n, *time_axis, 3, size, size), dtype=torch.uint8, generator=g
        ),
        "label": label,
        "video_id": [f"v{i}" for i in range(n)],
        "method": [FF_METHODS[m - 1] if m else "real" for m in method_label.tolist()],
        "dataset": ["bench"] * n,
        "frame": torch.zeros(n, dtype=torch.long),
        "attributes": {key: [_attributes(i)[key] for i in range(n)] for key in ("gender", "race")},
    }
    blend = any(k.startswith("blend:") for k in req)
    if "mask" in req or blend:
        mask = (torch.rand(n, *time_axis, 1, size, size, generator=g) > 0.5).float()
        batch["mask"] = mask * fake
        batch["has_mask"] = label == 1
    if "blend:xray" in req:
        batch["xray"] = 4 * batch["mask"] * (1 - batch["mask"])
    if "landmarks" in req:
        batch["landmarks"] = size * (0.2 + 0.6 * torch.rand(n, *time_axis, 68, 2, generator=g))
    if "method_label" in req:
        batch["method_label"] = method_label
    if "views" in req:
        batch["views"] = torch.stack([batch["image"], batch["image"].flip(-1)], dim=1)
    if pairs:
        batch["pair_index"] = (torch.arange(n) + pairs) % n
    if "pixel_map" in req:
        batch["pixel_map"] = (
            label.float().view(-1, 1, 1, 1).expand(n, 1, pixel_map_size, pixel_map_size).clone()
        )
    return batch


def _rss_mb() -> tuple[float, float]:
    """(resident, peak resident) MB of this process, from /proc/self/status."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux >= 4.0)


def bench_detector(
    name: str,
    *,
    batch_size: int | None = None,
    clip_size: int | None = None,
    resolution: int | None = None,
    device: str = "cpu",
    precision: str = "fp32",
    steps: int = 3,
    channels_last: bool = True,
    variant: str | None = None,
) -> dict[str, Any]:
    """Memory of one training step and the median time of ``steps`` more (dict, JSON-able)."""
    cls = get_detector_class(name)
    cfg = load_train_config(name, variant=variant)
    model_cfg = {**cfg.model, "pretrained": False}  # memory and time do not depend on weights
    if resolution is not None:
        model_cfg["input_size"] = resolution
    if clip_size is not None:
        if cls.input_kind != "clip":
            raise ValueError(f"{name} is an image detector; --clip-size is for video detectors")
        model_cfg["clip_size"] = clip_size
    model_cfg = cls.configure_from_data(model_cfg, list(FF_METHODS))
    videos = [(f"v{i}", _attributes(i), 32) for i in range(2 * len(GENDERS) * len(RACES))]
    model_cfg = cls.configure_from_attributes(model_cfg, videos)
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    if not cuda and not Path("/proc/self/clear_refs").exists():
        raise RuntimeError("CPU memory is measured through /proc (Linux); run on Linux or CUDA")
    keep_freed_host_memory()
    torch.manual_seed(0)
    detector = build_detector(name, model_cfg).to(dev)
    if channels_last:
        detector = to_channels_last(detector)
    n = batch_size or cfg.train.batch_size
    optimizer = build_optimizer(
        [p for p in detector.parameters() if p.requires_grad], cfg.train.optimizer
    )
    dtype = amp_dtype(precision, dev)
    step = TrainStep(detector, optimizer, device=dev, amp_dtype=dtype, channels_last=channels_last)
    batch = step_batch(detector, n, cfg.train.pixel_map_size)
    images = len(batch["label"])  # n, 2n (pairs, a frame and its blend) or 5n (LSDA's groups)
    detector.train()
    if cuda:
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        before = torch.cuda.memory_allocated(dev) / MB
    else:
        _reset_peak()
        before = _rss_mb()[0]
    t0 = time.perf_counter()
    step(batch)
    if cuda:
        torch.cuda.synchronize(dev)
        peak = torch.cuda.max_memory_allocated(dev) / MB
    else:
        peak = _rss_mb()[1]
    first = time.perf_counter() - t0
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step(batch)
        if cuda:
            torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
    params = sum(p.numel() for p in detector.parameters())
    median = statistics.median(times) if times else first
    return {
        "detector": name,
        "family": detector_family(name),
        "input_kind": cls.input_kind,
        "batch_size": n,
        "images_per_step": images,
        "clip_size": int(detector.cfg.clip_size) if cls.input_kind == "clip" else None,
        "resolution": int(detector.cfg.input_size),
        "device": str(dev),
        "precision": precision if dtype is not None else "fp32",
        "params_m": round(params / 1e6, 3),
        "step_memory_mb": round(peak - before, 1),  # the first step above what was there
        "peak_memory_mb": round(peak, 1),
        "memory_kind": "cuda max_memory_allocated" if cuda else "process peak RSS",
        "first_step_s": round(first, 3),
        "step_s": round(median, 4),
        "step_s_all": [round(t, 4) for t in times],
        "samples_per_s": round(images / median, 2),
        "threads": torch.get_num_threads(),
        "load_average_1min": os.getloadavg()[0],
    }
