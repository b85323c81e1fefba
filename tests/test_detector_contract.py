"""The detector contract (detectors/base.py), checked for every registered detector."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize("name", DETECTORS)
def test_eval_forward_is_deterministic(name: str) -> None:
    model, size = _small(name)
    model.eval()
    batch = make_batch(model, size, batch_size=2, seed=3)
    with torch.no_grad():
        a = model(batch)["prob"]
        b = model(batch)["prob"]
    torch.testing.assert_close(a, b)


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
