"""Summaries of training-data draws and their comparison with stored references (numpy only).

A *draw* is one output of a training-data recipe (a self-blended pair, a blend, a pair, a group,
a clip) described by a flat record: categorical values (strings or booleans: which branch, which
mask type, an output's shape and dtype) and numbers (mask areas, blend ratios, pixel means).
:func:`summarise` turns the records of N draws into shares (categorical keys) and moments
(numeric keys); :func:`compare` tells, statistic by statistic, whether two summaries agree within
sampling error. The DeepfakeBench harness that makes the references (outside the repository)
loads this file by path, so both sides summarise with the same code; it must import nothing but
numpy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

#: standard errors a difference may reach before it counts (4: a false alarm ~1 in 16 000 per
#: statistic for normal sampling error)
SIGMAS = 4.0
#: slack added to every share's tolerance (rounding of shares, discrete branch counts)
SHARE_SLACK = 0.02


def mask_record(mask: np.ndarray, prefix: str = "mask") -> dict[str, float]:
    """Area above 0 and above 0.5 (fractions of the pixels), maximum and mean of a mask in [0, 1]."""
    m = np.asarray(mask, np.float64)
    if m.ndim == 3:
        m = m[..., 0]
    if m.max() > 1.0:  # a 0-255 mask
        m = m / 255.0
    return {
        f"{prefix}_gt0": float((m > 1e-6).mean()),
        f"{prefix}_gt05": float((m > 0.5).mean()),
        f"{prefix}_max": float(m.max()),
        f"{prefix}_mean": float(m.mean()),
    }


def image_record(image: np.ndarray, prefix: str) -> dict[str, Any]:
    """Shape, dtype, range and mean of an image (values as the recipe returns them), and the mean
    of its first channel minus its last (positive for a face in RGB order, negative in BGR)."""
    a = np.asarray(image)
    return {
        f"{prefix}_shape": "x".join(str(s) for s in a.shape),
        f"{prefix}_dtype": str(a.dtype),
        f"{prefix}_min": float(a.min()),
        f"{prefix}_max": float(a.max()),
        f"{prefix}_mean": float(a.astype(np.float64).mean()),
        f"{prefix}_first_minus_last_channel": float(
            a[..., 0].astype(np.float64).mean() - a[..., -1].astype(np.float64).mean()
        ),
    }


def diff_record(a: np.ndarray, b: np.ndarray, prefix: str) -> dict[str, float]:
    """Mean absolute difference of two images (0-255) and the share of pixels that differ."""
    d = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    if d.ndim == 3:
        d = d.max(axis=2)
    return {f"{prefix}_absdiff": float(d.mean()), f"{prefix}_changed": float((d > 0).mean())}


def pair_record(
    image: np.ndarray,
    fake: np.ndarray,
    real: np.ndarray,
    mask: np.ndarray,
    branches: Mapping[str, str],
    xray: np.ndarray | None = None,
) -> dict[str, Any]:
    """The record of one blended pair (SBI, I2G, FWA, Face X-ray; same keys on both sides): the
    ``branches`` taken, the blend ratio read from the mask's maximum, the images' and the mask's
    measures (a 0-255 mask read as /255), the X-ray target's where given, how far the fake is
    from its real image and the real image from the input face."""
    m = np.asarray(mask, np.float64).squeeze()
    if m.max() > 1.0:
        m = m / 255.0
    extra = {} if xray is None else mask_record(np.asarray(xray).squeeze(), "xray")
    ratio = min((0.25, 0.5, 0.75, 1.0), key=lambda r: abs(r - m.max()))
    return {
        **dict(branches),
        "blend_ratio": f"{ratio:g}",
        **image_record(fake, "fake"),
        **image_record(real, "real"),
        "mask_shape": "x".join(str(s) for s in m.shape),
        **mask_record(m),
        **extra,
        **diff_record(fake, real, "fake_vs_real"),
        **diff_record(real, image, "real_vs_input"),
    }


#: the transforms of the training augmentation (DeepfakeBench's ``init_data_aug_method``, ours
#: ``training.augment.build_augment``) by albumentations class name, as a clip record names them
AUGMENT_NAMES = {
    "HorizontalFlip": "flip",
    "Rotate": "rotate",
    "GaussianBlur": "blur",
    "RandomBrightnessContrast": "brightness_contrast",
    "FancyPCA": "fancy_pca",
    "HueSaturationValue": "hsv",
    "ImageCompression": "jpeg",
}


#: LSDA's augmentation (DeepfakeBench's ``augmentation_methods2``) adds these two
LSDA_AUGMENT_NAMES = {**AUGMENT_NAMES, "RandomDownScale": "downscale", "Sharpen": "sharpen"}


def augment_record(
    face: np.ndarray,
    image: np.ndarray,
    applied: set[str],
    names: Iterable[str] = AUGMENT_NAMES.values(),
    prefix: str = "image",
) -> dict[str, Any]:
    """The record of one augmented face: which of ``names`` were applied (``applied``) and how
    many (transforms that fire together show there, not in the single shares), the image's
    measures and its distance from the face."""
    return {
        **{f"applied_{name}": name in applied for name in names},
        "applied_count": str(len(applied)),
        **image_record(image, prefix),
        **diff_record(image, face, f"{prefix}_vs_input"),
    }


def clip_record(face: np.ndarray, frames: list[np.ndarray], applied: set[str]) -> dict[str, Any]:
    """The record of one augmented clip made of ``face`` repeated: :func:`augment_record` of its
    first frame, and whether every frame came out the same (one draw for the clip)."""
    return {
        **augment_record(face, frames[0], applied, prefix="frame"),
        "frames": str(len(frames)),
        "frames_identical": all(np.array_equal(frames[0], f) for f in frames[1:]),
    }


def sladd_choice(i: int) -> tuple[int, int, float]:
    """SLADD's synthesiser choice for draw ``i`` (region 0-9, blending type 0-2, magnitude), the
    generator network's output in training, here a fixed cycle that both sides use: every
    region with every type, magnitudes spread over (0, 1)."""
    return i % 10, (i // 10) % 3, ((7 * i) % 10 + 0.5) / 10


def summarise(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per key: ``{"kind": "share", "n", "shares"}`` or ``{"kind": "number", "n", "mean", "std",
    "min", "q10", "q50", "q90", "max"}`` over the records that have the key."""
    values: dict[str, list[Any]] = {}
    for rec in records:
        for key, value in rec.items():
            values.setdefault(key, []).append(value)
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(values):
        vals = values[key]
        if all(isinstance(v, str | bool) for v in vals):
            names, counts = np.unique([str(v) for v in vals], return_counts=True)
            out[key] = {
                "kind": "share",
                "n": len(vals),
                "shares": {
                    str(k): round(int(c) / len(vals), 4) for k, c in zip(names, counts, strict=True)
                },
            }
        else:
            a = np.asarray(vals, np.float64)
            q10, q50, q90 = np.quantile(a, [0.1, 0.5, 0.9])
            out[key] = {
                "kind": "number",
                "n": len(a),
                "mean": round(float(a.mean()), 5),
                "std": round(float(a.std(ddof=1)) if len(a) > 1 else 0.0, 5),
                "min": round(float(a.min()), 5),
                "q10": round(float(q10), 5),
                "q50": round(float(q50), 5),
                "q90": round(float(q90), 5),
                "max": round(float(a.max()), 5),
            }
    return out


