"""DAG-FDD and DAW-FDD (Ju et al., WACV 2024): CVaR values by hand, gradients, the loss wrapper
on a detector, config errors, and a tiny training run with the option on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import optimize
from torch.nn import functional as F

from fairforensics.configs import ConfigError
from fairforensics.detectors import build_detector
from fairforensics.training.config import load_train_config
from fairforensics.training.fair_losses import FairLoss, FairLossConfig, cvar, dag_fdd, daw_fdd
from fairforensics.training.trainer import Trainer
from tests.test_train_utils import JOHNS, make_index


def _variational(losses: torch.Tensor, alpha: float) -> float:
    """min over lambda of lambda + mean((l - lambda)_+) / alpha (a minimiser is a data point)."""
    return min(float(lam + torch.relu(losses - lam).mean() / alpha) for lam in losses.tolist())


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [(1.0, 2.5), (0.5, 3.5), (0.3, (4 + 0.2 * 3) / 1.2), (0.25, 4.0), (0.1, 4.0), (0.75, 3.0)],
)
def test_cvar_hand_computed(alpha: float, expected: float) -> None:
    losses = torch.tensor([2.0, 4.0, 1.0, 3.0])
    assert float(cvar(losses, alpha)) == pytest.approx(expected)
    assert float(cvar(losses, alpha)) == pytest.approx(_variational(losses, alpha))


def test_cvar_matches_the_variational_form_on_random_losses() -> None:
    g = torch.Generator().manual_seed(0)
    for n in (1, 2, 7, 33):
        losses = torch.rand(n, generator=g) * 3
        for alpha in (0.05, 0.2, 0.5, 0.9, 1.0):
            assert float(cvar(losses, alpha)) == pytest.approx(
                _variational(losses, alpha), abs=1e-5
            )


def test_cvar_gradient_weights_the_worst_share() -> None:
    losses = torch.tensor([2.0, 4.0, 1.0, 3.0], requires_grad=True)
    cvar(losses, 0.5).backward()
    assert losses.grad.tolist() == [0.0, 0.5, 0.0, 0.5]
    losses.grad = None
    cvar(losses, 0.3).backward()  # 1.2 samples: all of the worst, 0.2 of the next
    assert losses.grad.tolist() == pytest.approx([0.0, 1 / 1.2, 0.0, 0.2 / 1.2])
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        cvar(losses, 0.0)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        cvar(torch.zeros(0), 0.5)


def test_dag_fdd_is_cvar_over_samples() -> None:
    losses = torch.tensor([0.1, 0.9, 0.4, 0.2, 0.7])
    assert float(dag_fdd(losses, 0.4)) == pytest.approx((0.9 + 0.7) / 2)


def _reference_cvar(losses: np.ndarray, alpha: float) -> float:
    """The reference code's CVaR: lambda searched with scipy's fminbound on
    [min - 1000, max], then lambda + mean((l - lambda)_+) / alpha."""

    def objective(lam: float) -> float:
        return lam + np.maximum(losses - lam, 0.0).mean() / alpha

    lam = optimize.fminbound(objective, losses.min() - 1000.0, losses.max(), xtol=1e-10)
    return float(objective(lam))


def _reference_daw(losses: np.ndarray, groups: list[str], eta: float, alpha: float) -> float:
    """AI-Face-FairnessBench's DAW-FDD (daw_fdd.py): inner CVaR per group over its pooled
    losses, outer CVaR over the groups' values, one unweighted entry per group."""
    names = sorted(set(groups))
    inner = [_reference_cvar(losses[[g == n for g in groups]], eta) for n in names]
    return _reference_cvar(np.asarray(inner), alpha)


