"""DeepfakeBench parity fixtures (``../shared/parity/deepfakebench``, version 1: the 15 original
detectors; ``../shared/parity/deepfakebench-v2``: the 21 detector files added since, image and video):
manifests, weights, inputs.

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
PARITY_V2_DIR = PARITY_DIR.with_name("deepfakebench-v2")


def _generate_module(folder: Path = PARITY_DIR) -> ModuleType:
    path = folder / "generate.py"
    if not path.is_file():
        pytest.skip(f"needs the DeepfakeBench parity fixtures in {folder} (../shared)")
    spec = importlib.util.spec_from_file_location(f"dfb_parity_generate_{folder.name}", path)
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


def load_fixture_v2(
    name: str,
) -> tuple[dict[str, Any], dict[str, torch.Tensor], torch.Tensor, dict[str, torch.Tensor]]:
    """(manifest, DeepfakeBench-named state dict, normalised inputs, named extra inputs) of the
    version-2 fixture ``name``; inputs are ``[4, 3, H, W]`` for images, ``[4, T, 3, H, W]`` for video
    detectors, and the extra inputs (only LRL's ``idct``) are normalised the same way."""
    gen = _generate_module(PARITY_V2_DIR)
    manifest = json.loads((PARITY_V2_DIR / f"{name}.json").read_text())
    state = gen.generate_state_dict(manifest)
    return manifest, state, gen.make_inputs(manifest)[1], gen.make_extra_inputs(manifest)


def fingerprint_v2(t: torch.Tensor) -> dict[str, Any]:
    """The version-2 fixtures' per-sample fingerprint of an output tensor."""
    return _generate_module(PARITY_V2_DIR).fingerprint(t)
