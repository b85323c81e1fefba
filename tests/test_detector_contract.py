"""The detector contract (detectors/base.py), checked for every registered detector."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from fairforensics.detectors import (
    build_detector,
    get_detector_class,
    list_detectors,
    load_detector_yaml,
)
from tests.detector_batches import make_batch

# The package's own detectors (other test modules register tiny ones of their own).
DETECTORS = [
    n
    for n in list_detectors()
    if get_detector_class(n).__module__.startswith("fairforensics.detectors.")
]


def _small(name: str):
    cls = get_detector_class(name)
    size = cls.test_input_size
    torch.manual_seed(0)
    return build_detector(name, pretrained=False, input_size=size, **cls.test_config), size


@pytest.mark.parametrize("name", DETECTORS)
def test_config_file_builds(name: str) -> None:
    data = load_detector_yaml(name)
    assert data, f"configs/detectors/{name}.yaml is missing or empty"
    assert data.get("detector") == name
    assert "train" in data, "the detector YAML must carry its training settings"


@pytest.mark.slow
@pytest.mark.parametrize("name", DETECTORS)
def test_forward_loss_backward_and_learning(name: str) -> None:
    model, size = _small(name)
    batch = make_batch(model, size)
    n = len(batch["label"])
    model.train()

    def step_loss() -> torch.Tensor:
        torch.manual_seed(1)
        out = model(batch)
        return out, model.loss(batch, out)

    out, losses = step_loss()
    assert out["logits"].shape == (n, 2)
    assert out["prob"].shape == (n,)
    assert out["feat"].ndim == 2 and out["feat"].shape[0] == n
    assert torch.all((out["prob"] >= 0) & (out["prob"] <= 1))
    total = losses["total"]
    assert total.ndim == 0 and math.isfinite(total.item())
    total.backward()
    unreached = [
        k
        for k, p in model.named_parameters()
        if p.requires_grad and p.grad is None and k not in model.late_params
    ]
    assert not unreached, f"no gradient reaches {unreached[:5]}"

    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    first = total.item()
    for _ in range(6):
        optimiser.zero_grad()
        _, losses = step_loss()
        losses["total"].backward()
        optimiser.step()
    with torch.no_grad():
        _, losses = step_loss()
    assert losses["total"].item() < first, "six Adam steps on a fixed batch did not lower the loss"


def _torch_state() -> tuple[int, torch.dtype, bool]:
    """The process-wide torch settings a detector must leave alone."""
    return torch.get_num_threads(), torch.get_default_dtype(), torch.is_grad_enabled()


def _item(batch: dict[str, Any], i: int, n: int) -> dict[str, Any]:
    """Sample ``i`` of a batch of ``n`` as a batch of one (every per-sample tensor and list)."""

    def take(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: take(v) for k, v in value.items()}
        if isinstance(value, (torch.Tensor, list)) and len(value) == n:
            return value[i : i + 1]
        return value

    return take(batch)


@pytest.mark.parametrize("name", DETECTORS)
def test_eval_scores_do_not_depend_on_the_batch(name: str) -> None:
    """In eval mode a batch's scores are its samples' scores one by one (so a test set's metrics
    do not change with ``batch_size`` or order), scoring the same batch twice gives the same
    scores, and building and running the detector leave torch's thread count, default dtype and
    grad mode as they were. Built from the default config (the contract's small input and widths,
    which keep the code path that could couple samples), on a batch of 3; the batch is scored
    under ``no_grad`` as the evaluation does, the samples with autograd on."""
    state = _torch_state()
    model, size = _small(name)
    assert _torch_state() == state, "building the detector changed torch's global settings"
    model.eval()
    batch = make_batch(model, size, batch_size=3, seed=3)
    n = len(batch["label"])
    with torch.no_grad():
        whole, again = model(batch)["prob"], model(batch)["prob"]
        assert not torch.is_grad_enabled(), "the forward pass turned autograd on"
    one_by_one = torch.cat([model(_item(batch, i, n))["prob"].detach() for i in range(n)])
    assert _torch_state() == state, "the forward pass changed torch's global settings"
    torch.testing.assert_close(again, whole, rtol=0, atol=0)
    torch.testing.assert_close(one_by_one, whole, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", DETECTORS)
def test_channels_last_gives_the_same_outputs(name: str) -> None:
    """The trainer's channels_last memory format (on by default) must not change results."""
    model, size = _small(name)
    model.eval()
    batch = make_batch(model, size, batch_size=2, seed=3)
    with torch.no_grad():
        expected = model(batch)["prob"]
        # as the trainer does: 4-D weights only (3-D convolutions keep their 5-D layout)
        model = model._apply(
            lambda t: t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t
        )
        batch = {
            k: v.contiguous(memory_format=torch.channels_last)
            if isinstance(v, torch.Tensor) and v.dim() == 4 and k in ("image", "views")
            else v
            for k, v in batch.items()
        }
        got = model(batch)["prob"]
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
