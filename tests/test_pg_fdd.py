"""PG-FDD (detectors/pg_fdd.py): its loss terms against hand computations and an independent
reading of the reference code's search, the demographic group mapping and its errors, the two
implementations' outputs and gradients, SAM (training/sam.py) and random real partners."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from scipy import optimize
from torch.nn import functional as F

from fairforensics.configs import ConfigError
from fairforensics.detectors import build_detector
from fairforensics.detectors.cvar import FLOAT32_EXP_LIMIT, cvar, smoothed_cvar
from fairforensics.detectors.pg_fdd import (
    PGFDD,
    PGFDDConfig,
    bilevel_cvar,
    group_indices,
    group_table,
    ldam_loss,
    ldam_margins,
)
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.fairness.protocols import load_protocol, protocol_train_overrides, run_protocol
from fairforensics.preprocessing.demo_dataset import make_demo_dataset
from fairforensics.preprocessing.frames import FrameDataset
from fairforensics.preprocessing.index import read_index
from fairforensics.training.fair_losses import FairLoss, FairLossConfig
from fairforensics.training.sam import SharpnessAwarePerturbation, frozen_bn_statistics
from fairforensics.training.step import TrainStep
from tests.detector_batches import make_batch
from tests.test_train_utils import make_index

REPO = Path(__file__).resolve().parents[1]
TAU1, TAU2 = 1e-3, 1e-4


def _reference_outer(risks: list[float], alpha: float = 0.5) -> float:
    """The reference's outer term, as its code computes it (read from Purdue-M2's
    fair_df_detector.py): a float32 objective that answers ``float max`` wherever
    ``exp((l - x) / tau1)`` overflows, minimised by scipy's ``fminbound`` over
    ``[min - 1000, max]``, then evaluated at the ``x`` found."""
    l32 = torch.tensor(risks, dtype=torch.float32)

    def objective(x: float) -> float:
        e = torch.exp((l32 - x) / TAU1)
        if torch.isinf(e).any():
            return float(np.finfo(float).max)
        hinge = torch.relu(TAU1 * torch.log(1 + e)).mean().item()
        return x + TAU2 / (2 * alpha) * x**2 + hinge / alpha

    x = optimize.fminbound(objective, min(risks) - 1000.0, max(risks))
    hinge = torch.relu(TAU1 * torch.log(1 + torch.exp((l32 - x) / TAU1))).mean().item()
    return x + TAU2 / (2 * alpha) * x**2 + hinge / alpha


# ----------------------------------------------------------------- loss terms by hand
def test_ldam_margins_and_loss_by_hand() -> None:
    # counts 10000, 16, 1 -> n^(-1/4) = 0.1, 0.5, 1 -> scaled to max_m 0.5: 0.05, 0.25, 0.5;
    # a group with no training samples gets 0
    m = ldam_margins([10000, 16, 1, 0], 4, 0.5)
    torch.testing.assert_close(m, torch.tensor([0.05, 0.25, 0.5, 0.0]))
    assert torch.equal(ldam_margins(None, 3, 0.5), torch.full((3,), 0.5))
    logits = torch.tensor([[1.0, 0.2, -0.3, 0.0], [0.1, 0.4, 0.3, 0.2]])
    target = torch.tensor([1, 2])
    # sample 0: target 1 -> its logit 0.2 - 0.25 = -0.05; sample 1: 0.3 - 0.5 = -0.2; then s = 30
    z = 30 * np.array([[1.0, -0.05, -0.3, 0.0], [0.1, 0.4, -0.2, 0.2]])
    expected = np.mean([np.log(np.exp(r).sum()) - r[t] for r, t in zip(z, [1, 2], strict=True)])
    assert float(ldam_loss(logits, target, m, 30.0)) == pytest.approx(expected, rel=1e-6)


def test_smoothed_cvar_reference_floor_by_hand() -> None:
    # risks 0.2, 0.4, 0.9, 0.95: the floor max - tau1 * 88.7228 = 0.86128 is above the smooth
    # minimiser (about 0.4-0.9), so lambda* = 0.86128; the hinge terms
    # tau1 * softplus((l - lambda) / tau1)
    # are 0.08872 (0.95) and 0.03872 (0.9), about 0 for the others, their mean 0.03186 / alpha 0.5
    # -> 0.06372; plus lambda and tau2 / (2 alpha) lambda^2 = 0.0000742: 0.92507
    lam = 0.95 - TAU1 * FLOAT32_EXP_LIMIT
    assert lam == pytest.approx(0.86128, abs=1e-5)
    hand = lam + TAU2 * lam**2 + 2 * (0.95 - lam + 0.9 - lam) / 4
    risks = torch.tensor([0.2, 0.4, 0.9, 0.95])
    got = float(smoothed_cvar(risks, 0.5, TAU1, TAU2, reference_floor=True))
    assert got == pytest.approx(hand, abs=1e-6) and got == pytest.approx(0.92507, abs=1e-5)
    assert got == pytest.approx(_reference_outer([0.2, 0.4, 0.9, 0.95]), abs=1e-5)
    # the smoothed objective itself: CVaR_0.5 = mean of the worst two = 0.925 (within ~tau1)
    exact = float(smoothed_cvar(risks, 0.5, TAU1, TAU2))
    assert exact == pytest.approx(0.925, abs=2e-3) and exact <= got + 1e-9
    # docs/detectors.md's example: 0.3, 0.5, 0.7, 0.9 -> lambda = 0.9 - 0.08872, value
    # lambda + 1e-4 lambda^2 + 2 * 0.08872 / 4 = 0.8557, gradient only on the largest risk
    # (2 / 4 * sigmoid(88.7) = 0.5); the smoothed CVaR_0.5 itself: 0.8000, 0.5 on the top two
    for floor, value, grad in ((True, 0.8557, [0, 0, 0, 0.5]), (False, 0.8000, [0, 0, 0.5, 0.5])):
        risks = torch.tensor([0.3, 0.5, 0.7, 0.9], requires_grad=True)
        out = smoothed_cvar(risks, 0.5, TAU1, TAU2, reference_floor=floor)
        out.backward()
        assert out.item() == pytest.approx(value, abs=1e-4)
        torch.testing.assert_close(risks.grad, torch.tensor(grad), atol=2e-4, rtol=0)


def test_smoothed_cvar_matches_the_reference_search_and_the_true_minimum() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        risks = rng.uniform(0.05, 1.5, size=int(rng.integers(2, 9))).astype(np.float32)
        ours = float(smoothed_cvar(torch.from_numpy(risks), 0.5, TAU1, TAU2, reference_floor=True))
        assert ours == pytest.approx(_reference_outer(risks.tolist()), abs=2e-5)
        # exact: the minimum of the smoothed objective over a fine grid (numpy, float64)
        grid = np.linspace(risks.min() - 1, risks.max() + 0.01, 400001)
        hinge = TAU1 * np.logaddexp(0, (risks[None, :] - grid[:, None]) / TAU1)
        values = grid + TAU2 / (2 * 0.5) * grid**2 + hinge.mean(1) / 0.5
        exact = float(smoothed_cvar(torch.from_numpy(risks), 0.5, TAU1, TAU2))
        assert exact == pytest.approx(values.min(), abs=1e-6)
        assert exact == pytest.approx(float(cvar(torch.from_numpy(risks), 0.5)), abs=5e-3)


def test_smoothed_cvar_gradient_is_the_sigmoid_weight() -> None:
    risks = torch.tensor([0.3, 0.5, 0.52, 0.9], requires_grad=True)
    smoothed_cvar(risks, 0.5, TAU1, TAU2).backward()
    lam = _lambda_star(risks.detach().double().numpy(), 0.5)
    expected = torch.sigmoid((risks.detach().double() - lam) / TAU1) / (0.5 * 4)
    torch.testing.assert_close(risks.grad.double(), expected, atol=1e-6, rtol=0)
    assert risks.grad.sum() == pytest.approx(1.0, abs=0.01)  # about 1 / alpha of n/2 risks


def _lambda_star(risks: np.ndarray, alpha: float) -> float:
    """Root of the smoothed objective's derivative, by bisection (independent of scipy)."""

    def slope(x: float) -> float:
        s = 1 / (1 + np.exp(-(risks - x) / TAU1))
        return 1 + TAU2 / alpha * x - s.mean() / alpha

    lo, hi = risks.min() - 10, risks.max() + 10
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def test_bilevel_cvar_by_hand() -> None:
    # group 0: losses 1, 2, 3, 4 -> CVaR_0.9 = (4 + 3 + 2 + 0.6 * 1) / 3.6 = 2.6667
    # group 1: losses 0.5, 5 -> CVaR_0.9 = (5 + 0.8 * 0.5) / 1.8 = 3.0
    # outer (exact smoothed) CVaR_0.5 over (2.6667, 3.0): the worse one, 3.0, within ~tau1
    losses = torch.tensor([1.0, 2.0, 0.5, 3.0, 4.0, 5.0])
    groups = torch.tensor([0, 0, 1, 0, 0, 1])
    assert float(cvar(torch.tensor([1.0, 2, 3, 4]), 0.9)) == pytest.approx(9.6 / 3.6)
    got = bilevel_cvar(losses, groups, 0.9, 0.5, TAU1, TAU2, reference_floor=False)
    assert float(got) == pytest.approx(3.0, abs=2e-3)
    # the reference's floor: max - 0.0887 = 2.911 > the smooth minimiser, so lambda = 2.911 and
    # the value is lambda + 1e-4 lambda^2 + (3 - lambda) (the 2.667 risk adds ~0)
    ref = bilevel_cvar(losses, groups, 0.9, 0.5, TAU1, TAU2, reference_floor=True)
    lam = 3.0 - TAU1 * FLOAT32_EXP_LIMIT
    assert float(ref) == pytest.approx(lam + TAU2 * lam**2 + (3.0 - lam), abs=1e-5)


