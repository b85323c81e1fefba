"""The EfficientNet-B4 detectors of DeepfakeBench v2 (sbi, sia, multi_attention, lrl): weights files,
LRL's frequency input against OpenCV, the loss terms by hand, training steps with a falling loss
through the training data pipeline (SBI on real faces and their online blends, Multi-attention's
second phase) and Multi-attention's phase switch in the trainer.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from fairforensics.detectors import build_detector, read_checkpoint
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.dfb_efficientnet import build_efficientnet_b4, flat_blocks
from fairforensics.detectors.efficientnet import efficientnet_b4_rules
from fairforensics.detectors.lrl import HighPassIDCT, LocalRelation
from fairforensics.detectors.sia import saia
from fairforensics.evaluation.runs import load_run
from fairforensics.preprocessing.frames import FrameDataset, collate, to_device
from fairforensics.preprocessing.index import read_index
from fairforensics.training.config import load_train_config
from fairforensics.training.step import TrainStep
from fairforensics.training.trainer import Trainer
from tests.test_train_utils import make_index
from tests.testdata import CELEBRITIES

# ----------------------------------------------------------------------------- weights files


def _efficientnet_pytorch_file(path: Path) -> dict[str, torch.Tensor]:
    """A B4 state dict in efficientnet_pytorch's names (its ImageNet file's layout), saved."""
    torch.manual_seed(0)
    timm_state = build_efficientnet_b4(False).state_dict()
    to_timm = efficientnet_b4_rules("", "")
    back = {dst: src for src, dst in to_timm.items()}
    state = {}
    for key, value in timm_state.items():
        dst = max((d for d in back if key.startswith(d)), key=len)
        state[back[dst] + key[len(dst) :]] = value
    state["_fc.weight"], state["_fc.bias"] = torch.zeros(1000, 1792), torch.zeros(1000)
    torch.save(state, path)
    return timm_state


def test_efficientnet_pytorch_file_loads_strictly(tmp_path: Path) -> None:
    """DeepfakeBench's ImageNet file layout (``_blocks.N``) loads onto the timm backbone; a
    one-channel stem gets the RGB stem summed; a half file is refused naming what is missing."""
    path = tmp_path / "efficientnet-b4.pth"
    expected = _efficientnet_pytorch_file(path)
    model = build_detector("sia", pretrained=str(path))
    for key in ("conv_stem.weight", "blocks.3.5.conv_pwl.weight", "bn2.running_var"):
        torch.testing.assert_close(model.backbone.state_dict()[key], expected[key])
    assert len(flat_blocks(model.backbone)) == 32
    mono = build_efficientnet_b4(str(path), in_chans=1)
    torch.testing.assert_close(
        mono.conv_stem.weight, expected["conv_stem.weight"].sum(dim=1, keepdim=True)
    )
    state = torch.load(path, weights_only=True)
    torch.save({k: v for k, v in state.items() if not k.startswith("_blocks.3")}, path)
    with pytest.raises(PretrainedWeightsError, match=r"missing \d+: blocks\.1\.1\."):
        build_detector("sbi", pretrained=str(path))


# ----------------------------------------------------------------------------- LRL's idct input


def _dfb_idct(gray: np.ndarray, r: float = 0.33) -> np.ndarray:
    """DeepfakeBench's ``LRLDataset.image2dct`` + normalisation, after the grey conversion,
    written out with OpenCV."""
    coeffs = cv2.dct(np.float32(gray))
    rows, cols = coeffs.shape
    x, y = np.ogrid[:rows, :cols]
    high = np.ones((rows, cols), np.uint8)
    high[(cols / rows) * x + y < r * cols] = 0
    return (cv2.idct(high * coeffs) / 255 - 0.5) / 0.5


def test_idct_matches_opencv_on_real_faces() -> None:
    paths = sorted(CELEBRITIES.glob("*.jpg"))[:3]
    rgbs = [
        cv2.resize(cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB), (256, 256)) for p in paths
    ]
    image = torch.from_numpy(np.stack(rgbs)).permute(0, 3, 1, 2).float() / 255
    transform = HighPassIDCT((0.5,) * 3, (0.5,) * 3)
    grays = np.stack([cv2.cvtColor(x, cv2.COLOR_RGB2GRAY) for x in rgbs]).astype(np.float32)
    ours = transform.gray((image - 0.5) / 0.5)
    # the installed OpenCV's grey levels: ours are OpenCV 4's (DeepfakeBench's), at most one
    # level apart where OpenCV 5's finer weights round the other way
    diff = (ours - torch.from_numpy(grays)).abs()
    assert float(diff.max()) <= 1 and float((diff > 0).float().mean()) < 1e-3
    ref = torch.from_numpy(np.stack([_dfb_idct(g) for g in grays]))[:, None]
    assert float(ref.abs().max()) > 0.1  # the faces do have high frequencies
    torch.testing.assert_close(transform.from_gray(torch.from_numpy(grays)), ref, rtol=0, atol=2e-4)
    assert transform((image - 0.5) / 0.5).shape == (3, 1, 256, 256)
    # a model cast to float64 (the training-step parity test) computes the same idct
    torch.testing.assert_close(
        transform.double()((image.double() - 0.5) / 0.5), transform((image - 0.5) / 0.5)
    )


# ----------------------------------------------------------------------------- losses by hand


def test_lrl_targets_by_hand() -> None:
    mask = torch.zeros(1, 1, 4, 4)
    mask[..., :2] = 1  # the left half manipulated: patches (row-major) 1, 0, 1, 0
    expected = torch.tensor([[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1.0]])
    torch.testing.assert_close(LocalRelation.mask_similarity(mask, 2)[0], expected)
    fmap = torch.zeros(1, 2, 4, 4)
    fmap[:, 0, :2] = 1.0  # top patches along channel 0, bottom patches along channel 1
    fmap[:, 1, 2:] = 1.0
    relation, sim = LocalRelation.patch_similarity(fmap)
    cos = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1.0]])
    torch.testing.assert_close(sim[0], (cos + 1) / 2)
    assert relation.shape == (1, 12) and relation.min() == 0.5 and relation.max() == 1.0


@pytest.fixture(scope="module")
def mat():
    torch.manual_seed(0)
    return build_detector("multi_attention", pretrained=False, input_size=64)


def test_regional_independence_loss_by_hand(mat) -> None:
    """Two faces whose 4 pooled region features are e0 (real) and e1 (fake), centres at 0."""
    mat.train()
    mat.ril_centers.zero_()
    mat.set_epoch(10)  # first epoch of the second phase: rate 0.05
    local_avg = torch.zeros(2, 32, 1, 1)
    local_avg[0, 0], local_avg[1, 1] = 1.0, 1.0
    ril = mat.regional_independence(local_avg, torch.ones(2, 4, 1, 1), torch.tensor([0, 1]))
    dist = (0.975**2 + 0.025**2) ** 0.5  # |e0 - 0.025 (e0 + e1)|
    intra = ((dist - 0.05) + (dist - 0.1)) / 2
    inter = 6 * 0.2 / 4 / 0.05  # 6 pairs of equal centres, each 0.2 short of the margin
    assert float(ril) == pytest.approx(intra + inter, rel=1e-6)
    centres = torch.zeros(4, 32)
    centres[:, :2] = 0.025
    torch.testing.assert_close(mat.ril_centers, centres)
    mat.set_epoch(12)
    assert mat.ril_alpha == pytest.approx(0.05 * 0.9**2)


def test_multi_attention_phases(mat) -> None:
    """The phase follows the epoch, is saved with the weights and picks the head at test time."""
    mat.set_epoch(9)
    torch.manual_seed(1)
    batch = {"image": torch.randn(2, 3, 64, 64), "label": torch.tensor([0, 1])}
    mat.eval()
    assert set(mat(batch)) == {"logits", "prob", "feat", "feature_map"}
    mat.set_epoch(10)
    out = mat(batch)
    assert out["attentions"].shape == (2, 4, 4, 4) and out["feature_maps_d"].shape[1] == 32
    saved = mat.state_dict()
    assert bool(saved["mat_active"])
    other = copy.deepcopy(mat)
    other.set_epoch(0)
    assert "attentions" not in other(batch)
    other.load_state_dict(saved)  # a saved checkpoint scores with the head it was trained with
    torch.testing.assert_close(other(batch)["prob"], out["prob"])
    other.cfg = dataclasses.replace(other.cfg, phase="backbone")
    assert "attentions" not in other(batch)
    assert "attention_generation.conv2.weight" in mat.late_params
    assert not any(k.startswith("backbone.") for k in mat.late_params)


def test_agda_soft_drops_inside_the_attention(mat) -> None:
    torch.manual_seed(2)
    image = torch.rand(2, 3, 64, 64)
    attention = torch.zeros(2, 4, 4, 4)
    attention[:, :, 1:3, 1:3] = 1.0  # every map on the centre
    out = mat.agda(image, attention)
    assert out.shape == image.shape
    changed = (out - image).abs().mean(dim=(0, 1))
    assert changed[24:40, 24:40].mean() > 10 * changed[:4, :4].mean()


def test_sbi_three_class_head() -> None:
    torch.manual_seed(0)
    model = build_detector("sbi", pretrained=False).eval()
    batch = {"image": torch.randn(2, 3, 64, 64), "label": torch.tensor([0, 1])}
    with torch.no_grad():
        out = model(batch)
    z = out["class_logits"]
    assert z.shape == (2, 3) and out["logits"].shape == (2, 2)
    torch.testing.assert_close(out["prob"], torch.softmax(z, dim=1)[:, 1])
    ce = torch.nn.functional.cross_entropy(z, batch["label"])
    torch.testing.assert_close(model.loss(batch, out)["total"], ce)
    paper = build_detector("sbi", variant="paper", pretrained=False)
    assert paper.head.out_features == 2 and paper.cfg.input_size == 380


def test_sia_attention_is_per_face_unless_batch_coupled() -> None:
    """SAIA normalises by each face's own mean by default (a face's output is the same alone or
    in a batch); ``batch_coupled`` is DeepfakeBench's mean over the whole batch, which equals
    the default for a batch of one and differs for a batch of faces of different scales."""
    torch.manual_seed(0)
    x = torch.randn(3, 8, 5, 5) * torch.tensor([1.0, 2.0, 4.0]).view(3, 1, 1, 1)
    alone = [saia(x[i : i + 1]) for i in range(3)]
    out, space = saia(x)
    torch.testing.assert_close(out, torch.cat([a[0] for a in alone]))
    torch.testing.assert_close(space, torch.cat([a[1] for a in alone]))
    coupled, _ = saia(x, batch_coupled=True)
    assert (coupled - out).abs().max() > 1e-3
    torch.testing.assert_close(saia(x[:1], batch_coupled=True)[0], alone[0][0])
    att_mean = 2 * space.mean(dim=(1, 2, 3))  # space = att / (2 mean(att)): its mean is 1/2
    torch.testing.assert_close(att_mean, torch.ones(3))


# ----------------------------------------------------------------------------- training steps


def _batch(tmp_path: Path, requires: frozenset[str], size: int) -> dict:
    """One training batch of real faces (and their online blends) from the data pipeline."""
    path = make_index(tmp_path, n_real=1, n_fake=1, frames=2, size=size, splits=("train",))
    ds = FrameDataset(
        [read_index(path)], "train", frame_num=2, resolution=size, requires=requires, train=True
    )
    return collate([ds[i] for i in range(len(ds))])


def _loss(model, batch: dict) -> float:
    """The training loss (train mode, fixed random draws: dropout, drop-connect, AGDA)."""
    torch.manual_seed(1)
    with torch.no_grad():
        data = to_device(batch, "cpu", model.cfg.mean, model.cfg.std)
        return float(model.loss(data, model(data))["total"])


def _train(model, batch: dict, steps: int = 3) -> tuple[float, float]:
    """The loss before and after ``steps`` Adam steps (the trainer's step) on one batch."""
    model.train()
    before = _loss(model, batch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = TrainStep(model, optimizer, device=torch.device("cpu"))
    for _ in range(steps):
        step(batch)
    return before, _loss(model, batch)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "size", "overrides"),
    [("sbi", 32, {}), ("multi_attention", 32, {"backbone_epochs": 0})],
)
def test_training_steps_lower_the_loss(tmp_path: Path, name: str, size: int, overrides) -> None:
    """SBI on real faces and their online blends; Multi-attention in its second phase (AGDA,
    RIL). Every detector's first learning steps are also checked by test_detector_contract.py
    (random tensors; sia and lrl as well)."""
    torch.manual_seed(0)
    model = build_detector(name, pretrained=False, input_size=size, **overrides)
    model.set_epoch(0)
    batch = _batch(tmp_path, model.requires, size)
    if name == "sbi":  # every real face brings its self-blended fake
        assert batch["label"].tolist() == [0, 1] * 2
        assert all(m == "blend:sbi_paper" for m in batch["method"][1::2])
    before, after = _train(model, batch)
    assert after < before
    if name == "multi_attention":  # the multi-attention phase: AGDA, RIL and a moving centre
        assert float(model.ril_centers.abs().sum()) > 0


