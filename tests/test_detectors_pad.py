"""The face PAD detectors: LBP-MLP, ResNet-50, DeepPixBiS and LMFD-PAD (issue 6).

The shared contract (forward keys and shapes, gradients reaching every parameter, learning on a
tiny batch) is checked for every detector by tests/test_detector_contract.py; this file checks
what is specific to PAD: the LBP features against direct and hand computations and their cache,
the pixel-wise targets and losses (including a FairSWAP partial map), the frequency decomposition,
the parameter counts at 224x224 against the authors' layer layouts, and the real bona fide / print
/ replay photos run through the face pipeline and every PAD detector.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import cv2
import numpy as np
import pytest
import torch
import torchvision
from scipy.fft import dct as scipy_dct
from skimage.feature import local_binary_pattern
from torch import nn

from fairforensics.detectors import build_detector
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.deeppixbis import densenet_map_side, pixel_target
from fairforensics.detectors.lbp_mlp import (
    FEATURE_DIM,
    LBPFeatureCache,
    lbp_features,
    lbp_histogram,
)
from fairforensics.detectors.lmfd_pad import (
    FrequencyDecomposition,
    band_mask,
    dct_matrix,
    fad_bands,
    focal_loss,
)
from tests.testdata import SILENT_FACE

PAD_DIR = SILENT_FACE
PAD_PHOTOS = [
    ("image_T1.jpg", 0, "bona_fide"),
    ("image_F1.jpg", 1, "print"),
    ("image_F2.jpg", 1, "replay"),
]
PAD_NAMES = ["lbp_mlp", "pad_resnet50", "deeppixbis", "lmfd_pad"]
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def normalise(crops: list[np.ndarray], mean, std) -> torch.Tensor:
    """uint8 HxWx3 RGB crops -> [B, 3, H, W] normalised as the data pipeline does."""
    x = torch.from_numpy(np.stack(crops)).permute(0, 3, 1, 2).float() / 255.0
    return (x - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)


def param_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


@pytest.fixture(scope="module")
def pad_crops() -> list[np.ndarray]:
    """The three Silent-Face photos, detected, landmarked and aligned to 224x224 by preprocessing."""
    from fairforensics.preprocessing.align import align_face
    from fairforensics.preprocessing.faces import FaceAnalyzer

    analyzer = FaceAnalyzer()
    crops = []
    for name, _, _ in PAD_PHOTOS:
        bgr = cv2.imread(str(PAD_DIR / name))  # cv2 applies the EXIF rotation of image_F2
        assert bgr is not None, f"cannot read {PAD_DIR / name}"
        faces = analyzer.analyze(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
        assert faces, f"no face found in {name}"
        _, landmarks = faces[0]
        crop, _, _ = align_face(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), landmarks, size=224)
        crops.append(crop)
    return crops


@pytest.fixture(scope="module")
def real_size() -> dict[str, nn.Module]:
    """Every PAD detector at its real input size (224), random init, eval mode."""
    torch.manual_seed(0)
    return {name: build_detector(name, pretrained=False).eval() for name in PAD_NAMES}


# ------------------------------------------------------------------ LBP-MLP


def test_lbp_checkerboard_hand_computed() -> None:
    """A grey 0/255 checkerboard: 255-centres see only smaller neighbours (code 0; the diagonal
    neighbours interpolate to 0.586 * 255), 0-centres only >= ones (code P = 8); H and S are
    constant (code 8 everywhere)."""
    board = (np.indices((8, 8)).sum(0) % 2 * 255).astype(np.uint8)
    feat = lbp_features(np.repeat(board[:, :, None], 3, axis=2))
    half = np.zeros(10, np.float32)
    half[[0, 8]] = 0.5
    one = np.zeros(10, np.float32)
    one[8] = 1.0
    expected = np.concatenate([half, half, half, one, one, half])  # R G B H S V
    assert feat.shape == (FEATURE_DIM,) == (60,)
    np.testing.assert_allclose(feat, expected)


def test_lbp_features_match_direct_computation(pad_crops) -> None:
    rgb = pad_crops[0]
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL)
    direct = []
    for img in (rgb, hsv):
        for c in range(3):
            codes = local_binary_pattern(img[:, :, c], 8, 1, method="uniform")[1:-1, 1:-1]
            hist, _ = np.histogram(codes, bins=10, range=(0, 10))
            direct.append(hist / codes.size)
    np.testing.assert_allclose(lbp_features(rgb), np.concatenate(direct), rtol=1e-6)
    assert not np.allclose(lbp_features(pad_crops[0]), lbp_features(pad_crops[1]))


def test_lbp_uses_the_denormalised_image(pad_crops) -> None:
    model = build_detector("lbp_mlp", mean=IMAGENET[0], std=IMAGENET[1], cache_size=0)
    feats = model.lbp({"image": normalise(pad_crops, *IMAGENET)})
    np.testing.assert_allclose(
        feats.numpy(), np.stack([lbp_features(c) for c in pad_crops]), atol=1e-6
    )


def test_lbp_cache_reuses_only_identical_pixels(pad_crops) -> None:
    model = build_detector("lbp_mlp", input_size=224)
    image = normalise(pad_crops, model.cfg.mean, model.cfg.std)
    batch = {
        "image": image,
        "dataset": ["pad"] * 3,
        "video_id": ["a", "b", "c"],
        "frame": torch.tensor([0, 0, 5]),
    }
    first = model.lbp(batch)
    assert (model.cache.hits, model.cache.misses, len(model.cache)) == (0, 3, 3)
    torch.testing.assert_close(model.lbp(batch), first)
    assert model.cache.hits == 3
    # Augmentation / FairSWAP changed the pixels of frame "b": recomputed, not the stale vector.
    changed = dict(batch, image=image.flip(-1))
    flipped = model.lbp(changed)
    assert model.cache.misses == 6
    np.testing.assert_allclose(
        flipped[1].numpy(), lbp_features(np.ascontiguousarray(pad_crops[1][:, ::-1])), atol=1e-6
    )
    assert len(model.cache) == 3  # entries replaced, keyed on (dataset, video_id, frame)
    # Without ids the content is the key.
    model.lbp({"image": image})
    model.lbp({"image": image})
    assert model.cache.hits == 6 and model.cache.misses == 9 and len(model.cache) == 6


def test_lbp_cache_is_bounded_and_can_be_disabled() -> None:
    cache = LBPFeatureCache(max_items=2)
    imgs = [np.full((8, 8, 3), v, np.uint8) for v in (10, 20, 30)]
    for i, img in enumerate(imgs):
        cache.features(img, key=i)
    assert len(cache) == 2 and 0 not in cache._items
    cache.clear()
    assert len(cache) == 0 and cache.hits == cache.misses == 0
    off = LBPFeatureCache(max_items=0)
    off.features(imgs[0], key=0)
    off.features(imgs[0], key=0)
    assert len(off) == 0 and off.hits == 0 and off.misses == 2


def test_lbp_bad_inputs() -> None:
    with pytest.raises(ValueError, match="uint8 HxWx3"):
        lbp_features(np.zeros((8, 8, 3), np.float32))
    with pytest.raises(ValueError, match="uint8 HxWx3"):
        lbp_features(np.zeros((8, 8), np.uint8))
    with pytest.raises(ValueError, match="larger than 2 pixels"):
        lbp_histogram(np.zeros((2, 5), np.uint8))
    with pytest.raises(ValueError, match="model.hidden"):
        build_detector("lbp_mlp", hidden=0)
    with pytest.raises(ValueError, match="model.cache_size"):
        build_detector("lbp_mlp", cache_size=-1)


def test_lbp_mlp_learns_the_real_photos_with_paper_settings(pad_crops) -> None:
    """Adam, lr 1e-1, BCE (Sec. IV-C) on the three real photos: the loss falls and the attacks
    are ranked above the bona fide; after the first epoch every feature comes from the cache."""
    torch.manual_seed(0)
    model = build_detector("lbp_mlp")
    batch = {
        "image": normalise(pad_crops, model.cfg.mean, model.cfg.std),
        "label": torch.tensor([y for _, y, _ in PAD_PHOTOS]),
        "dataset": ["silent_face"] * 3,
        "video_id": [n for n, _, _ in PAD_PHOTOS],
        "frame": [0, 0, 0],
    }
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = model.loss(batch, model(batch))["total"]
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
    assert model.cache.misses == 3 and model.cache.hits == 3 * 59
    prob = model.eval()(batch)["prob"]
    assert prob[0] < prob[1] and prob[0] < prob[2]


# ------------------------------------------------------------------ DeepPixBiS


def test_deeppixbis_encoder_is_the_official_densenet161_slice() -> None:
    """Same layers as the authors' ``densenet161().features[0:8]``: same parameters and, with the
    torchvision weights loaded, the same output."""
    model = build_detector("deeppixbis", input_size=64).eval()  # its own: the weights change
    blocks = list(torchvision.models.densenet161(weights=None).features.named_children())[:8]
    reference = nn.Sequential(OrderedDict(blocks)).eval()
    assert param_count(model.encoder) == param_count(reference) == 3_198_144
    model.encoder.load_state_dict(reference.state_dict())
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        torch.testing.assert_close(model.encoder(x), reference(x), rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def small_deeppixbis() -> nn.Module:
    torch.manual_seed(0)
    return build_detector("deeppixbis", input_size=64)


def test_deeppixbis_map_side(small_deeppixbis, real_size) -> None:
    assert {s: densenet_map_side(s) for s in (16, 64, 100, 224, 225)} == {
        16: 1,
        64: 4,
        100: 6,
        224: 14,
        225: 14,
    }
    for model, size in ((small_deeppixbis, 64), (real_size["deeppixbis"], 224)):
        with torch.no_grad():
            out = model.eval()({"image": torch.randn(1, 3, size, size)})
        side = densenet_map_side(size)
        assert out["map"].shape == (1, 1, side, side) and model.linear.in_features == side * side


def test_pixel_target_shapes_and_fairswap_patch() -> None:
    label = torch.tensor([0, 1])
    derived = pixel_target({"label": label}, (14, 14))
    assert derived.shape == (2, 1, 14, 14)
    assert derived[0].eq(0).all() and derived[1].eq(1).all()
    given = torch.rand(2, 14, 14)
    torch.testing.assert_close(
        pixel_target({"label": label, "pixel_map": given}, (14, 14)), given.unsqueeze(1)
    )
    # A 64x64 attack patch at (top 40, left 48) in a 224x224 bona fide map: 16-pixel cells.
    full = torch.zeros(2, 1, 224, 224)
    full[0, :, 40:104, 48:112] = 1.0
    target = pixel_target({"label": label, "pixel_map": full}, (14, 14))[0, 0]
    expected = torch.zeros(14, 14)
    expected[2:7, 3:7] = 1.0
    expected[2, 3:7] = expected[6, 3:7] = 0.5  # rows 32-48 and 96-112 are half covered
    torch.testing.assert_close(target, expected)


def test_pixel_target_bad_inputs() -> None:
    label = torch.tensor([0, 1])
    with pytest.raises(ValueError, match="'pixel_map' must be"):
        pixel_target({"label": label, "pixel_map": torch.zeros(3, 1, 14, 14)}, (14, 14))
    with pytest.raises(ValueError, match="'pixel_map' must be"):
        pixel_target({"label": label, "pixel_map": torch.zeros(2, 3, 14, 14)}, (14, 14))
    with pytest.raises(ValueError, match=r"values in \[0, 1\]"):
        pixel_target({"label": label, "pixel_map": torch.full((2, 1, 14, 14), 2.0)}, (14, 14))


def test_deeppixbis_loss_on_a_fairswap_partial_map(small_deeppixbis) -> None:
    """0.5 * pixel BCE + 0.5 * binary BCE on the sigmoid outputs (authors' formula, nn.BCELoss),
    with the map that FairSWAP made: an attack patch pasted into a bona fide face."""
    from fairforensics.fairness.fairswap import FairSwap

    model = small_deeppixbis.train()
    n = 4
    label = torch.tensor([0, 0, 1, 1])
    batch = {
        "image": torch.randn(n, 3, 64, 64),
        "label": label,
        "pixel_map": label.float().view(n, 1, 1, 1).expand(n, 1, 4, 4).clone(),
        "attributes": {"gender": ["female", "male", "female", "male"]},
    }
    swapped = FairSwap(p1=0.0, p2=1.0, p3=1.0, p4=1.0, patch=32, seed=0)(batch)
    maps = swapped["pixel_map"]
    partial = [i for i in range(n) if 0 < maps[i].mean() < 1]
    assert partial, "FairSWAP with p2=p3=p4=1 must make small partial attacks"
    out = model(swapped)
    losses = model.loss(swapped, out)
    bce = nn.BCELoss()
    pixel = bce(out["map"], maps)
    binary = bce(torch.sigmoid(out["binary_logit"]), label.float())
    torch.testing.assert_close(losses["pixel_bce"], pixel, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(losses["total"], 0.5 * pixel + 0.5 * binary, rtol=1e-5, atol=1e-6)
    derived = model.loss({"label": label}, out)["pixel_bce"]
    assert not torch.isclose(derived, losses["pixel_bce"]), "the supplied partial map must be used"
    losses["total"].backward()
    assert model.dec.weight.grad is not None and model.encoder.conv0.weight.grad is not None


def test_deeppixbis_scores(small_deeppixbis) -> None:
    model = small_deeppixbis.eval()
    batch = {"image": torch.randn(3, 3, 64, 64)}
    outs = {}
    try:
        for score in ("map", "binary", "combined"):
            model.cfg.score = score
            with torch.no_grad():
                outs[score] = model(batch)
    finally:
        model.cfg.score = "map"
    mean_map = outs["map"]["map"].mean(dim=(1, 2, 3))
    p_bin = torch.sigmoid(outs["map"]["binary_logit"])
    torch.testing.assert_close(outs["map"]["prob"], mean_map, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(outs["binary"]["prob"], p_bin, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(
        outs["combined"]["prob"], (mean_map + p_bin) / 2, rtol=1e-5, atol=1e-6
    )


def test_deeppixbis_bad_config_and_input(small_deeppixbis) -> None:
    with pytest.raises(ValueError, match="model.input_size is 64"):
        small_deeppixbis({"image": torch.randn(1, 3, 96, 96)})
    with pytest.raises(ValueError, match="pixel_weight"):
        build_detector("deeppixbis", pixel_weight=1.5)
    with pytest.raises(ValueError, match="needs >= 16"):
        build_detector("deeppixbis", input_size=8)
    with pytest.raises(ValueError, match="'transition2'"):
        build_detector("deeppixbis", backbone="resnet18")


# ------------------------------------------------------------------ LMFD-PAD


def test_dct_matrix_is_the_orthonormal_dct_ii() -> None:
    n = 16
    d = dct_matrix(n)
    k, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    formula = np.where(k == 0, np.sqrt(1 / n), np.sqrt(2 / n)) * np.cos((j + 0.5) * np.pi * k / n)
    np.testing.assert_allclose(d, formula, atol=1e-12)
    np.testing.assert_allclose(d @ d.T, np.eye(n), atol=1e-12)
    x = np.random.default_rng(0).normal(size=n)
    np.testing.assert_allclose(d @ x, scipy_dct(x, norm="ortho"), atol=1e-12)


def test_fad_band_masks() -> None:
    size = 32
    assert fad_bands(size) == [(0, 2), (2, 4), (4, 32), (0, 32)]
    low, mid, high, full = (band_mask(size, a, b) for a, b in fad_bands(size))
    assert low.sum() == 2 + 3 and mid.sum() == 4 + 5  # diagonals i + j = 1, 2 and 3, 4
    assert low[0, 0] == 0 and full[0, 0] == 0  # DC is in no base band
    np.testing.assert_array_equal(low + mid + high, full)
    assert full[1, 31] == 1 and full[2, 31] == 0  # i + j <= s


def test_frequency_decomposition() -> None:
    size = 32
    fad = FrequencyDecomposition(size)
    x = torch.randn(2, 3, size, size)
    y = fad(x)
    assert y.shape == (2, 12, size, size)
    y.square().mean().backward()
    assert fad.learnable.grad is not None and fad.learnable.grad.abs().sum() > 0
    with torch.no_grad():
        fad.learnable.zero_()  # 2 * sigmoid(0) - 1 = 0: the base band masks alone
        low, mid, high, full = fad(x).view(2, 4, 3, size, size).unbind(1)
        torch.testing.assert_close(low + mid + high, full, rtol=1e-4, atol=1e-4)
        # A constant image has only a DC coefficient, which no base band passes.
        flat = fad(torch.full((1, 3, size, size), 0.7))
        assert flat.abs().max() < 1e-4
        # The "all" band of an image without DC reconstructs everything except the corner
        # i + j > size of the spectrum.
        d = torch.from_numpy(dct_matrix(size)).float()
        freq = d @ x @ d.T
        keep = torch.from_numpy(band_mask(size, 0, size))
        torch.testing.assert_close(full, d.T @ (freq * keep) @ d, rtol=1e-4, atol=1e-4)


def test_focal_loss_hand_computed() -> None:
    logit = torch.tensor([0.0, math.log(3.0)])  # p = 0.5 and 0.75
    target = torch.tensor([1.0, 1.0])
    # alpha 0.5, gamma 2: 0.5 * (1 - p)^2 * -log p
    expected = (0.5 * 0.25 * math.log(2) + 0.5 * 0.0625 * -math.log(0.75)) / 2
    assert focal_loss(logit, target, 0.5, 2.0).item() == pytest.approx(expected, rel=1e-6)
    # gamma 0 and alpha 0.5 is half the binary cross-entropy
    bce = nn.functional.binary_cross_entropy_with_logits(logit, target)
    assert focal_loss(logit, target, 0.5, 0.0).item() == pytest.approx(0.5 * bce.item(), rel=1e-6)


@pytest.fixture(scope="module")
def small_lmfd() -> nn.Module:
    torch.manual_seed(0)
    return build_detector("lmfd_pad", input_size=64)


def test_lmfd_loss_terms_and_epoch_schedule(small_lmfd) -> None:
    model = small_lmfd.train()
    label = torch.tensor([0, 1])
    pixel_map = torch.zeros(2, 1, 14, 14)
    pixel_map[1] = 1.0
    pixel_map[0, :, :7, :7] = 1.0  # a partial attack in a bona fide face
    batch = {"image": torch.randn(2, 3, 64, 64), "label": label, "pixel_map": pixel_map}
    out = model(batch)
    assert out["map"].shape == (2, 1, 4, 4)
    target = nn.functional.adaptive_avg_pool2d(pixel_map, 4)
    pixel = nn.functional.smooth_l1_loss(out["map"], target)
    binary = focal_loss(out["binary_logit"], label.float(), 0.5, 2.0)
    model.set_epoch(0)
    first = model.loss(batch, out)
    torch.testing.assert_close(first["pixel"], pixel)
    torch.testing.assert_close(first["total"], binary + pixel)
    model.set_epoch(4)
    torch.testing.assert_close(model.loss(batch, out)["total"], binary + 100 * pixel)
    model.cfg.binary_loss, model.cfg.pixel_loss = "bce", "mse"
    try:
        alt = model.loss(batch, out)
    finally:
        model.cfg.binary_loss, model.cfg.pixel_loss = "focal", "smooth_l1"
    torch.testing.assert_close(
        alt["binary"],
        nn.functional.binary_cross_entropy_with_logits(out["binary_logit"], label.float()),
    )
    torch.testing.assert_close(alt["pixel"], nn.functional.mse_loss(out["map"], target))


def test_lmfd_bad_input(small_lmfd) -> None:
    with pytest.raises(ValueError, match="model.input_size is 64"):
        small_lmfd({"image": torch.randn(2, 3, 96, 96)})
    with pytest.raises(ValueError, match="input_size must be >= 32"):
        build_detector("lmfd_pad", input_size=16)


# ------------------------------------------------------------------ ResNet-50 and weights


def test_pad_resnet50_loads_a_local_weights_file(tmp_path) -> None:
    import timm

    source = timm.create_model("resnet50", pretrained=False)
    path = tmp_path / "resnet50.pth"
    torch.save(source.state_dict(), path)
    model = build_detector("pad_resnet50", pretrained=str(path))
    torch.testing.assert_close(model.backbone.conv1.weight, source.conv1.weight)
    with pytest.raises(PretrainedWeightsError, match="pretrained: false"):
        build_detector("pad_resnet50", pretrained=str(tmp_path / "missing.pth"))


# ------------------------------------------------------------------ real size and real photos


def test_parameter_counts_at_224_match_the_authors_layouts(real_size) -> None:
    """Measured against counts derived from the original layer sizes (torchvision models)."""
    tv_resnet50 = param_count(torchvision.models.resnet50(weights=None))  # 25,557,032 with fc
    trunk = tv_resnet50 - (2048 * 1000 + 1000)
    assert param_count(real_size["lbp_mlp"]) == 60 * 64 + 64 + 64 + 1 == 3_969
    assert param_count(real_size["pad_resnet50"]) == trunk + 2048 + 1 == 23_510_081
    assert (
        param_count(real_size["deeppixbis"]) == 3_198_144 + (384 + 1) + (14 * 14 + 1) == 3_198_726
    )
    lmfd = (
        4 * 224 * 224  # learnable filters
        + trunk
        + (12 - 3) * 64 * 7 * 7  # frequency stream: 12-channel first convolution
        + trunk  # RGB stream
        + (4096 * 256 + 256 + 256 * 4096 + 4096)  # channel gate
        + 2 * 5 * 5
        + 2 * 7 * 7  # spatial gates
        + 5248 * 1024 * 9
        + 2 * 1024
        + 1024 * 9  # map head
        + 4096 * 1024
        + 2 * 1024
        + 1024  # binary head
    )
    assert param_count(real_size["lmfd_pad"]) == lmfd == 101_920_852


def test_real_pad_photos_through_preprocessing_and_every_detector(pad_crops, real_size) -> None:
    assert [c.shape for c in pad_crops] == [(224, 224, 3)] * 3
    labels = torch.tensor([y for _, y, _ in PAD_PHOTOS])
    for name, model in real_size.items():
        batch = {
            "image": normalise(pad_crops, model.cfg.mean, model.cfg.std),
            "label": labels,
            "method": [m for _, _, m in PAD_PHOTOS],
            "video_id": [n for n, _, _ in PAD_PHOTOS],
            "dataset": ["silent_face"] * 3,
        }
        with torch.no_grad():
            out = model(batch)
            losses = model.loss(batch, out)
        assert out["logits"].shape == (3, 2) and out["prob"].shape == (3,), name
        assert (
            torch.isfinite(out["prob"]).all() and ((out["prob"] >= 0) & (out["prob"] <= 1)).all()
        ), name
        assert math.isfinite(losses["total"].item()), name
        if name in ("deeppixbis", "lmfd_pad"):
            assert out["map"].shape == (3, 1, 14, 14), name


# ------------------------------------------------------------------ training settings


@pytest.mark.parametrize("name", PAD_NAMES)
def test_configs_carry_the_paper_iv_c_settings(name: str) -> None:
    """Sec. IV-C: 20 frames per video, 224x224, oversampling to ~1:1; the CNNs with flip,
    rotation and colour jitter, early stopping (patience 20, at most 100 epochs); LBP-MLP with
    Adam, lr 1e-1 and at most 1000 epochs. Validated by the trainer's own config loader."""
    from fairforensics.training.config import load_train_config

    cfg = load_train_config(name)
    t = cfg.train
    assert (t.resolution, t.frame_num, t.test_frame_num, t.sampler) == (
        224,
        20,
        20,
        "class_balanced",
    )
    assert cfg.model["input_size"] == 224
    if name == "lbp_mlp":
        assert (t.optimizer.name, t.optimizer.lr, t.epochs) == ("adam", 0.1, 1000)
        assert not t.augment.enabled
    else:
        assert (t.epochs, t.patience) == (100, 20)
        a = t.augment
        assert (
            a.enabled and a.hflip.p > 0 and a.rotate.p > 0 and a.rotate.limit > 0 and a.color.p > 0
        )
        assert a.blur.p == 0 and a.jpeg.p == 0  # not in the PAD papers' augmentation lists
    if name in ("deeppixbis", "lmfd_pad"):
        assert t.pixel_map_size == 14
