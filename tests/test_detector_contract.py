"""The detector contract (detectors/base.py), checked for every registered detector."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from fairforensics.detectors import (
    build_detector,
    get_detector_class,
    list_detectors,
    load_detector_yaml,
)
from tests.detector_batches import make_batch, spread_batch_norm_statistics

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
        random.seed(1)  # detectors that draw with Python's random (ucf's shuffles): a fixed batch
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


@dataclass
class Evaluated:
    """A detector built once for the eval-mode contract tests, with its batch of 3."""

    model: torch.nn.Module
    batch: dict[str, Any]
    state_before: tuple[int, torch.dtype, bool]
    state_built: tuple[int, torch.dtype, bool]


@pytest.fixture(scope="module", params=DETECTORS)
def evaluated(request: pytest.FixtureRequest) -> Evaluated:
    """The detector in eval mode, built from the default config (the contract's small input and
    widths, which keep the code path that could couple samples), with a batch of 3 and batch-norm
    statistics spread from that batch (:func:`spread_batch_norm_statistics`), so that the samples'
    scores differ by far more than float rounding."""
    state = _torch_state()
    model, size = _small(request.param)
    built = _torch_state()
    model.eval()
    batch = make_batch(model, size, batch_size=3, seed=3)
    with torch.no_grad():
        spread_batch_norm_statistics(model, batch)
    return Evaluated(model, batch, state, built)


def _log_odds(out: dict[str, torch.Tensor]) -> torch.Tensor:
    """``logits[:, 1] - logits[:, 0]`` [B], in float64: what ``prob`` is the sigmoid of."""
    logits = out["logits"].detach().double()
    return logits[:, 1] - logits[:, 0]


def _assert_scores_do_not_depend_on_the_batch(
    model: torch.nn.Module, batch: dict[str, Any]
) -> None:
    """Scoring the batch equals scoring its samples one by one, and scoring it twice is identical.

    Compared on the log-odds (no saturation), with a tolerance relative to the spread of the
    batch's scores: each batch score must be within 1e-3 of that spread of its one-by-one score,
    and the spread must be at least 1e-3 of the logits' size (else a coupling could hide in float
    rounding). Moving every score 1% of the way to the batch's mean fails this
    (``test_the_batch_check_sees_a_batch_mean_coupling``). The batch is scored under ``no_grad``
    as the evaluation does, the samples with autograd on, as training does."""
    n = len(batch["label"])
    with torch.no_grad():
        whole = model(batch)
        assert not torch.is_grad_enabled(), "the forward pass turned autograd on"
    log_odds = _log_odds(whole)
    spread = (log_odds.max() - log_odds.min()).item()
    size = whole["logits"].abs().max().item()
    assert spread >= 1e-3 * size, (
        f"the samples' log-odds {log_odds.tolist()} are too close to each other (logits up to "
        f"{size:.3g}) for the check to see a coupling between them"
    )
    # the sample farthest from the batch's mean first: the one a coupling moves most
    for i in (log_odds - log_odds.mean()).abs().argsort(descending=True).tolist():
        one = model(_item(batch, i, n))
        torch.testing.assert_close(
            _log_odds(one),
            log_odds[i : i + 1],
            rtol=0,
            atol=1e-3 * spread,
            msg=lambda m, i=i: (
                f"sample {i}: batch log-odds differ from one-by-one "
                f"log-odds (spread {spread:.3g}): {m}"
            ),
        )
        # prob = sigmoid(log-odds), whose slope is at most 1/4
        torch.testing.assert_close(
            one["prob"].detach(), whole["prob"][i : i + 1], rtol=0, atol=0.25e-3 * spread
        )
    with torch.no_grad():
        again = model(batch)
    torch.testing.assert_close(again["logits"], whole["logits"], rtol=0, atol=0)
    torch.testing.assert_close(again["prob"], whole["prob"], rtol=0, atol=0)


def test_eval_scores_do_not_depend_on_the_batch(evaluated: Evaluated) -> None:
    """In eval mode a batch's scores are its samples' scores one by one (so a test set's metrics
    do not change with ``batch_size`` or order), scoring the same batch twice gives the same
    scores, and building and running the detector leave torch's thread count, default dtype and
    grad mode as they were."""
    assert evaluated.state_built == evaluated.state_before, (
        "building the detector changed torch's global settings"
    )
    state = _torch_state()
    _assert_scores_do_not_depend_on_the_batch(evaluated.model, evaluated.batch)
    assert _torch_state() == state, "the forward pass changed torch's global settings"


class _BatchMeanCoupled(torch.nn.Module):
    """A detector whose eval scores depend on the batch: each sample's logits are moved
    ``weight`` of the way to the batch's mean logits (``weight`` 1: every score is the mean)."""

    def __init__(self, detector: torch.nn.Module, weight: float) -> None:
        super().__init__()
        self.detector, self.weight = detector, weight

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        out = dict(self.detector(batch))
        logits = out["logits"]
        out["logits"] = logits + self.weight * (logits.mean(dim=0, keepdim=True) - logits)
        out["prob"] = torch.softmax(out["logits"].float(), dim=1)[:, 1]
        return out


def test_the_batch_check_sees_a_batch_mean_coupling(evaluated: Evaluated) -> None:
    """The check above fails for every detector once its scores are coupled through the batch,
    even when each score moves only 1% of the way to the batch's mean (a larger move changes the
    batch scores more, so it fails too)."""
    coupled = _BatchMeanCoupled(evaluated.model, weight=0.01)
    with pytest.raises(AssertionError, match="batch log-odds differ from one-by-one"):
        _assert_scores_do_not_depend_on_the_batch(coupled, evaluated.batch)


def test_channels_last_gives_the_same_outputs(evaluated: Evaluated) -> None:
    """The trainer's channels_last memory format (on by default) must not change results.
    (The shared model is left in that format: it changes no result, which is what this checks.)"""
    model, batch = evaluated.model, evaluated.batch
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
