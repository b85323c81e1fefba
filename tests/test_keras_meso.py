"""Keras MesoNet ``.h5`` import: a synthetic file in Keras's layout reproduces a numpy forward pass
of the Keras model (NHWC, HWIO kernels, 'same' padding, BN eps 1e-3, NHWC flatten)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.keras_meso import KerasWeightsError

h5py = pytest.importorskip("h5py", reason="the Keras import needs h5py (pip install h5py)")
SIZE = 64  # flatten 2 x 2 x 16: the NHWC order matters


def _conv(x, k, b, dil=1):
    """Keras Conv2D(padding='same', stride 1) + ReLU on NHWC ``x`` with an HWIO kernel."""
    kh, kw = k.shape[:2]
    p = dil * (kh // 2)
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    h, w = x.shape[1:3]
    out = np.zeros((*x.shape[:3], k.shape[3]))
    for i in range(kh):
        for j in range(kw):
            out += xp[:, i * dil : i * dil + h, j * dil : j * dil + w] @ k[i, j]
    return np.maximum(out + b, 0)


def _bn(x, g, be, m, v):
    return (x - m) / np.sqrt(v + 1e-3) * g + be


def _pool(x, s):
    n, h, w, c = x.shape
    return x.reshape(n, h // s, s, w // s, s, c).max(axis=(2, 4))


class _Layers:
    """Random Keras layers numbered in creation order, kept for the numpy forward pass."""

    def __init__(self, seed: int) -> None:
        self.rs = np.random.RandomState(seed)
        self.n = {"conv2d": 0, "batch_normalization": 0, "dense": 0}
        self.saved: list[tuple[str, dict[str, np.ndarray]]] = []

    def _add(self, kind, arrays):
        self.n[kind] += 1
        self.saved.append((f"{kind}_{self.n[kind] + 3}", arrays))  # numbering need not start at 1
        return arrays

    def conv(self, cin, cout, k):
        rs = self.rs
        return self._add(
            "conv2d",
            {
                "kernel": rs.randn(k, k, cin, cout) / np.sqrt(k * k * cin),
                "bias": 0.1 * rs.randn(cout),
            },
        )

    def bn(self, c):
        rs = self.rs
        return self._add(
            "batch_normalization",
            {
                "gamma": 1 + 0.1 * rs.randn(c),
                "beta": 0.1 * rs.randn(c),
                "moving_mean": 0.1 * rs.randn(c),
                "moving_variance": 0.5 + rs.rand(c),
            },
        )

    def dense(self, cin, cout):
        rs = self.rs
        return self._add(
            "dense", {"kernel": rs.randn(cin, cout) / np.sqrt(cin), "bias": 0.1 * rs.randn(cout)}
        )

    def write(self, path) -> None:
        with h5py.File(path, "w") as f:
            f.attrs["layer_names"] = [n.encode() for n, _ in self.saved]
            for name, arrays in self.saved:
                group = f.create_group(name).create_group(name)
                for key, value in arrays.items():
                    group.create_dataset(f"{key}:0", data=value.astype(np.float32))


def _head(x, layers, d1, d2):
    flat = x.reshape(x.shape[0], -1)  # Keras Flatten of NHWC
    hidden = flat @ d1["kernel"] + d1["bias"]
    hidden = np.where(hidden > 0, hidden, 0.1 * hidden)
    z = hidden @ d2["kernel"] + d2["bias"]
    return 1 / (1 + np.exp(-z[:, 0]))


def _meso4(tmp_path):
    L = _Layers(0)
    blocks = [(L.conv(3, 8, 3), L.bn(8), 2), (L.conv(8, 8, 5), L.bn(8), 2)]
    blocks += [(L.conv(8, 16, 5), L.bn(16), 2), (L.conv(16, 16, 5), L.bn(16), 4)]
    d1, d2 = L.dense(16 * (SIZE // 32) ** 2, 16), L.dense(16, 1)

    def forward(x):
        for c, b, s in blocks:
            x = _pool(_bn(_conv(x, c["kernel"], c["bias"]), *b.values()), s)
        return _head(x, L, d1, d2)

    L.write(tmp_path / "meso4.h5")
    return tmp_path / "meso4.h5", forward


def _inception(L, cin, widths):
    a, b, c, d = widths
    convs = [L.conv(cin, a, 1), L.conv(cin, b, 1), L.conv(b, b, 3)]
    convs += [L.conv(cin, c, 1), L.conv(c, c, 3), L.conv(cin, d, 1), L.conv(d, d, 3)]

    def forward(x):
        def f(i, y, dil=1):
            return _conv(y, convs[i]["kernel"], convs[i]["bias"], dil)

        return np.concatenate([f(0, x), f(2, f(1, x)), f(4, f(3, x), 2), f(6, f(5, x), 3)], axis=-1)

    return forward


def _meso_inception4(tmp_path):
    L = _Layers(1)
    inc1 = _inception(L, 3, (1, 4, 4, 2))
    bn1 = L.bn(11)
    inc2 = _inception(L, 11, (2, 4, 4, 2))
    bn2 = L.bn(12)
    blocks = [(L.conv(12, 16, 5), L.bn(16), 2), (L.conv(16, 16, 5), L.bn(16), 4)]
    d1, d2 = L.dense(16 * (SIZE // 32) ** 2, 16), L.dense(16, 1)

    def forward(x):
        x = _pool(_bn(inc1(x), *bn1.values()), 2)
        x = _pool(_bn(inc2(x), *bn2.values()), 2)
        for c, b, s in blocks:
            x = _pool(_bn(_conv(x, c["kernel"], c["bias"]), *b.values()), s)
        return _head(x, L, d1, d2)

    L.write(tmp_path / "mesoinc.h5")
    return tmp_path / "mesoinc.h5", forward


@pytest.mark.parametrize(
    ("name", "make"), [("meso4", _meso4), ("meso_inception4", _meso_inception4)]
)
def test_keras_h5_reproduces_the_keras_forward_pass(tmp_path, name, make) -> None:
    path, forward = make(tmp_path)
    model = build_detector(
        name, variant="paper", pretrained=str(path), input_size=SIZE, mean=(0, 0, 0), std=(1, 1, 1)
    ).eval()
    x = np.random.RandomState(5).rand(2, SIZE, SIZE, 3)  # NHWC in [0, 1]
    expected = forward(x)
    with torch.no_grad():
        prob = model({"image": torch.tensor(x, dtype=torch.float32).permute(0, 3, 1, 2)})["prob"]
    np.testing.assert_allclose(prob.numpy(), expected, atol=1e-5)


def test_keras_weights_need_the_paper_variant_and_a_fitting_file(tmp_path) -> None:
    path, _ = _meso4(tmp_path)
    with pytest.raises(PretrainedWeightsError, match="fit 'variant: paper'"):
        build_detector("meso4", pretrained=str(path), input_size=SIZE)
    with pytest.raises(KerasWeightsError, match="conv2d: 4 in file, 16 in model"):
        build_detector("meso_inception4", variant="paper", pretrained=str(path), input_size=SIZE)
    with pytest.raises(KerasWeightsError, match="set model.input_size"):
        build_detector("meso4", variant="paper", pretrained=str(path), input_size=128)
    with pytest.raises(PretrainedWeightsError, match="MesoNets have no ImageNet backbone"):
        build_detector("meso4", variant="paper", pretrained="timm")
