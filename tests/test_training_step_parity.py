"""Training-step parity with DeepfakeBench (issue 30): our detector, given DeepfakeBench's weights
through the checkpoint import and the same batch, returns DeepfakeBench's loss terms and the same
gradient for every parameter, and leaves the same BatchNorm running statistics.

The references (``tests/data/training_step/<name>.json``) were made by running DeepfakeBench's own
code (``tests/data/training_step/README.md``); these tests need neither it nor ``../shared``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.deepfakebench import load_deepfakebench_state_dict
from tests import training_parity as tp


@dataclass(frozen=True)
class OurSide:
    """How our detector takes a reference's step: registry ``name``, model ``config``, the map of
    DeepfakeBench's loss names onto ours, and our batch made from the reference's batch."""

    name: str
    losses: dict[str, str]
    config: dict[str, Any] = field(default_factory=dict)
    batch: Callable[[dict[str, torch.Tensor]], dict[str, Any]] = dict


CASES: dict[str, OurSide] = {
    "xception": OurSide("xception", {"overall": "total", "cls": "ce"}),
    "efficientnetb4": OurSide("efficientnet_b4", {"overall": "total"}),
    "clip": OurSide("clip", {"overall": "total"}, {"layers": 2}),
    "sbi": OurSide("sbi", {"overall": "total"}),
    "rfm": OurSide("rfm", {"overall": "total"}),
    "lsda": OurSide(
        "lsda",
        {
            "overall": "total",
            "domain": "domain",
            "deepfake": "deepfake",
            "distillation": "distillation",
            "real_loss": "real",
        },
        {"real_encoder_depth": 18},
    ),
}


@dataclass
class StepResult:
    losses: dict[str, float]
    grads: dict[str, list[float]]
    buffers: dict[str, list[float]]
    trained: set[str]  # DeepfakeBench names of our parameters that got a gradient
    frozen: set[str]


def our_step(reference: dict[str, Any], side: OurSide) -> StepResult:
    """One training step of our detector on the reference's weights and batch, fingerprinted
    under DeepfakeBench's names."""
    state = tp.rule_state_dict(reference)
    model = build_detector(side.name, {"pretrained": False, **side.config})
    load_deepfakebench_state_dict(model, state, source=reference["detector"])
    names = tp.parameter_names_by_identity(model.map_deepfakebench_state_dict(state), state)
    dtype = getattr(torch, reference["dtype"])
    model.to(dtype).train()
    batch = tp.to_dtype(side.batch(tp.make_batch(reference["batch"])), dtype)
    torch.manual_seed(reference["seed"])
    np.random.seed(reference["seed"])
    random.seed(reference["seed"])
    out = model(batch)
    losses = model.loss(batch, out)
    model.zero_grad(set_to_none=True)  # as training.step.TrainStep: after the forward pass
    losses["total"].backward()
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    grads = {
        k: params[o].grad for k, o in names.items() if o in params and params[o].grad is not None
    }
    return StepResult(
        losses={k: float(losses[o].detach().double()) for k, o in side.losses.items()},
        grads=tp.grad_fingerprints(grads),
        buffers=tp.grad_fingerprints({k: buffers[o] for k, o in names.items() if o in buffers}),
        trained=set(grads),
        frozen={k for k, o in names.items() if o in params and not params[o].requires_grad},
    )


@pytest.fixture(scope="module", params=[n for n in tp.fixture_names() if n in CASES])
def step(request) -> tuple[dict[str, Any], StepResult]:
    reference = tp.load_reference(request.param)
    return reference, our_step(reference, CASES[request.param])


def test_every_reference_has_a_case() -> None:
    assert sorted(set(tp.fixture_names()) - set(CASES)) == []


def test_loss_terms_match(step) -> None:
    reference, ours = step
    assert tp.loss_problems(ours.losses, reference["losses"]) == []


def test_same_parameters_train(step) -> None:
    reference, ours = step
    assert ours.trained == set(reference["grads"])
    assert ours.frozen == set(reference["frozen"])


def test_gradients_match(step) -> None:
    reference, ours = step
    sizes = tp.sizes_of(reference, reference["grads"])
    assert tp.fingerprint_problems(ours.grads, reference["grads"], sizes) == []


def test_running_statistics_match(step) -> None:
    reference, ours = step
    sizes = tp.sizes_of(reference, reference["buffers"])
    assert tp.fingerprint_problems(ours.buffers, reference["buffers"], sizes) == []