def _share_rows(key: str, ours: dict, ref: dict) -> list[dict[str, Any]]:
    rows = []
    for name in sorted(set(ours["shares"]) | set(ref["shares"])):
        p_o, p_r = ours["shares"].get(name, 0.0), ref["shares"].get(name, 0.0)
        p = (p_o * ours["n"] + p_r * ref["n"]) / (ours["n"] + ref["n"])
        tol = SIGMAS * math.sqrt(p * (1 - p) * (1 / ours["n"] + 1 / ref["n"])) + SHARE_SLACK
        rows.append(
            {"stat": f"{key}={name}", "dfb": p_r, "ours": p_o, "tol": round(tol, 4),
             "ok": abs(p_o - p_r) <= tol}
        )  # fmt: skip
    return rows


def _number_row(key: str, ours: dict, ref: dict) -> dict[str, Any]:
    se = math.sqrt(ours["std"] ** 2 / ours["n"] + ref["std"] ** 2 / ref["n"])
    tol = SIGMAS * se
    return {
        "stat": f"{key} (mean)",
        "dfb": ref["mean"],
        "ours": ours["mean"],
        "tol": round(tol, 5),
        "ok": abs(ours["mean"] - ref["mean"]) <= tol,
    }


def compare(ours: Mapping[str, dict], ref: Mapping[str, dict]) -> list[dict[str, Any]]:
    """One row per statistic (each share of a categorical key, each numeric key's mean):
    ``{"stat", "dfb", "ours", "tol", "ok"}``; a key present on one side only is a failed row.
    ``ref`` is DeepfakeBench's summary (or a stored one of ours)."""
    rows: list[dict[str, Any]] = []
    for key in sorted(set(ours) | set(ref)):
        if key not in ours or key not in ref:
            rows.append(
                {"stat": key, "dfb": "present" if key in ref else "absent",
                 "ours": "present" if key in ours else "absent", "tol": None, "ok": False}
            )  # fmt: skip
        elif ours[key]["kind"] != ref[key]["kind"]:
            rows.append({"stat": key, "dfb": ref[key]["kind"], "ours": ours[key]["kind"],
                         "tol": None, "ok": False})  # fmt: skip
        elif ref[key]["kind"] == "share":
            rows += _share_rows(key, ours[key], ref[key])
        else:
            rows.append(_number_row(key, ours[key], ref[key]))
    return rows