# ----------------------------------------------------------------- demographic groups
def test_default_groups_number_like_the_reference_intersec_label() -> None:
    table = group_table(PGFDDConfig())
    assert len(table) == 8
    assert table[0] == ("male", "Asian") and table[3] == ("male", "others")
    assert table[4] == ("female", "Asian") and table[7] == ("female", "others")
    attrs = {"gender": ["female", "male", "female"], "race": ["Black", "White", "others"]}
    assert group_indices(attrs, ["gender", "race"], PGFDDConfig().group_values) == [6, 1, 7]


def test_missing_or_unlisted_attributes_are_errors_not_groups() -> None:
    values = PGFDDConfig().group_values
    with pytest.raises(ValueError, match=r"no attribute race \(it has gender\)"):
        group_indices({"gender": ["male"]}, ["gender", "race"], values)
    with pytest.raises(
        ValueError, match=r"sample 1 \(video v1\) has no race value \(listed: Asian, White"
    ):
        group_indices(
            {"gender": ["male", "female"], "race": ["Asian", ""]},
            ["gender", "race"],
            values,
            ["v0", "v1"],
        )
    with pytest.raises(
        ValueError, match="race = 'Indian', which model.group_values.race does not list"
    ):
        group_indices({"gender": ["male"], "race": ["Indian"]}, ["gender", "race"], values)


