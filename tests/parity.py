"""DeepfakeBench parity fixtures (``../shared/parity/deepfakebench``, version 1: the 15 original
detectors; ``../shared/parity/deepfakebench-v2``: the 21 detector files added since, image and video):
manifests, weights, inputs.

Tests that use them skip, naming the folder, in a checkout without ``../shared``.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
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


def assert_fingerprint_close(
    ours: torch.Tensor, expected: dict[str, Any], rel: float = 1e-4
) -> None:
    """Our output agrees with DeepfakeBench's fingerprint within one float32 error budget per sample.

    If ours differs by a vector ``e`` with ``|e| <= rel * |x|`` (floor 1e-4), the l2 norm moves by at
    most ``|e|``, the projection on the fixtures' vector ``v`` by ``|v| |e|`` and the sum by
    ``sqrt(n) |e|`` (``n`` values per sample): each statistic gets the bound it can actually reach.
    Both fixture versions define the fingerprint the same way (``generate.fingerprint``).
    """
    f = ours.detach().double().reshape(ours.shape[0], -1)
    n = f.shape[1]
    v = torch.from_numpy(np.random.RandomState(4321).standard_normal(n) / math.sqrt(n))
    assert list(ours.shape) == expected["shape"]
    got = {"l2": f.norm(dim=1), "sum": f.sum(dim=1), "proj": f @ v}
    reach = {"l2": 1.0, "sum": math.sqrt(n), "proj": float(v.norm())}
    for i, norm in enumerate(expected["l2"]):
        budget = max(rel * norm, 1e-4)
        for key, factor in reach.items():
            gap = abs(float(got[key][i]) - expected[key][i])
            assert gap <= budget * factor, f"{key}[{i}]: off by {gap:.3g} > {budget * factor:.3g}"
