"""Keras MesoNet ``.h5`` import: a synthetic file in Keras's layout reproduces a numpy forward pass
of the Keras model (NHWC, HWIO kernels, 'same' padding, BN eps 1e-3, NHWC flatten), whose sigmoid
is P(real) as in the authors' files, so our P(fake) is one minus it. The released files
themselves are tested in ``test_mesonet_released.py`` (needs ``../shared``)."""

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
@pytest.mark.parametrize("keras_output", ["p_real", "p_fake"])
def test_keras_h5_reproduces_the_keras_forward_pass(tmp_path, name, make, keras_output) -> None:
    path, forward = make(tmp_path)
    model = build_detector(
        name,
        variant="paper",
        pretrained=str(path),
        input_size=SIZE,
        mean=(0, 0, 0),
        std=(1, 1, 1),
        keras_output=keras_output,
    ).eval()
    x = np.random.RandomState(5).rand(2, SIZE, SIZE, 3)  # NHWC in [0, 1]
    sigmoid = forward(x)
    expected = 1.0 - sigmoid if keras_output == "p_real" else sigmoid
    assert np.abs(sigmoid - 0.5).min() > 0.01  # so that 1 - s and s differ
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
    with pytest.raises(PretrainedWeightsError, match=r"expect RGB in \[0, 1\].*mean \[0.5"):
        build_detector(
            "meso4", variant="paper", pretrained=str(path), input_size=SIZE, mean=(0.5,) * 3
        )


def test_load_detector_file_reads_keras_files_and_names_other_kinds(tmp_path) -> None:
    """``--weights`` of test.py / metamorphic.py: a Keras file is routed by its content (not its
    name) to the Keras import; a file of another kind is one error naming what it is."""
    from fairforensics.configs.filekind import file_kind
    from fairforensics.detectors import CheckpointError, load_detector_file

    path, forward = _meso4(tmp_path)
    renamed = path.rename(tmp_path / "meso4_weights.bin")
    cfg = {"variant": "paper", "input_size": SIZE, "mean": [0, 0, 0], "std": [1, 1, 1]}
    model = load_detector_file("meso4", renamed, cfg)
    x = np.random.RandomState(6).rand(1, SIZE, SIZE, 3)
    with torch.no_grad():
        prob = model({"image": torch.tensor(x, dtype=torch.float32).permute(0, 3, 1, 2)})["prob"]
    np.testing.assert_allclose(prob.numpy(), 1.0 - forward(x), atol=1e-5)
    assert not model.training
    with pytest.raises(CheckpointError, match="HDF5 file.*detector 'xception' cannot read"):
        load_detector_file("xception", renamed)
    with pytest.raises(CheckpointError, match="set model.input_size"):
        load_detector_file("meso4", renamed)  # configs/detectors/paper/meso4.yaml: 256
    torch.save({"w": torch.zeros(1)}, tmp_path / "new.pt")
    torch.save({"w": torch.zeros(1)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    assert file_kind(tmp_path / "new.pt") == "torch"
    assert file_kind(tmp_path / "old.pt") == "torch-legacy"
    np.savez(tmp_path / "w.npz", w=np.zeros(2))
    (tmp_path / "w.yaml").write_text("model: {}\n")
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    (tmp_path / "w.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))
    (tmp_path / "face.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(64))
    for name, what in [
        ("w.npz", "a NumPy .npz archive"),
        ("w.yaml", "a text file"),
        ("w.safetensors", "a safetensors file"),
        ("face.jpg", "a JPEG image"),
    ]:
        with pytest.raises(CheckpointError) as err:
            load_detector_file("meso4", tmp_path / name)
        message = str(err.value)
        assert message.startswith(f"{tmp_path / name}: {what}; weights must be a torch checkpoint")
        assert "Keras .h5" in message and "\n" not in message