def test_configure_from_attributes_counts_groups_and_reads_values() -> None:
    videos = [
        ("d/real/000", {"gender": "male", "race": "White"}, 8),
        ("d/fake/000_001", {"gender": "male", "race": "White"}, 8),
        ("d/real/001", {"gender": "female", "race": "Black"}, 4),
    ]
    cfg = PGFDD.configure_from_attributes({}, videos)
    assert cfg["group_counts"] == [0, 16, 0, 0, 0, 0, 4, 0]  # male-White 1, female-Black 6
    kept = PGFDD.configure_from_attributes({"group_counts": [1] * 8}, videos)
    assert kept["group_counts"] == [1] * 8  # values the user set are kept
    lit = PGFDD.configure_from_attributes(
        {"group_attributes": ["lighting"]},
        [("a", {"lighting": "dim"}, 3), ("b", {"lighting": "bright"}, 5)],
    )
    assert lit["group_values"]["lighting"] == ["bright", "dim"] and lit["group_counts"] == [5, 3]
    with pytest.raises(ConfigError, match=r"1 of 3 training videos have no 'race'.*d/real/001"):
        PGFDD.configure_from_attributes({}, [*videos[:2], ("d/real/001", {"gender": "female"}, 4)])
    with pytest.raises(ConfigError, match="race = 'Indian', which model.group_values.race"):
        PGFDD.configure_from_attributes({}, [("x", {"gender": "male", "race": "Indian"}, 1)])


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match="group_values lists no values for lighting"):
        build_detector("pg_fdd", group_attributes=["lighting"])
    with pytest.raises(ConfigError, match="group_counts has 3 entries for 8 groups"):
        build_detector("pg_fdd", group_counts=[1, 2, 3])
    with pytest.raises(ConfigError, match="outer_search"):
        build_detector("pg_fdd", outer_search="grid")


