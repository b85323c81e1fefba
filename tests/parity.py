"""DeepfakeBench parity fixtures (``../shared/parity/deepfakebench``): manifests, weights, inputs.

Tests that use them skip, naming the folder, in a checkout without ``../shared``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

PARITY_DIR = Path(__file__).resolve().parents[2] / "shared" / "parity" / "deepfakebench"


def _generate_module() -> ModuleType:
    path = PARITY_DIR / "generate.py"
    if not path.is_file():
        pytest.skip(f"needs the DeepfakeBench parity fixtures in {PARITY_DIR} (../shared)")
    spec = importlib.util.spec_from_file_location("dfb_parity_generate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_fixture(name: str) -> tuple[dict[str, Any], dict[str, torch.Tensor], torch.Tensor]:
    """(manifest, DeepfakeBench-named state dict, normalised inputs [4, 3, 256, 256]) of ``name``."""
    gen = _generate_module()
    manifest = json.loads((PARITY_DIR / f"{name}.json").read_text())
    return manifest, gen.generate_state_dict(manifest), gen.make_inputs(manifest)[1]


def fingerprint(t: torch.Tensor) -> dict[str, Any]:
    """The fixtures' per-sample fingerprint of an output tensor."""
    return _generate_module().fingerprint(t)
