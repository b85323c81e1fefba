"""Training-step parity with DeepfakeBench: the stored references (``tests/data/training_step``)
and the maths both sides share.

A reference ``<name>.json`` holds what DeepfakeBench's own code (commit 8a4a7bf) gives for one
training step of detector ``<name>``: every loss term its ``get_losses`` returns and a fingerprint
of every parameter's gradient after ``overall.backward()``, keyed by DeepfakeBench's parameter
names. It also holds everything needed to repeat the step without DeepfakeBench and without
``../shared``: the state-dict key list and the weight rule (:func:`rule_state_dict`), and the recipe
of the batch (:func:`make_batch`). How the references were made is in
``tests/data/training_step/README.md``.

The weight rule ``crc32-normal-v1`` is the forward parity fixtures' (``../shared/parity``); it is
written here again so that the training-step tests need nothing outside the repository.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

FIXTURES = Path(__file__).resolve().parent / "data" / "training_step"
RULE = "crc32-normal-v1"
#: Version of the gradient fingerprint below; stored in every reference.
FINGERPRINT = "grad-l2-sum-proj-v1"
_PROJ_SEED = zlib.crc32(FINGERPRINT.encode("utf-8"))
#: Relative tolerance of loss terms and gradient fingerprints (issue 30).
REL = 1e-4
#: Smallest error budget of a gradient (absolute): float64 rounding of a gradient that is zero in
#: exact arithmetic stays far below it; a real gradient of the batch is many orders above it.
ZERO = 1e-12


def fixture_names() -> list[str]:
    """The DeepfakeBench detector names that have a stored reference (``<name>.json``, or
    ``<name>.json.gz`` for a large one), sorted."""
    return sorted(p.name.split(".")[0] for p in FIXTURES.glob("*.json*"))


def reference_path(name: str) -> Path:
    """Where the reference of ``name`` is (gzipped when it is large)."""
    plain = FIXTURES / f"{name}.json"
    return plain if plain.is_file() else plain.with_suffix(".json.gz")


def load_reference(name: str) -> dict[str, Any]:
    path = reference_path(name)
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return json.loads(data.decode("utf-8"))


# --- weights -------------------------------------------------------------------------------------


def rule_value(key: str, shape: tuple[int, ...], rule: Mapping[str, Any]) -> np.ndarray:
    """The float64 value rule ``crc32-normal-v1`` gives key ``key`` of shape ``shape``.

    Seeded by the key's crc32 (NumPy's legacy ``RandomState``, a frozen stream): running
    variances 0.5 + U(0, 1), running means 0.1 N(0, 1), tensors of 2 or more dimensions
    N(0, s^2) with ``s = gain / sqrt(fan-in)`` (or ``rule["scale"][key]``), 1-d weights
    1 + 0.1 N(0, 1), other 1-d and 0-d tensors 0.05 N(0, 1), batch counters 0.
    """
    rs = np.random.RandomState(zlib.crc32(key.encode("utf-8")))
    leaf = key.rsplit(".", 1)[-1]
    if leaf == "num_batches_tracked":
        return np.zeros(shape)
    if leaf == "running_var":
        return 0.5 + rs.random_sample(shape)
    if leaf == "running_mean":
        return 0.1 * rs.standard_normal(shape)
    if len(shape) >= 2:
        scale = rule.get("scale", {}).get(key)
        if scale is None:
            scale = rule["gain"] / math.sqrt(math.prod(shape[1:]))
        return rs.standard_normal(shape) * scale
    if leaf == "weight":
        return 1.0 + 0.1 * rs.standard_normal(shape)
    return 0.05 * rs.standard_normal(shape)


def rule_state_dict(reference: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """DeepfakeBench-named weights of ``reference`` (its ``state_dict`` key list, its ``rule``),
    without the ``fixed`` keys (constants the model under test supplies itself)."""
    rule = reference["rule"]
    if rule["id"] != RULE:
        raise ValueError(f"unknown weight rule {rule['id']!r}")
    fixed = set(reference.get("fixed", ()))
    out = {}
    for key, shape, dtype in reference["state_dict"]:
        if key not in fixed:
            value = np.asarray(rule_value(key, tuple(shape), rule), dtype=np.float64)
            out[key] = torch.from_numpy(value.reshape(shape)).to(getattr(torch, dtype))
    return out


# --- the batch -----------------------------------------------------------------------------------


def make_images(spec: Mapping[str, Any]) -> torch.Tensor:
    """Normalised float32 images ``[N, C, H, W]`` (or clips ``[N, T, C, H, W]``) of ``spec``.

    ``u = RandomState(seed).random_sample(shape)``; sample i is ``low[i] + (high[i] - low[i]) u``
    in float32, then ``(raw - mean[c]) / std[c]`` over the channel axis (-3): the forward
    fixtures' input recipe.
    """
    shape = tuple(spec["shape"])
    u = np.random.RandomState(spec["seed"]).random_sample(shape)
    per_sample = (-1,) + (1,) * (len(shape) - 1)
    low = np.asarray(spec["low"], dtype=np.float64).reshape(per_sample)
    high = np.asarray(spec["high"], dtype=np.float64).reshape(per_sample)
    raw = torch.from_numpy((low + (high - low) * u).astype(np.float32))
    mean = torch.tensor(spec["mean"], dtype=torch.float32).reshape(-1, 1, 1)
    std = torch.tensor(spec["std"], dtype=torch.float32).reshape(-1, 1, 1)
    return (raw - mean) / std


def make_batch(spec: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The batch of a reference: ``image`` (:func:`make_images`), ``label`` and any listed extra.

    Extras in ``spec["extra"]`` are named tensors: ``{"values": nested list, "dtype": name}``
    stored in full (labels, method labels), or ``{"uniform": {seed, shape, low, high}}`` drawn as
    ``low + (high - low) * RandomState(seed).random_sample(shape)`` in float32 (masks,
    landmarks).
    """
    batch = {
        "image": make_images(spec["image"]),
        "label": torch.tensor(spec["label"], dtype=torch.long),
    }
    for name, extra in spec.get("extra", {}).items():
        if "values" in extra:
            batch[name] = torch.tensor(extra["values"], dtype=getattr(torch, extra["dtype"]))
        else:
            u = extra["uniform"]
            draw = np.random.RandomState(u["seed"]).random_sample(tuple(u["shape"]))
            batch[name] = torch.from_numpy(
                (u["low"] + (u["high"] - u["low"]) * draw).astype(np.float32)
            )
    return batch