def test_daw_fdd_pooled_and_class_balanced_by_hand() -> None:
    # 3 real losses of 1 and 1 fake loss of 5 in one group, eta = 1 (a mean)
    losses = torch.tensor([1.0, 1.0, 1.0, 5.0])
    labels = torch.tensor([0, 0, 0, 1])
    one = ["g"] * 4
    assert float(daw_fdd(losses, labels, one, alpha=1.0, eta=1.0)) == pytest.approx(2.0)
    assert float(
        daw_fdd(losses, labels, one, alpha=1.0, eta=1.0, inner="class_balanced")
    ) == pytest.approx(3.0)
    assert _reference_daw(losses.numpy(), one, eta=1.0, alpha=1.0) == pytest.approx(2.0)

    #          A,c0  A,c1  A,c0  B,c0  B,c1  B,c1
    losses = torch.tensor([1.0, 2.0, 3.0, 0.5, 4.0, 0.0], requires_grad=True)
    labels = torch.tensor([0, 1, 0, 0, 1, 1])
    groups = ["A", "A", "A", "B", "B", "B"]
    with torch.no_grad():
        # pooled, eta 0.5 (1.5 of 3 losses): A = (3 + 0.5 * 2) / 1.5 = 8/3, B = (4 + 0.25) / 1.5
        a, b = 8 / 3, 4.25 / 1.5
        assert float(daw_fdd(losses, labels, groups, alpha=0.5, eta=0.5)) == pytest.approx(b)
        assert float(daw_fdd(losses, labels, groups, 1.0, 0.5)) == pytest.approx((a + b) / 2)
        # pooled, eta 1: group means A = 2, B = 1.5
        assert float(daw_fdd(losses, labels, groups, 1.0, 1.0)) == pytest.approx(1.75)
        # class_balanced, eta 0.5: A: class 0 -> 3, class 1 -> 2, risk 2.5;
        # B: class 0 -> 0.5, class 1 -> 4, risk 2.25
        balanced = {"inner": "class_balanced"}
        assert float(daw_fdd(losses, labels, groups, 0.5, 0.5, **balanced)) == pytest.approx(2.5)
        assert float(daw_fdd(losses, labels, groups, 1.0, 0.5, **balanced)) == pytest.approx(2.375)
        # class_balanced, eta 1: class means; A: (2, 2) -> 2, B: (0.5, 2) -> 1.25
        assert float(daw_fdd(losses, labels, groups, 1.0, 1.0, **balanced)) == pytest.approx(1.625)
    daw_fdd(losses, labels, groups, alpha=0.5, eta=0.5).backward()
    # pooled: only group B (the worse) gets weight: its loss 4 fully, 0.5 half, over 1.5
    assert losses.grad.tolist() == pytest.approx([0.0, 0.0, 0.0, 1 / 3, 2 / 3, 0.0])
    losses.grad = None
    daw_fdd(losses, labels, groups, alpha=0.5, eta=0.5, inner="class_balanced").backward()
    # class_balanced: only group A's worst class-0 loss and its class-1 loss (1/2 each)
    assert losses.grad.tolist() == pytest.approx([0.0, 0.5, 0.5, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="group labels"):
        daw_fdd(losses, labels, groups[:3], 0.5, 0.5)
    with pytest.raises(ValueError, match="'pooled' or 'class_balanced'"):
        daw_fdd(losses, labels, groups, 0.5, 0.5, inner="per_class")


def test_daw_fdd_equals_the_reference_algorithm_on_random_batches() -> None:
    """Our exact CVaR against the reference's line search, on batches with 1-4 groups of
    uneven size and class mix; the class-balanced option differs in most of them."""
    rng = np.random.default_rng(0)
    differs = 0
    for trial in range(60):
        n = int(rng.integers(4, 40))
        losses = rng.exponential(1.0, n)
        labels = rng.integers(0, 2, n)
        groups = [f"g{k}" for k in rng.integers(0, int(rng.integers(1, 5)), n)]
        eta, alpha = [(0.9, 0.5), (0.5, 0.3), (1.0, 1.0), (0.25, 0.75)][trial % 4]
        ours = float(daw_fdd(torch.tensor(losses), torch.tensor(labels), groups, alpha, eta))
        assert ours == pytest.approx(_reference_daw(losses, groups, eta, alpha), abs=1e-6)
        balanced = daw_fdd(
            torch.tensor(losses), torch.tensor(labels), groups, alpha, eta, "class_balanced"
        )
        differs += abs(float(balanced) - ours) > 1e-6
    assert differs > 40


def _batch(n: int = 6) -> dict:
    g = torch.Generator().manual_seed(1)
    return {
        "image": torch.randn(n, 3, 64, 64, generator=g),
        "label": torch.tensor([0, 1] * (n // 2)),
        "attributes": {"gender": ["female", "female", "male", "male", "male", "female"][:n]},
    }


def test_fair_loss_wraps_a_detector_loss() -> None:
    torch.manual_seed(0)
    det = build_detector("meso4", input_size=64)
    batch = _batch()
    out = det(batch)
    losses = det.loss(batch, out)
    sample = F.cross_entropy(out["logits"], batch["label"], reduction="none")
    torch.testing.assert_close(det.sample_loss(batch, out), sample)
    dag = FairLoss(FairLossConfig(name="dag_fdd", alpha=0.5))(det, batch, out, losses)
    assert dag["total"].item() == pytest.approx(cvar(sample, 0.5).item(), rel=1e-5)
    assert dag["dag_fdd"].item() == pytest.approx(dag["total"].item())
    daw = FairLoss(FairLossConfig(name="daw_fdd", alpha=0.5, eta=0.9))(det, batch, out, losses)
    expected = daw_fdd(sample, batch["label"], batch["attributes"]["gender"], 0.5, 0.9)
    assert daw["total"].item() == pytest.approx(expected.item(), rel=1e-5)
    daw["total"].backward()
    assert all(p.grad is not None for p in det.parameters() if p.requires_grad)
    balanced = FairLoss(FairLossConfig(name="daw_fdd", inner="class_balanced"))
    expected = daw_fdd(
        sample, batch["label"], batch["attributes"]["gender"], 0.5, 0.9, "class_balanced"
    )
    assert balanced(det, batch, out, losses)["total"].item() == pytest.approx(
        expected.item(), rel=1e-5
    )
    # group_key "gender,race": the reference's intersectional groups, values joined by "/"
    race = ["Asian", "White", "Asian", "Asian", "", "White"]
    crossed = {**batch, "attributes": {**batch["attributes"], "race": race}}
    inter = FairLoss(FairLossConfig(name="daw_fdd", group_key="gender,race"))
    joined = ["female/Asian", "female/White", "male/Asian", "male/Asian", "male/", "female/White"]
    assert inter._groups(crossed) == joined
    expected = daw_fdd(sample, batch["label"], joined, 0.5, 0.9)
    assert inter(det, crossed, out, losses)["total"].item() == pytest.approx(
        expected.item(), rel=1e-5
    )
    # other loss terms stay: total = total - ce + fair
    extra = {**losses, "total": losses["total"] + 1.0, "aux": torch.tensor(1.0)}
    kept = FairLoss(FairLossConfig(name="dag_fdd"))(det, batch, out, extra)
    assert kept["total"].item() == pytest.approx(cvar(sample, 0.5).item() + 1.0, rel=1e-5)


def test_fair_loss_bad_input() -> None:
    det = build_detector("meso4", input_size=64)
    batch = _batch()
    out = det(batch)
    losses = det.loss(batch, out)
    with pytest.raises(KeyError, match="no attribute 'race'"):
        FairLoss(FairLossConfig(name="daw_fdd", group_key="race"))(det, batch, out, losses)
    with pytest.raises(KeyError, match="no attribute 'race'"):
        FairLoss(FairLossConfig(name="daw_fdd", group_key="gender,race"))(det, batch, out, losses)
    with pytest.raises(ValueError, match="no per-sample 'ce' term"):
        FairLoss(FairLossConfig(name="dag_fdd"))(det, batch, out, {"total": losses["total"]})
    wrong = {**losses, "ce": losses["ce"] * 3}
    with pytest.raises(ValueError, match="not the mean of sample_loss"):
        FairLoss(FairLossConfig(name="dag_fdd"))(det, batch, out, wrong)
    with pytest.raises(ValueError, match="dag_fdd or daw_fdd"):
        FairLoss(FairLossConfig())
    with pytest.raises(ValueError, match=r"fair_loss\.alpha"):
        FairLossConfig(name="dag_fdd", alpha=1.5)


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"fair_loss\.eta"):
        load_train_config("meso4", overrides=["train.fair_loss.eta=0"])
    with pytest.raises(ConfigError, match="fair_loss.name"):
        load_train_config("meso4", overrides=["train.fair_loss.name=dro"])
    with pytest.raises(ConfigError, match="fair_loss.inner.*'pooled', 'class_balanced'"):
        load_train_config("meso4", overrides=["train.fair_loss.inner=per_class"])


@pytest.mark.parametrize("name", ["dag_fdd", "daw_fdd"])
def test_tiny_training_run_with_a_fair_loss(tmp_path: Path, name: str, monkeypatch) -> None:
    if not JOHNS:
        pytest.skip("no face crops in tests/data/faces/dlib/johns")
    make_index(tmp_path, "tiny", n_real=3, n_fake=3, frames=2, size=32)
    sets = {
        "data.data_root": str(tmp_path),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.test_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 1,
        "train.batch_size": 4,
        "train.resolution": 32,
        "train.frame_num": 2,
        "train.test_frame_num": 2,
        "train.log_every_steps": 1,
        "train.fair_loss.name": name,
        "train.fair_loss.group_key": "gender",
        "output_dir": str(tmp_path / "runs"),
    }
    cfg = load_train_config("meso4", overrides=[f"{k}={v}" for k, v in sets.items()])
    seen: list[dict[str, float]] = []
    original = FairLoss.__call__

    def spy(self, detector, batch, out, losses):  # record what each training step minimised
        result = original(self, detector, batch, out, losses)
        seen.append({k: v.item() for k, v in result.items()} | {"plain": losses["total"].item()})
        return result

    monkeypatch.setattr(FairLoss, "__call__", spy)
    trainer = Trainer(cfg)
    run = trainer.fit()
    assert trainer.train_step.fair_loss is not None and len(seen) >= 3  # 12 train frames / 4
    for step in seen:
        assert step["total"] == pytest.approx(step[name])
    assert any(step["total"] > step["plain"] + 1e-6 for step in seen)  # CVaR >= mean, not equal
    assert f"name: {name}" in (run / "config.yaml").read_text()
    assert json.loads((run / "metrics" / "summary.json").read_text())


@pytest.mark.parametrize("name", ["dag_fdd", "daw_fdd"])
def test_shipped_overlay_configs(name: str) -> None:
    repo = Path(__file__).resolve().parents[1]
    cfg = load_train_config(
        "meso4",
        repo / "configs" / "train" / "ff_c23.yaml",
        repo / "configs" / "train" / f"{name}.yaml",
    )
    assert cfg.train.fair_loss.name == name and cfg.train.fair_loss.alpha == 0.5
    assert cfg.data.train_data  # the base config's sections are kept