@pytest.mark.slow
def test_multi_attention_switches_phase_in_the_trainer(tmp_path: Path) -> None:
    """Epoch 0 trains the plain EfficientNet head, epoch 1 the multi-attention head; the saved
    run scores with the head it trained last."""
    make_index(tmp_path / "data", "tiny", n_real=1, n_fake=1, frames=2, size=32)
    sets = {
        "data.data_root": str(tmp_path / "data"),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.num_workers": 0,
        "model.backbone_epochs": 1,
        "train.epochs": 2,
        "train.batch_size": 4,
        "train.resolution": 32,
        "train.frame_num": 2,
        "train.test_frame_num": 2,
        "train.augment.enabled": "false",
        "output_dir": str(tmp_path / "runs"),
    }
    cfg = load_train_config("multi_attention", overrides=[f"{k}={v}" for k, v in sets.items()])
    run = Trainer(cfg).fit()
    last = read_checkpoint(run / "checkpoints" / "last.pt")["model"]
    assert bool(last["mat_active"]) and float(last["ril_centers"].abs().sum()) > 0
    detector, _ = load_run(run, "last")
    with torch.no_grad():
        out = detector({"image": torch.zeros(2, 3, 32, 32), "label": torch.tensor([0, 1])})
    assert "attentions" in out
