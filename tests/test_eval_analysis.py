"""Analysis tools: Grad-CAM, t-SNE of features, frequency spectra, frame sampling from an index."""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from torch import nn

from fairforensics.detectors import build_detector
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.evaluation.analysis.gradcam import (
    grad_cam,
    grad_cam_figure,
    grad_cam_images,
    last_conv,
    overlay,
)
from fairforensics.evaluation.analysis.inputs import read_frames, sample_frames, to_batch
from fairforensics.evaluation.analysis.spectrum import (
    average_spectrum,
    highpass,
    image_spectrum,
    spectra_figure,
)
from fairforensics.evaluation.analysis.tsne import extract_features, tsne_embed, tsne_figure
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index
from tests.testdata import CELEBRITIES

FACES = CELEBRITIES


def faces(n: int) -> list[np.ndarray]:
    images, _ = read_frames(sorted(FACES.glob("img*.jpg"))[:n])
    return images


class Tiny(Detector):
    """Two convolutions (ReLU in place), global average pooling, linear head."""

    def __init__(self, cfg: DetectorConfig) -> None:
        super().__init__(cfg)
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(4, 6, 3, padding=1),
            nn.ReLU(inplace=True),
        )
        self.head = nn.Linear(6, 2)

    def forward(self, batch):
        feat = self.features(batch["image"]).mean((2, 3))
        return self.outputs(self.head(feat), feat)


def test_grad_cam_matches_reference_computation() -> None:
    torch.manual_seed(0)
    model = Tiny(DetectorConfig(input_size=16))
    x = torch.randn(3, 3, 16, 16)
    assert last_conv(model) == "features.2"
    cam = grad_cam(model, x)
    # reference: activations A of the last conv (before its ReLU), gradient of the fake logit
    a = model.features[:3](x).detach().requires_grad_(True)
    y = model.head(torch.relu(a).mean((2, 3)))[:, 1]
    (g,) = torch.autograd.grad(y.sum(), a)
    ref = torch.relu((g.mean((2, 3), keepdim=True) * a).sum(1)).detach().numpy()
    for c, r in zip(cam, ref, strict=True):  # same size: no upsampling needed
        if r.max() > r.min():
            np.testing.assert_allclose(c, (r - r.min()) / (r.max() - r.min()), atol=1e-5)
    assert cam.shape == (3, 16, 16) and cam.min() >= 0 and cam.max() <= 1
    assert not model.features[2]._forward_hooks  # hook removed
    other = grad_cam(model, x, target_layer="features.0", target_class=0)
    assert other.shape == (3, 16, 16)


