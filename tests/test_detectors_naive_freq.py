"""Naive and frequency detectors (issue 4): transforms, architectures, parameter counts, configs.

The shared contract (forward keys, gradient reach, loss falls) is tests/test_detector_contract.py;
this file checks what is specific to Meso, MesoInception, CNN-Aug, EfficientNet-B4, Xception,
ResNet-DSC, SPSL, F3Net, SRM and to detectors/frequency.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import scipy.fft
import timm
import torch
from skimage.filters import sobel

from fairforensics.detectors import build_detector
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.backbones.xception import (
    create_xception,
    entry_side,
    run_stage,
    widen_first_conv,
)
from fairforensics.detectors.f3net import FAD, LFS, F3NetConfig, MixBlock
from fairforensics.detectors.frequency import band_mask, dct2d, dct_matrix, idct2d, phase_spectrum
from fairforensics.detectors.srm import (
    CosineLinear,
    DualCrossModalAttention,
    SRMFilter,
    am_softmax_loss,
    srm_kernels,
)
from tests.testdata import FACE_RECOGNITION, JOHNS

FACE = FACE_RECOGNITION / "obama.jpg"

MINE = [
    "meso4",
    "meso_inception4",
    "cnn_aug",
    "efficientnet_b4",
    "xception",
    "resnet_dsc",
    "spsl",
    "f3net",
    "srm",
]

# Trainable parameters at the real input size (256x256, 2-way head), measured by
# test_parameter_counts_at_real_size. The paper figures are checked in the next test.
PARAMS = {
    "meso4": 27_898,  # DeepfakeBench's Meso4 (shared BNs, no conv bias, 2-way output)
    "meso_inception4": 28_525,  # DeepfakeBench's MesoInception4
    "xception": 20_811_050,
    "efficientnet_b4": 17_552_202,
    "cnn_aug": 21_285_698,
    "resnet_dsc": 21_276_629,
    "spsl": 20_811_338,
    "f3net": 21_075_786,  # DeepfakeBench's FAD-only F3Net (paper variant, two streams: 48,223,566)
    "srm": 53_238_380,  # DeepfakeBench's linear head (paper variant, cosine head: 53,238,378)
}


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _face(size: int = 128) -> np.ndarray:
    """The real Obama photo, RGB float in [0, 1], resized to ``size``."""
    bgr = cv2.imread(str(FACE))
    assert bgr is not None, f"cannot read {FACE}"
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    return cv2.resize(rgb, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0


# --- frequency transforms --------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 8, 10, 64])
def test_dct_matrix_is_orthonormal_and_matches_scipy(n: int) -> None:
    d = dct_matrix(n).double()
    torch.testing.assert_close(d @ d.T, torch.eye(n, dtype=torch.float64), atol=1e-6, rtol=0)
    ref = scipy.fft.dct(np.eye(n), norm="ortho", axis=0)
    np.testing.assert_allclose(d.numpy(), ref, atol=1e-6)


def test_dct2d_matches_scipy_and_inverts() -> None:
    x = torch.rand(2, 3, 16, 16)
    d = dct_matrix(16)
    coeffs = dct2d(x, d)
    ref = scipy.fft.dctn(x.numpy(), axes=(-2, -1), norm="ortho")
    np.testing.assert_allclose(coeffs.numpy(), ref, atol=1e-5)
    torch.testing.assert_close(idct2d(coeffs, d), x, atol=1e-5, rtol=0)
    const = dct2d(torch.full((1, 8, 8), 2.0), dct_matrix(8))  # DC = 2 * 8, nothing else
    assert const[0, 0, 0].item() == pytest.approx(16.0, abs=1e-5)
    assert const.flatten()[1:].abs().max().item() < 1e-5


def test_dct_matrix_rejects_bad_size() -> None:
    with pytest.raises(ValueError, match="DCT size"):
        dct_matrix(0)


def test_band_masks_partition_the_spectrum_with_f3net_areas() -> None:
    size = 256
    low, mid = size / math.sqrt(8), size / 2
    bands = [band_mask(size, 0, low), band_mask(size, low, mid), band_mask(size, mid, 2 * size)]
    torch.testing.assert_close(sum(bands), torch.ones(size, size))
    assert bands[0][0, 0] == 1 and bands[2][-1, -1] == 1
    area = [b.mean().item() for b in bands]
    assert area[0] == pytest.approx(1 / 16, rel=0.03)  # F3Net Sec. 3.1: first 1/16
    assert area[0] + area[1] == pytest.approx(1 / 8, rel=0.03)  # then up to 1/8


def test_phase_spectrum_of_an_impulse_is_the_impulse() -> None:
    x = torch.zeros(1, 1, 16, 16)
    x[0, 0, 5, 9] = 3.0  # flat amplitude spectrum: phase-only reconstruction gives the unit impulse
    expected = torch.zeros_like(x)
    expected[0, 0, 5, 9] = 1.0
    torch.testing.assert_close(phase_spectrum(x), expected, atol=1e-5, rtol=0)


def test_phase_spectrum_shapes_and_amplitude_invariance() -> None:
    x = torch.rand(2, 3, 32, 32)
    assert phase_spectrum(x).shape == (2, 1, 32, 32)
    assert phase_spectrum(x, gray=False).shape == (2, 3, 32, 32)
    torch.testing.assert_close(phase_spectrum(5.0 * x), phase_spectrum(x), atol=1e-5, rtol=0)
    # transforms each image on its own: the batch axis is not part of the DFT
    torch.testing.assert_close(phase_spectrum(x)[1:], phase_spectrum(x[1:]), atol=1e-6, rtol=0)


def test_phase_only_reconstruction_keeps_the_edges_of_a_real_face() -> None:
    rgb = _face(128)
    recon = phase_spectrum(torch.from_numpy(rgb).permute(2, 0, 1)[None])[0, 0].abs().numpy()
    gray = rgb.mean(axis=2)
    edges = sobel(gray)
    corr_edges = np.corrcoef(recon.ravel(), edges.ravel())[0, 1]
    corr_gray = np.corrcoef(recon.ravel(), gray.ravel())[0, 1]
    assert corr_edges > 0.3 and corr_edges > corr_gray + 0.15
    strongest = recon > np.quantile(recon, 0.9)
    assert edges[strongest].mean() > 2.0 * edges.mean()


def test_phase_only_reconstruction_of_a_square_lights_its_outline() -> None:
    x = torch.zeros(1, 1, 64, 64)
    x[..., 16:48, 16:48] = 1.0
    r = phase_spectrum(x)[0, 0].abs()
    outline = torch.zeros(64, 64, dtype=torch.bool)
    outline[15:49, 15:49] = True
    outline[18:46, 18:46] = False
    assert r[outline].mean() > 5 * r[~outline].mean()


def test_phase_spectrum_bad_input() -> None:
    with pytest.raises(ValueError, match="C, H, W"):
        phase_spectrum(torch.rand(8, 8))
    with pytest.raises(TypeError, match="float"):
        phase_spectrum(torch.zeros(1, 3, 8, 8, dtype=torch.uint8))


# --- Xception helpers ---------------------------------------------------------------------------


def test_widen_first_conv_modes() -> None:
    torch.manual_seed(0)
    model = create_xception(False)
    rgb = model.conv1.weight.detach().clone()
    x = torch.rand(1, 3, 17, 17)
    ref = torch.nn.functional.conv2d(x, rgb, stride=2)
    widen_first_conv(model, 12, mode="split")
    torch.testing.assert_close(model.conv1(x.repeat(1, 4, 1, 1)), ref, atol=1e-5, rtol=1e-5)
    model = create_xception(False)
    rgb = model.conv1.weight.detach().clone()
    widen_first_conv(model, 4, stride=1, mode="mean")
    assert model.conv1.stride == (1, 1) and model.conv1.weight.shape == (32, 4, 3, 3)
    for c in range(4):
        torch.testing.assert_close(model.conv1.weight[:, c], rgb.mean(dim=1))
    with pytest.raises(ValueError, match="multiple of 3"):
        widen_first_conv(create_xception(False), 4, mode="split")
    with pytest.raises(ValueError, match="unknown widen mode"):
        widen_first_conv(create_xception(False), 4, mode="zeros")


def test_xception_stages_compose_to_forward_features() -> None:
    model = create_xception(False).eval()
    x = torch.rand(1, 3, 64, 64)
    y = x
    for stage in ("stem1", "stem2", "entry", "middle1", "middle2", "exit1", "exit2"):
        y = run_stage(model, stage, y)
    with torch.no_grad():
        torch.testing.assert_close(y, model.forward_features(x))


@pytest.mark.parametrize("size", [32, 33, 64, 100, 256, 299])
def test_entry_side_matches_xception(size: int) -> None:
    model = create_xception(False).eval()
    x = torch.rand(1, 3, size, size)
    with torch.no_grad():
        for stage in ("stem1", "stem2", "entry"):
            x = run_stage(model, stage, x)
    assert x.shape[-1] == entry_side(size)


# --- parameter counts -------------------------------------------------------------------------


@pytest.mark.parametrize("name", MINE)
def test_parameter_counts_at_real_size(name: str) -> None:
    model = build_detector(name)  # configs/detectors/<name>.yaml: 256x256, pretrained false
    assert model.cfg.input_size == 256
    assert _count(model) == PARAMS[name]


@pytest.mark.parametrize(("name", "count"), [("meso4", 27_977), ("meso_inception4", 28_615)])
def test_paper_mesonets_have_the_keras_counts(name: str, count: int) -> None:
    """Afchar et al. 2018: 27,977 and 28,615 trainable parameters (the ``paper`` variant)."""
    assert _count(build_detector(name, variant="paper")) == count


@pytest.mark.parametrize(
    ("arch", "paper"),
    [("legacy_xception", 22.9e6), ("resnet34", 21.8e6), ("efficientnet_b4", 19e6)],
)
def test_backbones_match_paper_table_8(arch: str, paper: float) -> None:
    """Paper 002 Table 8 counts the ImageNet models (1000-way head)."""
    full = _count(timm.create_model(arch, pretrained=False))
    assert abs(full - paper) / paper < 0.02
    head = {
        "legacy_xception": "xception",
        "resnet34": "cnn_aug",
        "efficientnet_b4": "efficientnet_b4",
    }[arch]
    features = {"legacy_xception": 2048, "resnet34": 512, "efficientnet_b4": 1792}[arch]
    assert PARAMS[head] == full - 998 * (features + 1)  # 1000-way head swapped for a 2-way one


# --- per-detector specifics ------------------------------------------------------------------


def test_meso_inception_layers_match_keras() -> None:
    model = build_detector("meso_inception4", input_size=64, variant="paper")
    inc1, inc2 = model.features[0][0], model.features[1][0]
    assert (inc1.out_channels, inc2.out_channels) == (11, 12)
    dilations = [branch[-1][0].dilation for branch in inc1.branches[1:]]
    assert dilations == [(1, 1), (2, 2), (3, 3)]
    x = torch.rand(2, 3, 64, 64)
    assert inc1(x).shape == (2, 11, 64, 64)  # 'same' padding keeps the size
    out = model({"image": x})
    assert out["feat"].shape == (2, 16)
    torch.testing.assert_close(
        out["logits"][:, 0], torch.zeros(2)
    )  # single sigmoid output as [0, z]


def test_resnet_dsc_stem_is_depthwise_separable() -> None:
    model = build_detector("resnet_dsc", input_size=64)
    depthwise, pointwise = model.backbone.conv1
    assert depthwise.groups == 3 and depthwise.kernel_size == (7, 7) and depthwise.stride == (2, 2)
    assert pointwise.kernel_size == (1, 1) and pointwise.out_channels == 64
    plain = build_detector("cnn_aug", input_size=64)
    assert _count(plain) - _count(model) == 64 * 3 * 49 - (3 * 49 + 3 * 64)
    assert model({"image": torch.rand(2, 3, 64, 64)})["feat"].shape == (2, 512)


def test_spsl_feeds_rgb_plus_phase() -> None:
    model = build_detector("spsl", input_size=64)
    assert model.backbone.conv1.weight.shape == (32, 4, 3, 3)
    shallow = build_detector("spsl", input_size=64, shallow=True)
    assert isinstance(shallow.backbone.block4, torch.nn.Identity)
    assert _count(shallow) < _count(model) / 2
    seen: dict[str, torch.Tensor] = {}

    def grab(
        module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor
    ) -> None:
        seen["x"] = inputs[0]

    shallow.backbone.conv1.register_forward_hook(grab)
    image = torch.rand(2, 3, 64, 64)
    shallow.eval()({"image": image})
    torch.testing.assert_close(seen["x"][:, :3], image)
    torch.testing.assert_close(seen["x"][:, 3:], phase_spectrum(image))


def test_fad_bands_sum_to_the_image_when_learnable_parts_are_zero() -> None:
    fad = FAD(32)
    for f in fad.filters:
        torch.nn.init.zeros_(f.learnable)  # 2 sigmoid(0) - 1 = 0: the base bands only
    x = torch.rand(2, 3, 32, 32)
    out = fad(x)
    assert out.shape == (2, 12, 32, 32)
    low, mid, high, full = out.split(3, dim=1)
    torch.testing.assert_close(full, x, atol=1e-5, rtol=0)
    torch.testing.assert_close(low + mid + high, x, atol=1e-5, rtol=0)
    assert low.std() < x.std()  # a smooth part


def test_lfs_log_energies_on_a_constant_image() -> None:
    lfs = LFS(window=10, bands=6)
    for f in lfs.filters:
        torch.nn.init.zeros_(f.learnable)
    out = lfs(torch.full((1, 1, 64, 64), 100.0))
    assert out.shape == (1, 6, 32, 32)
    # interior windows: only the DC coefficient (100 * 10) is non-zero; it lies in band 0
    assert out[0, 0, 10, 10].item() == pytest.approx(3.0, abs=1e-4)
    assert out[0, 1:, 10, 10].max().item() < -3  # float32 round-off only: 6+ decades below
    assert lfs(torch.rand(2, 1, 256, 256) * 255).shape == (2, 6, 128, 128)


def test_mixblock_streams_independent_at_init_and_mixed_after() -> None:
    torch.manual_seed(0)
    mix = MixBlock(8).eval()
    a, b, b2 = torch.rand(2, 8, 4, 4), torch.rand(2, 8, 4, 4), torch.rand(2, 8, 4, 4)
    torch.testing.assert_close(mix(a, b)[0], mix(a, b2)[0])  # zero gains: no cross term yet
    with torch.no_grad():
        mix.fad_gamma.fill_(2.0)
        mix.lfs_gamma.fill_(2.0)
    assert not torch.allclose(mix(a, b)[0], mix(a, b2)[0])
    assert mix(a, b)[1].shape == b.shape
    with pytest.raises(ValueError, match="square"):
        mix(torch.rand(1, 8, 4, 5), torch.rand(1, 8, 4, 5))


def test_f3net_modes_and_input_size_check() -> None:
    model = build_detector("f3net", input_size=32, variant="paper")
    assert model.fad_xception.conv1.weight.shape == (32, 12, 3, 3)
    assert model.lfs_xception.conv1.weight.shape == (32, 6, 3, 3)
    assert model.lfs_xception.conv1.stride == (1, 1)
    fad_only = build_detector("f3net", input_size=32, mode="fad", variant="paper")
    assert not hasattr(fad_only, "lfs") and fad_only.head.in_features == 2048
    assert fad_only({"image": torch.rand(2, 3, 32, 32)})["feat"].shape == (2, 2048)
    with pytest.raises(ValueError, match="32x32"):
        model({"image": torch.rand(1, 3, 64, 64)})
    for size in (256, 299, 64):  # the two streams meet at every usual size
        assert F3NetConfig(input_size=size, variant="paper").input_size == size
    with pytest.raises(ValueError, match="MixBlock"):
        F3NetConfig(input_size=24, variant="paper")  # 2x2 FAD maps vs 1x1 LFS maps
    dfb = F3NetConfig()  # DeepfakeBench's: FAD-only, dropout 0.5
    assert (dfb.mode, dfb.dropout) == ("fad", 0.5)
    with pytest.raises(ValueError, match="mode 'mix' needs variant 'paper'"):
        F3NetConfig(mode="mix")


def test_srm_filters_are_high_pass_and_truncated() -> None:
    k = srm_kernels()
    assert k.shape == (3, 5, 5)
    torch.testing.assert_close(k.sum(dim=(1, 2)), torch.zeros(3))
    srm = SRMFilter(3)
    assert srm(torch.full((1, 3, 16, 16), 0.7))[..., 2:-2, 2:-2].abs().max() < 1e-6
    noisy = srm(torch.randn(1, 3, 16, 16) * 10)
    assert noisy.abs().max() <= 3.0 and noisy.abs().max() == 3.0


def test_am_softmax_loss_hand_computed() -> None:
    cos = torch.tensor([[0.5, -0.2]], dtype=torch.float64)
    label = torch.tensor([0])
    z0, z1 = 30 * (0.5 - 0.45), 30 * -0.2
    expected = -z0 + math.log(math.exp(z0) + math.exp(z1))
    assert am_softmax_loss(cos, label, 0.45, 30.0).item() == pytest.approx(expected, rel=1e-5)
    head = CosineLinear(8)
    out = head(torch.randn(5, 8))
    assert out.shape == (5, 2) and out.abs().max() <= 1.0 + 1e-6


def test_dual_cross_modal_attention_identity_at_init_and_size_check() -> None:
    dcma = DualCrossModalAttention(16, size=4, ratio=8)
    x, y = torch.rand(2, 16, 4, 4), torch.rand(2, 16, 4, 4)
    ox, oy = dcma(x, y)
    torch.testing.assert_close(ox, x)
    torch.testing.assert_close(oy, y)
    with pytest.raises(ValueError, match="4x4"):
        dcma(torch.rand(1, 16, 5, 5), torch.rand(1, 16, 5, 5))


def test_srm_losses() -> None:
    model = build_detector("srm", input_size=32, variant="paper").eval()
    batch = {"image": torch.rand(2, 3, 32, 32), "label": torch.tensor([0, 1])}
    with torch.no_grad():
        out = model(batch)
        losses = model.loss(batch, out)
    assert set(losses) == {"total", "am_softmax"}
    torch.testing.assert_close(out["logits"], 30.0 * out["cos"])
    dfb = build_detector("srm", input_size=32).eval()  # DeepfakeBench: margin on raw outputs
    assert isinstance(dfb.head, torch.nn.Linear)
    with torch.no_grad():
        out = dfb(batch)
    expected = am_softmax_loss(out["logits"], batch["label"], 0.45, 30.0)
    torch.testing.assert_close(dfb.loss(batch, out)["total"], expected)
    ce = build_detector("srm", input_size=32, loss="ce")
    assert isinstance(ce.head, torch.nn.Linear)
    with pytest.raises(Exception, match="loss"):
        build_detector("srm", input_size=32, loss="softmax")


# --- weights and configs ----------------------------------------------------------------------


def test_local_pretrained_weights_load_then_widen(tmp_path: Path) -> None:
    torch.manual_seed(3)
    source = create_xception(False)
    path = tmp_path / "xception.pth"
    torch.save(source.state_dict(), path)
    model = build_detector("spsl", input_size=64, pretrained=str(path))
    torch.testing.assert_close(model.backbone.conv2.weight, source.conv2.weight)
    torch.testing.assert_close(model.backbone.conv1.weight[:, 3], source.conv1.weight.mean(dim=1))


def test_missing_weights_file_explains_the_options(tmp_path: Path) -> None:
    with pytest.raises(PretrainedWeightsError, match="pretrained: false"):
        build_detector("xception", pretrained=str(tmp_path / "missing.pth"))


@pytest.mark.parametrize("name", MINE)
def test_detector_yaml_carries_paper_training_settings(name: str) -> None:
    training_config = pytest.importorskip("fairforensics.training.config")
    cfg = training_config.load_train_config(name)
    assert cfg.train.optimizer.name == "adam" and cfg.train.optimizer.lr == pytest.approx(2e-4)
    if name == "cnn_aug":
        cfg = training_config.load_train_config(name, variant="paper")
    assert (cfg.train.batch_size, cfg.train.resolution, cfg.train.frame_num) == (32, 256, 32)
    assert cfg.model["pretrained"] is False and cfg.model["input_size"] == 256
    if name == "cnn_aug":  # Wang et al.: blur and JPEG (quality 30-100), each with p 0.5
        assert cfg.train.augment.blur.p == 0.5 and cfg.train.augment.jpeg.quality == (30, 100)


def test_meso_inception_learns_real_faces_vs_resampled_fakes() -> None:
    """Real aligned faces vs their 2x down/up-sampled copies (an up-sampling artefact)."""
    files = sorted(JOHNS.glob("*/*.jpg"))[:8]
    assert len(files) == 8, "expected the dlib 'johns' face crops in tests/data"
    real = [
        cv2.resize(cv2.imread(str(f))[:, :, ::-1], (32, 32), interpolation=cv2.INTER_AREA)
        for f in files
    ]
    fake = [
        cv2.resize(cv2.resize(r, (16, 16), interpolation=cv2.INTER_AREA), (32, 32)) for r in real
    ]
    image = torch.from_numpy(np.stack(real + fake)).permute(0, 3, 1, 2).contiguous().float() / 255.0
    batch = {"image": image, "label": torch.tensor([0] * 8 + [1] * 8)}
    torch.manual_seed(0)
    model = build_detector("meso_inception4", input_size=32, dropout=0.0, variant="paper")
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(25):
        optimiser.zero_grad()
        loss = model.loss(batch, model(batch))["total"]
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_efficientnet_deepfakebench_numerics() -> None:
    """efficientnet_pytorch at 380x380: stem unpadded, static pads, eps 1e-3, drop-connect 0.2."""
    from fairforensics.detectors.efficientnet import StaticPadConv2d

    with torch.device("meta"):
        dfb = build_detector("efficientnet_b4", pretrained=False).backbone
        paper = build_detector("efficientnet_b4", pretrained=False, variant="paper").backbone
    assert dfb.conv_stem.padding == (0, 0) and paper.conv_stem.padding == (1, 1)
    pads = [b.conv_dw.static_pad for stage in dfb.blocks for b in stage[:1]]
    # stride-2 stages at 190, 95, 48, 24 (3x3, 5x5, 3x3, 5x5); stride-1 stages pad k // 2
    assert pads == [
        (1,) * 4,
        (0, 1, 0, 1),
        (2,) * 4,
        (0, 1, 0, 1),
        (2,) * 4,
        (1, 2, 1, 2),
        (1,) * 4,
    ]
    assert all(isinstance(b.conv_dw, StaticPadConv2d) for stage in dfb.blocks for b in stage)
    assert dfb.bn1.eps == 1e-3 and paper.bn1.eps == 1e-5
    assert dfb.blocks[-1][-1].drop_path.drop_prob == pytest.approx(0.2 * 31 / 32)