# ----------------------------------------------------------------- the model
@pytest.fixture(scope="module")
def models() -> dict[str, PGFDD]:
    torch.manual_seed(0)
    return {
        impl: build_detector("pg_fdd", implementation=impl, input_size=64, num_methods=2)
        for impl in ("authors", "aiface")
    }


def test_outputs_losses_and_where_gradients_reach(models) -> None:
    batch = make_batch(models["authors"], 64)
    n = len(batch["label"])
    for impl, model in models.items():
        model.train()
        model.zero_grad()
        torch.manual_seed(1)
        out = model(batch)
        assert out["logits"].shape == (n, 2) and out["logits_fair"].shape == (n, 8)
        assert out["logits_spe"].shape == (n, 3) and out["recon_self"].shape == (n, 3, 64, 64)
        losses = model.loss(batch, out)
        assert set(losses) == {
            "total",
            "common",
            "specific",
            "reconstruction",
            "contrastive",
            "demographic",
            "fused",
        }
        weighted = (
            losses["common"]
            + 0.1 * losses["specific"]
            + 0.3 * losses["reconstruction"]
            + 0.05 * losses["contrastive"]
            + 0.1 * losses["demographic"]
            + losses["fused"]
        )
        torch.testing.assert_close(losses["total"], weighted)
        groups = model.group_labels(batch)
        torch.testing.assert_close(
            losses["demographic"],
            ldam_loss(out["logits_fair"], groups, model.ldam_margins, 30.0),
        )
        with pytest.raises(ValueError, match="no per-sample 'ce' term"):  # no DAG/DAW on top
            FairLoss(FairLossConfig(name="dag_fdd"))(model, batch, out, losses)
        losses["reconstruction"].backward()
        reached = any(
            p.grad is not None and p.grad.abs().sum() > 0 for p in model.encoder_fair.parameters()
        )
        # the authors' decoder is conditioned on AdaIN(demographic, content); AI-Face's on content
        assert reached == (impl == "authors")
    model = models["aiface"]
    model.eval()
    with torch.no_grad():
        out = model(batch)
    assert torch.all(out["logits"][:, 0] == 0)  # one fused logit z: logits [0, z]
    z, y = out["logits"][:, 1], batch["label"].float()
    torch.testing.assert_close(  # its per-sample CE is AI-Face's BCE on z
        F.cross_entropy(out["logits"], batch["label"], reduction="none"),
        F.binary_cross_entropy_with_logits(z, y, reduction="none"),
    )


def test_training_forward_needs_pairs(models) -> None:
    model = models["authors"].train()
    batch = make_batch(model, 64)
    del batch["pair_index"]
    with pytest.raises(ValueError, match="real/fake pairs"):
        model(batch)