def test_grad_cam_on_meso4_with_real_faces(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build_detector("meso4", input_size=64)
    model.train()
    images = faces(2)
    maps, overlays = grad_cam_images(model, images)
    assert model.training  # mode restored
    assert [m.shape for m in maps] == [(64, 64)] * 2
    assert all(
        o.shape == i.shape and o.dtype == np.uint8 for o, i in zip(overlays, images, strict=True)
    )
    assert all(np.isfinite(m).all() and m.max() <= 1 for m in maps)
    paths = grad_cam_figure(images, overlays, tmp_path / "cam", titles=["a", "b"])
    assert paths[0].is_file() and paths[1].suffix == ".pdf"


def test_grad_cam_bad_inputs() -> None:
    model = Tiny(DetectorConfig(input_size=8))
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(KeyError, match="nope"):
        grad_cam(model, x, target_layer="nope")
    with pytest.raises(ValueError, match="must output"):
        grad_cam(model, x, target_layer="head")
    with pytest.raises(ValueError, match="no Conv2d"):
        last_conv(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="uint8"):
        overlay(np.zeros((4, 4, 3), np.float32), np.zeros((4, 4)))


def test_tsne_separates_clusters_and_draws(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    feats = np.r_[rng.normal(0, 1, (30, 10)), rng.normal(6, 1, (30, 10))]
    labels = np.r_[np.zeros(30, int), np.ones(30, int)]
    emb = tsne_embed(feats, seed=0, threads=1)
    assert emb.shape == (60, 2)
    d = ((emb[:, None] - emb[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    nearest = np.argsort(d, axis=1)[:, :5]
    assert (labels[nearest] == labels[:, None]).mean() > 0.95
    methods = np.where(labels == 0, "real", np.where(np.arange(60) % 2, "DF", "F2F"))
    assert tsne_figure(emb, labels, methods, tmp_path / "tsne")[0].is_file()
    with pytest.raises(ValueError):
        tsne_embed(feats[:2])
    with pytest.raises(ValueError):
        tsne_figure(emb, labels[:5], methods, tmp_path / "t2")


def test_extract_features_meso4_real_faces() -> None:
    torch.manual_seed(0)
    model = build_detector("meso4", input_size=64)  # DeepfakeBench's: feat = flat 16 x 2 x 2 map
    feats = extract_features(model, faces(5), batch_size=2)
    assert feats.shape == (5, 64) and np.isfinite(feats).all()
    with pytest.raises(ValueError):
        extract_features(model, [])
    with pytest.raises(ValueError, match="uint8"):
        to_batch([np.zeros((8, 8), np.uint8)], model.cfg)


def test_spectrum_peak_and_highpass(tmp_path: Path) -> None:
    x = np.arange(64)
    stripes = (128 + 100 * np.cos(2 * np.pi * 16 * x / 64)).astype(np.uint8)  # period 4: median 0
    img = np.repeat(np.tile(stripes, (64, 1))[..., None], 3, axis=2)
    spec = image_spectrum(img, size=64)
    spec[32, 32] = 0
    assert np.unravel_index(spec.argmax(), spec.shape) in {(32, 32 + 16), (32, 32 - 16)}
    flat = np.full((64, 64, 3), 90, np.uint8)
    assert np.allclose(image_spectrum(flat, 64), 0)
    assert np.allclose(highpass(np.full((5, 5), 3.0)), 0)
    real = average_spectrum(faces(3), size=64)
    fake = average_spectrum([img, flat], size=64)
    assert (
        real.shape == (64, 64)
        and np.allclose(fake, spec_avg := (image_spectrum(img, 64) + 0) / 2)
        and spec_avg.any()
    )
    assert spectra_figure(real, fake, tmp_path / "spec")[0].is_file()
    with pytest.raises(ValueError):
        average_spectrum([], 64)
    with pytest.raises(ValueError):
        spectra_figure(real, fake[:10], tmp_path / "s2")
    with pytest.raises(ValueError, match="uint8"):
        image_spectrum(np.zeros((4, 4)), 4)


def test_sample_frames_from_index(tmp_path: Path, caplog) -> None:
    imgs = faces(6)
    videos = []
    for v in range(6):
        rel = [f"v{v}/{f}.png" for f in range(2)]
        for r in rel:
            (tmp_path / r).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(
                str(tmp_path / r), cv2.cvtColor(cv2.resize(imgs[v], (32, 32)), cv2.COLOR_RGB2BGR)
            )
        videos.append(VideoEntry(f"{v:03d}", v % 2, "DF" if v % 2 else "real", "test", rel))
    index = DatasetIndex("tiny", "deepfake", videos, root=tmp_path)
    write_index(index, tmp_path / "tiny.json")
    frames = sample_frames(tmp_path / "tiny.json", n_per_class=4, seed=1)
    assert [f.label for f in frames] == [0] * 4 + [1] * 4
    assert frames == sample_frames(tmp_path / "tiny.json", n_per_class=4, seed=1)
    images, kept = read_frames(frames)
    assert len(images) == 8 and images[0].shape == (32, 32, 3)
    (tmp_path / "v1" / "0.png").write_bytes(b"broken")
    with caplog.at_level(logging.WARNING):
        frames = sample_frames(index, n_per_class=10)
        images, kept = read_frames(frames)
    assert "only 6 frames" in caplog.text and "unreadable" in caplog.text
    assert len(images) == 11 and len(kept) == 11
    with pytest.raises(ValueError, match="no videos"):
        sample_frames(index, 2, split="val")