def to_dtype(batch: Mapping[str, Any], dtype: torch.dtype) -> dict[str, Any]:
    """``batch`` with its floating-point tensors in ``dtype`` (the reference step's)."""
    return {
        k: v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
        for k, v in batch.items()
    }


# --- gradient fingerprints -----------------------------------------------------------------------


@lru_cache(maxsize=4)
def _projection(n: int) -> torch.Tensor:
    """The first ``n`` draws of one fixed N(0, 1) stream (``RandomState(crc32(FINGERPRINT))``)."""
    return torch.from_numpy(np.random.RandomState(_PROJ_SEED).standard_normal(n))


def grad_fingerprints(grads: Mapping[str, torch.Tensor]) -> dict[str, list[float]]:
    """``{name: [l2, sum, proj]}`` of each gradient in float64; ``proj`` is the dot product of the
    flattened gradient with the first ``n`` draws of one fixed normal stream, over ``sqrt(n)``."""
    flat = {k: g.detach().double().reshape(-1).cpu() for k, g in grads.items()}
    stream = _projection(max((f.numel() for f in flat.values()), default=0))
    return {
        k: [
            float(f.norm()),
            float(f.sum()),
            float(f @ stream[: f.numel()]) / math.sqrt(f.numel()),
        ]
        for k, f in flat.items()
    }


def _gaps(
    ours: Mapping[str, list[float]], reference: Mapping[str, list[float]], sizes: Mapping[str, int]
) -> dict[str, tuple[float, float, float]]:
    """Per parameter, the absolute gap of each statistic (l2, sum, proj) divided by the factor
    it can reach (see :func:`fingerprint_problems`): 1 for l2 and proj, ``sqrt(n)`` for the sum."""
    out = {}
    for name, ref in reference.items():
        if name in ours:
            reach = (1.0, math.sqrt(sizes[name]), 1.0)
            out[name] = tuple(abs(ours[name][i] - ref[i]) / reach[i] for i in range(3))
    return out


def max_relative_gap(
    ours: Mapping[str, list[float]], reference: Mapping[str, list[float]], sizes: Mapping[str, int]
) -> float:
    """The largest gap of :func:`fingerprint_problems`' statistics relative to the gradient's
    l2 norm (floor ``ZERO / REL``; 0 when every fingerprint is bit-identical): a gradient passes
    when this is at most :data:`REL`."""
    gaps = _gaps(ours, reference, sizes)
    return max((max(g) / max(reference[n][0], ZERO / REL) for n, g in gaps.items()), default=0.0)


def fingerprint_problems(
    ours: Mapping[str, list[float]],
    reference: Mapping[str, list[float]],
    sizes: Mapping[str, int],
    rel: float = REL,
) -> list[str]:
    """Every parameter whose fingerprint is off by more than its error budget, as a message.

    A gradient off by a vector ``e`` with ``|e| <= rel |g|`` moves the l2 norm by at most ``|e|``,
    the projection by about ``|e|`` (a unit-variance direction) and the sum by at most
    ``sqrt(n) |e|``. The budget is at least :data:`ZERO`: a gradient that is zero in exact
    arithmetic (a bias that a train-mode BatchNorm cancels) is float64 rounding on both sides.
    """
    problems = [f"{name}: missing" for name in reference if name not in ours]
    for name, gaps in _gaps(ours, reference, sizes).items():
        budget = max(rel * reference[name][0], ZERO)
        for i, stat in enumerate(("l2", "sum", "proj")):
            if gaps[i] > budget:
                problems.append(
                    f"{name} {stat}: {ours[name][i]:.7g} vs {reference[name][i]:.7g} "
                    f"(gap {gaps[i]:.3g} > budget {budget:.3g} = |e| allowed)"
                )
    return problems


def loss_problems(
    ours: Mapping[str, float], reference: Mapping[str, float], rel: float = REL
) -> list[str]:
    """Every loss term off by more than ``rel`` of its value (floor 1e-6), as a message."""
    return [
        f"{name}: {ours[name]:.8g} vs {value:.8g}"
        for name, value in reference.items()
        if abs(ours[name] - value) > max(rel * abs(value), 1e-6)
    ]


def parameter_names_by_identity(
    mapped: Mapping[str, torch.Tensor], source: Mapping[str, torch.Tensor]
) -> dict[str, str]:
    """``{source name: mapped name}`` for tensors a key map passed through unchanged (the same
    tensor object under another name): the names of one parameter on both sides."""
    owner = {id(v): k for k, v in source.items()}
    return {owner[id(v)]: k for k, v in mapped.items() if id(v) in owner}


def sizes_of(reference: Mapping[str, Any], names: Iterable[str]) -> dict[str, int]:
    """Element counts of the parameters ``names`` from the reference's key list."""
    shapes = {key: shape for key, shape, _ in reference["state_dict"]}
    return {n: math.prod(shapes[n]) for n in names}