# ----------------------------------------------------------------- SAM
class _Tiny(torch.nn.Module):
    """Linear + batch norm, with the detector interface TrainStep uses."""

    class cfg:  # noqa: N801 - the attribute TrainStep reads
        mean = std = (0.0, 0.0, 0.0)

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2, bias=False)
        self.bn = torch.nn.BatchNorm1d(2)

    def forward(self, batch):
        return {"logits": self.bn(self.lin(batch["x"]))}

    def loss(self, batch, out):
        ce = F.cross_entropy(out["logits"], batch["label"])
        return {"total": ce, "ce": ce}


def test_sam_step_by_hand() -> None:
    torch.manual_seed(0)
    model = _Tiny()
    batch = {"x": torch.randn(6, 3), "label": torch.tensor([0, 1, 0, 1, 1, 0])}
    w0 = model.lin.weight.detach().clone()
    running0 = model.bn.running_mean.clone()

    def grad_at(w: torch.Tensor) -> torch.Tensor:
        w = w.clone().requires_grad_(True)
        out = F.batch_norm(batch["x"] @ w.T, None, None, model.bn.weight, model.bn.bias, True)
        F.cross_entropy(out, batch["label"]).backward()
        return w.grad

    g = grad_at(w0)  # the BN affine parameters also get an ascent step: use the full norm
    g_bn = torch.autograd.grad(
        F.cross_entropy(
            F.batch_norm(batch["x"] @ w0.T, None, None, model.bn.weight, model.bn.bias, True),
            batch["label"],
        ),
        [model.bn.weight, model.bn.bias],
    )
    norm = torch.sqrt((g**2).sum() + sum((t**2).sum() for t in g_bn))
    bn_w = model.bn.weight.detach() + 0.5 * g_bn[0] / norm
    bn_b = model.bn.bias.detach() + 0.5 * g_bn[1] / norm
    w_adv = (w0 + 0.5 * g / norm).requires_grad_(True)
    out = F.batch_norm(batch["x"] @ w_adv.T, None, None, bn_w, bn_b, True)
    F.cross_entropy(out, batch["label"]).backward()
    expected = w0 - 0.1 * w_adv.grad

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = TrainStep(
        model,
        opt,
        device=torch.device("cpu"),
        sam=SharpnessAwarePerturbation(model.parameters(), rho=0.5, adaptive=False),
    )
    losses = step(batch)
    torch.testing.assert_close(model.lin.weight.detach(), expected)
    # running statistics moved once (the first pass), not twice
    first = running0 * 0.9 + 0.1 * (batch["x"] @ w0.T).mean(0)
    torch.testing.assert_close(model.bn.running_mean, first)
    assert math.isfinite(losses["total"])


def test_frozen_bn_statistics_restores_momentum() -> None:
    model = torch.nn.Sequential(torch.nn.BatchNorm2d(2, momentum=0.3))
    with frozen_bn_statistics(model):
        assert model[0].momentum == 0.0
        model(torch.randn(4, 2, 3, 3))
    assert model[0].momentum == 0.3 and torch.equal(model[0].running_mean, torch.zeros(2))


# ----------------------------------------------------------------- random real partners
def test_random_pairs_draw_any_real_partner(tmp_path: Path) -> None:
    index = read_index(
        make_index(tmp_path, n_real=4, n_fake=4, frames=1, size=32, splits=("train",))
    )

    def partners(requires: set[str], epoch: int) -> list[str]:
        ds = FrameDataset(
            [index], "train", frame_num=1, resolution=32, requires=requires, train=True
        )
        return [ds[(epoch, i)]["_pair"][1]["video_id"] for i in range(len(ds))]

    fakes = [v.id for v in index.split("train") if v.label == 1]
    assert partners({"pairs"}, 0) == [f.split("_")[0] for f in fakes]  # same source
    drawn = {e: partners({"pairs", "random_pairs"}, e) for e in range(4)}
    assert drawn[0] == partners({"pairs", "random_pairs"}, 0)  # seeded
    every = {p for d in drawn.values() for p in d}
    assert len(every) >= 3 and any(d != drawn[0] for d in drawn.values())


