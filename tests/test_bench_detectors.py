"""scripts/bench_detectors.py: memory and time of one training step, image and video detectors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

import tests.clip_detectors  # noqa: F401  (registers _tiny_clip)
from fairforensics.benchmarks.detectors import FF_METHODS, bench_detector, step_batch
from fairforensics.detectors import build_detector

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_detectors.py"


def test_step_memory_and_time_of_a_video_and_an_image_detector() -> None:
    clip = bench_detector("_tiny_clip", batch_size=2, clip_size=4, steps=1)
    assert (clip["input_kind"], clip["clip_size"], clip["batch_size"]) == ("clip", 4, 2)
    assert clip["family"] == "Video" and clip["precision"] == "fp32"
    assert clip["step_memory_mb"] >= 0 and clip["peak_memory_mb"] > 0 and clip["step_s"] > 0
    image = bench_detector("meso4", batch_size=2, resolution=64, steps=1)
    assert image["clip_size"] is None and image["resolution"] == 64
    with pytest.raises(ValueError, match="image detector"):
        bench_detector("meso4", clip_size=4)


def test_step_batch_has_what_the_detector_requires() -> None:
    det = build_detector("_tiny_clip", {"input_size": 16, "clip_size": 5})
    batch = step_batch(det, 3)
    assert batch["image"].shape == (3, 5, 3, 16, 16) and batch["label"].tolist() == [0, 1, 0]
    ucf = build_detector("ucf", {"input_size": 32})  # pairs, masks, method labels
    batch = step_batch(ucf, 2)  # two pairs: [fakes..., reals...], as the pipeline collates them
    assert batch["label"].tolist() == [1, 1, 0, 0] and batch["pair_index"].tolist() == [2, 3, 0, 1]
    assert set(ucf.requires) - {"pairs"} <= set(batch)
    assert batch["method_label"].tolist() == [1, 2, 0, 0]  # FF++'s methods, as ucf is configured
    sbi = build_detector("sbi", {"input_size": 32})  # each item: a real frame and its blend
    assert step_batch(sbi, 3)["label"].tolist() == [0, 1] * 3
    with torch.device("meta"):  # LSDA: groups of a real face and one fake of each FF++ method
        lsda = build_detector("lsda", {"input_size": 32, "methods": list(FF_METHODS)})
    batch = step_batch(lsda, 2)
    assert batch["method_label"].tolist() == [0, 1, 2, 3, 4] * 2
    assert batch["method"][:5] == ["real", *FF_METHODS] and batch["label"].sum() == 8


def test_pg_fdd_steps_on_its_eight_demographic_groups() -> None:
    """PG-FDD's losses need gender x race on every sample and its groups from the training data."""
    out = bench_detector("pg_fdd", batch_size=2, resolution=64, steps=1)
    assert out["images_per_step"] == 4 and out["step_s"] > 0


def test_script_selects_by_kind_and_reports_errors(capsys) -> None:
    spec = importlib.util.spec_from_file_location("bench_detectors", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert "_tiny_clip" in script.detector_names(["video"])
    assert "meso4" in script.detector_names(["image"]) and "meso4" not in script.detector_names(
        ["video"]
    )
    with pytest.raises(SystemExit, match="unknown detectors \\['nope'\\]"):
        script.detector_names(["nope"])
    assert script._one([], "meso4", {"batch_size": 1, "clip_size": 3}) == {
        "detector": "meso4",
        "error": "ValueError: meso4 is an image detector; --clip-size is for video detectors",
    }
    json.dumps(script._one([], "_tiny_clip", {"batch_size": 1, "steps": 1}))
