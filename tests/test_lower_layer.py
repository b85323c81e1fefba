"""The shared lower layer: the JSON writer, the run-directory layout, device and precision."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from fairforensics.configs import ConfigError
from fairforensics.preprocessing.device import amp_dtype, resolve_device
from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.rundir import RunDir, new_run_dir


def test_write_json_is_standard_json(tmp_path: Path) -> None:
    path = tmp_path / "a" / "m.json"
    write_json(path, {"auc": math.nan, "x": np.float32(0.5), "v": np.arange(2), "p": Path("q")})
    text = path.read_text()
    assert "NaN" not in text
    assert json.loads(text) == {"auc": None, "x": 0.5, "v": [0, 1], "p": "q"}
    assert not list(path.parent.glob(".*.tmp"))


def test_run_dir_layout_and_config(tmp_path: Path) -> None:
    path = new_run_dir(tmp_path, "r", "meso4")
    run = RunDir(path)
    assert all(p.is_dir() for p in (run.checkpoints, run.metrics, run.predictions, run.tensorboard))
    assert run.checkpoint("best") == path / "checkpoints" / "best.pt"
    assert run.checkpoint(tmp_path / "w.pt") == tmp_path / "w.pt"
    with pytest.raises(ConfigError, match="not a run directory"):
        run.read_config()
    run.config.write_text("model: {}\n")
    with pytest.raises(ConfigError, match="'detector' is required"):
        run.read_config()
    run.config.write_text("detector: meso4\n")
    assert run.read_config() == {"detector": "meso4"}


def test_device_and_precision_policy() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == torch.device(expected)
    assert amp_dtype("auto", "cpu") is None
    assert amp_dtype("fp32", "cpu") is None
    assert amp_dtype("bf16", "cpu") is torch.bfloat16
    assert amp_dtype("fp16", "cuda") is torch.float16
    with pytest.raises(ValueError, match="precision must be one of"):
        amp_dtype("int8", "cpu")


def test_unusable_device_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(ConfigError, match=r"device cuda: torch .* sees no CUDA device"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match="not a device name; use auto, cpu, cuda"):
        resolve_device("gpu")
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ConfigError, match="has 2 CUDA device"):
        resolve_device("cuda:2")


def test_json_files_are_written_by_the_one_writer() -> None:
    """No package writes ``json.dumps(...)`` text itself: JSON files go through ``write_json``."""
    import ast

    repo = Path(__file__).resolve().parents[1]
    packages = ("configs", "preprocessing", "detectors", "evaluation", "training", "fairness")
    offenders = []
    for path in sorted(p for pkg in (*packages, "benchmarks") for p in (repo / pkg).rglob("*.py")):
        if path == repo / "preprocessing" / "files.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in ("atomic_write_text", "write_text", "dump"):
                continue
            dumps = [
                n
                for arg in node.args
                for n in ast.walk(arg)
                if isinstance(n, ast.Attribute) and n.attr in ("dumps", "dump")
            ]
            if dumps or (name == "dump" and getattr(func.value, "id", "") == "json"):
                offenders.append(f"{path.relative_to(repo)}:{node.lineno}")
    assert not offenders, f"JSON written around write_json: {offenders}"