# ----------------------------------------------------------------- a fairness protocol
def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=1200
    )
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_pg_fdd_in_a_fairness_protocol_on_the_demo_data(tmp_path: Path) -> None:
    """configs/fairness/demo_pg_fdd.yaml through scripts/fairness.py: Meso4 and PG-FDD trained
    (tiny: 64 px, 1 frame per video, 1 epoch, SAM on) on the demo data, tested per lighting
    group, tables written."""
    raw, processed, out = tmp_path / "raw", tmp_path / "processed", tmp_path / "protocol"
    make_demo_dataset(raw, n_videos=10, n_frames=2, size=192)
    _run(
        "scripts/preprocess.py",
        "--config",
        "configs/preprocess/demo.yaml",
        *(
            "--set",
            f"dataset.root={raw}",
            "--set",
            f"dataset.attributes.csv={raw / 'attributes.csv'}",
        ),
        *("--set", f"output.root={processed}", "--set", "sampling.num_frames=1"),
        *("--workers", "1", "--no-progress"),
    )
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "train: {epochs: 1, batch_size: 2, resolution: 64, frame_num: 1, test_frame_num: 1,"
        " log_every_steps: 1}\ndata: {num_workers: 0}\ndevice: cpu\n"
    )
    _run(
        "scripts/fairness.py",
        *("--protocol", "configs/fairness/demo_pg_fdd.yaml", "--data-root", str(processed)),
        *("--dataset", "demo", "--train-config", str(tiny), "--out", str(out)),
    )
    config = yaml.safe_load((out / "runs" / "demo_pg_fdd_1_1_pg_fdd_B" / "config.yaml").read_text())
    model, train = config["model"], config["train"]
    assert model["group_attributes"] == ["lighting"]
    assert model["group_values"]["lighting"] == ["bright", "dim"]
    assert model["group_counts"] == [6, 6]  # 3 bright + 3 dim pairs of videos, 1 frame each
    assert train["optimizer"]["sam_rho"] == 0.05 and train["optimizer"]["name"] == "sgd"
    test = [v for v in read_index(processed / "demo.json").videos if v.split == "test"]
    pred = read_predictions(out / "predictions" / "pg_fdd" / "B" / "1.1.csv")
    assert len(pred) == len(test) and set(pred.attributes["lighting"]) == {"bright", "dim"}
    rows = json.loads((out / "demo_pg_fdd_eer.json").read_text())
    assert [r["test"] for r in rows] == ["bright", "dim"]
    assert all(0 <= r["pg_fdd B"] <= 100 and 0 <= r["meso4 B"] <= 100 for r in rows)
    fair = json.loads((out / "demo_pg_fdd_fdr_abf.json").read_text())
    assert {"pg_fdd B", "meso4 B"} <= set(fair[0]) and (out / "demo_pg_fdd_fdr_abf.md").is_file()


def test_protocol_models_section_and_fairswap_check(tmp_path: Path) -> None:
    protocol = load_protocol("demo_pg_fdd")
    over = protocol_train_overrides(protocol, protocol.subprotocols[0], "pg_fdd")
    assert over["model"]["group_attributes"] == ["lighting"]
    assert "model" not in protocol_train_overrides(protocol, protocol.subprotocols[0], "meso4")
    with pytest.raises(ConfigError, match="models names ucf, not in detectors"):
        load_protocol("demo_pg_fdd", overrides=["models={ucf: {margin: 2.0}}"])
    swap = load_protocol("demo_pg_fdd", overrides=["fairswap=[false, true]"])
    with pytest.raises(ValueError, match="pg_fdd train on real/fake pairs, which FairSWAP"):
        run_protocol(swap, tmp_path, "demo", tmp_path / "out", train_fn=pytest.fail)
