"""Import the authors' Keras MesoNet weights (``Meso4_DF.h5`` etc., Apache-2.0) into the ``paper``
variant of Meso4 / MesoInception4.

Keras names layers by type and creation order (``conv2d_N``, ``batch_normalization_N``,
``dense_N``, numbered per session, so only their order matters); the PyTorch modules of the
``paper`` variant are created in the same order. Conversions: convolution kernels HWIO -> OIHW;
BatchNorm ``gamma/beta/moving_mean/moving_variance`` (eps 1e-3, as the model already uses); dense
kernels ``[in, out]`` -> ``[out, in]``, where the first dense layer reads Keras's flattened NHWC
tensor, so its input axis is reordered from (h, w, c) to PyTorch's (c, h, w).

Meaning of the output: the released models' sigmoid is **P(real)**. The authors read their data
with Keras ``flow_from_directory(class_mode='binary')``, which numbers classes by sorted folder
name (``df`` or ``f2f`` = 0, ``real`` = 1). Our convention is label 1 = fake, so the last dense
layer's weight and bias are negated on import (``output="p_real"``, the default):
``sigmoid(-z) = 1 - sigmoid(z) = P(fake)``. A file whose sigmoid already is P(fake) loads with
``output="p_fake"`` (``keras_output: p_fake`` in the detector config). Inputs must be what the
authors fed: RGB scaled to [0, 1] (``rescale=1./255``), i.e. ``mean: [0, 0, 0]``,
``std: [1, 1, 1]``. Needs ``h5py`` (``pip install h5py`` or the ``keras`` extra).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from fairforensics.detectors.backbones import PretrainedWeightsError

_KINDS = {"conv2d": nn.Conv2d, "batch_normalization": nn.BatchNorm2d, "dense": nn.Linear}
#: What the Keras file's sigmoid is the probability of: real (the authors' files) or fake.
KERAS_OUTPUTS = ("p_real", "p_fake")


class KerasWeightsError(PretrainedWeightsError):
    """A Keras ``.h5`` file is unreadable or does not fit the model."""


def read_keras_layers(path: str | Path) -> dict[str, list[dict[str, np.ndarray]]]:
    """Kind (``conv2d``, ``batch_normalization``, ``dense``) -> each layer's arrays, in
    creation order; array names lose their ``:0`` suffix (``kernel``, ``bias``, ``gamma``...)."""
    try:
        import h5py
    except ImportError:
        raise KerasWeightsError(
            f"{path}: reading Keras .h5 weights needs h5py: pip install h5py "
            "(or the 'keras' extra of this package)"
        ) from None
    path = Path(path).expanduser()
    if not path.is_file():
        raise KerasWeightsError(f"{path}: Keras weights file not found")
    layers: dict[str, list[tuple[int, dict[str, np.ndarray]]]] = {k: [] for k in _KINDS}
    try:
        with h5py.File(path, "r") as f:
            root = f["model_weights"] if "model_weights" in f else f
            for name in root:
                match = re.fullmatch(r"(conv2d|batch_normalization|dense)(?:_(\d+))?", name)
                if match is None:
                    continue
                arrays: dict[str, np.ndarray] = {}

                def visit(key: str, obj: Any, arrays: dict[str, np.ndarray] = arrays) -> None:
                    if isinstance(obj, h5py.Dataset):
                        arrays[key.rsplit("/", 1)[-1].split(":")[0]] = np.asarray(obj)

                root[name].visititems(visit)
                if arrays:
                    layers[match.group(1)].append((int(match.group(2) or 0), arrays))
    except OSError as exc:
        raise KerasWeightsError(f"{path}: not a readable HDF5 file: {exc}") from None
    return {
        kind: [a for _, a in sorted(found, key=lambda t: t[0])] for kind, found in layers.items()
    }


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


def load_keras_mesonet(
    model: nn.Module,
    path: str | Path,
    flat_hwc: tuple[int, int, int],
    output: str = "p_real",
) -> None:
    """Copy the Keras MesoNet weights of ``path`` into ``model`` (its ``paper`` variant), so
    that the model's ``prob`` is P(fake).

    ``flat_hwc``: (H, W, C) of the tensor Keras flattens before the first dense layer.
    ``output``: what the file's sigmoid is the probability of (``p_real`` for the authors' files:
    the last layer is negated; ``p_fake``: copied as it is).
    """
    if output not in KERAS_OUTPUTS:
        raise KerasWeightsError(f"{path}: keras_output {output!r}: choose one of {KERAS_OUTPUTS}")
    try:
        _load(model, path, flat_hwc, sign=-1.0 if output == "p_real" else 1.0)
    except KeyError as exc:
        raise KerasWeightsError(f"{path}: a layer lacks the array {exc.args[0]!r}") from None


def _load(model: nn.Module, path: str | Path, flat_hwc: tuple[int, int, int], sign: float) -> None:
    layers = read_keras_layers(path)
    modules = {kind: [m for m in model.modules() if type(m) is cls] for kind, cls in _KINDS.items()}
    counts = {k: (len(layers[k]), len(modules[k])) for k in _KINDS}
    if any(a != b for a, b in counts.values()):
        found = ", ".join(f"{k}: {a} in file, {b} in model" for k, (a, b) in counts.items())
        raise KerasWeightsError(f"{path}: layers do not match {type(model).__name__} ({found})")
    state: dict[nn.Module, dict[str, torch.Tensor]] = {}
    for conv, arrays in zip(modules["conv2d"], layers["conv2d"], strict=True):
        state[conv] = {"weight": _tensor(arrays["kernel"]).permute(3, 2, 0, 1)}
        if "bias" in arrays:
            state[conv]["bias"] = _tensor(arrays["bias"])
    for bn, arrays in zip(
        modules["batch_normalization"], layers["batch_normalization"], strict=True
    ):
        state[bn] = {
            "weight": _tensor(arrays["gamma"]),
            "bias": _tensor(arrays["beta"]),
            "running_mean": _tensor(arrays["moving_mean"]),
            "running_var": _tensor(arrays["moving_variance"]),
        }
    for i, (fc, arrays) in enumerate(zip(modules["dense"], layers["dense"], strict=True)):
        kernel = _tensor(arrays["kernel"])  # [in, out]
        if i == 0:
            h, w, c = flat_hwc
            if kernel.shape[0] != h * w * c:
                raise KerasWeightsError(
                    f"{path}: dense_1 reads {kernel.shape[0]} features but the model flattens "
                    f"{h}x{w}x{c}; set model.input_size to the Keras model's input size"
                )
            kernel = kernel.reshape(h, w, c, -1).permute(3, 2, 0, 1).reshape(kernel.shape[1], -1)
        else:
            kernel = kernel.t()
        bias = _tensor(arrays["bias"])
        if i == len(modules["dense"]) - 1:  # the sigmoid's input z: P(class 1 of the file)
            kernel, bias = sign * kernel, sign * bias
        state[fc] = {"weight": kernel, "bias": bias}
    for module, tensors in state.items():
        own = dict(module.named_parameters(recurse=False)) | dict(
            module.named_buffers(recurse=False)
        )
        own.pop("num_batches_tracked", None)
        if set(own) - set(tensors):
            raise KerasWeightsError(
                f"{path}: {type(module).__name__} has no {sorted(set(own) - set(tensors))} in the file"
            )
        for key, value in tensors.items():
            if key not in own or tuple(own[key].shape) != tuple(value.shape):
                got = tuple(own[key].shape) if key in own else None
                raise KerasWeightsError(
                    f"{path}: {type(module).__name__}.{key} {tuple(value.shape)} in the file vs "
                    f"{got} in the model"
                )
        with torch.no_grad():
            for key, value in tensors.items():
                own[key].copy_(value)
