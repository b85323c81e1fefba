"""Makeup transforms on real faces: regions, masks, intensity, adaptive colour, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.ndimage import binary_dilation, binary_erosion
from skimage.morphology import disk

from fairforensics.configs import ConfigError
from fairforensics.fairness.metamorphic import (
    LandmarkError,
    MakeupConfig,
    adaptive_colours,
    apply_makeup,
    build_transform,
    patch_statistics,
    region_mask,
)
from fairforensics.fairness.metamorphic.makeup import blur_radius
from fairforensics.fairness.metamorphic.regions import (
    COMPONENTS,
    INNER_LIP,
    OUTER_LIP,
    between_brows_box,
    fill_curve,
    spline_curve,
)
from tests.test_metamorphic_faces import aligned_faces

FACES = aligned_faces()


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.any(a != b, axis=2)


@pytest.mark.parametrize("component", COMPONENTS)
def test_changes_only_inside_region_plus_blur_margin(component: str) -> None:
    for name, face, lm, _ in FACES:
        cfg = MakeupConfig(components=[component], intensity="heavy")
        out, mask = apply_makeup(face, lm, cfg)
        region = region_mask(face.shape[:2], lm, component)
        changed = _changed(out, face)
        margin = binary_dilation(region, disk(blur_radius(lm, cfg, component) + 1))
        assert region.sum() > 10, (name, component)
        assert changed.sum() > 0.5 * region.sum(), (name, component)
        assert not (changed & ~margin).any(), f"{name}/{component}: pixels changed outside region"
        assert not (changed & (mask == 0)).any(), f"{name}/{component}: change outside the mask"
        assert mask.dtype == np.float32 and mask.min() >= 0 and mask.max() <= 1
        # the core of the region carries the full weight: alpha * strength
        core = binary_erosion(region, disk(blur_radius(lm, cfg, component) + 1))
        if core.any():
            expected = min(1.0, cfg.alpha * cfg.strength_of(component))
            assert np.allclose(mask[core], expected, atol=1e-4)


def test_regions_sit_where_the_landmarks_say() -> None:
    for name, face, lm, _ in FACES:
        shape = face.shape[:2]
        ys = {c: np.nonzero(region_mask(shape, lm, c))[0].mean() for c in COMPONENTS}
        eye_y = lm[36:48, 1].mean()
        brow_y = lm[17:27, 1].mean()
        assert brow_y < ys["eyeshadow"] < eye_y, name
        assert ys["eyeliner"] < eye_y + 1, name
        assert eye_y < ys["blush"] < lm[[48, 54], 1].mean() + 5, name
        blush = region_mask(shape, lm, "blush")
        xs = np.nonzero(blush)[1]
        nose_x = lm[27:36, 0].mean()
        assert (xs < nose_x).any() and (xs > nose_x).any(), f"{name}: one blush per cheek"
        assert not blush[:, int(lm[31, 0]) + 1 : int(lm[35, 0])].any(), f"{name}: blush on the nose"


def test_lipstick_is_outer_lip_minus_inner_mouth() -> None:
    name, face, lm, _ = FACES[0]  # open-mouthed smile
    shape = face.shape[:2]
    outer = fill_curve(shape, spline_curve(lm[list(OUTER_LIP)], closed=True))
    inner = fill_curve(shape, spline_curve(lm[list(INNER_LIP)], closed=True))
    assert inner.sum() > 20, "the test face should show its teeth"
    lips = region_mask(shape, lm, "lipstick")
    np.testing.assert_array_equal(lips, outer & ~inner)
    cfg = MakeupConfig(components=["lipstick"], intensity="heavy")
    out, _ = apply_makeup(face, lm, cfg)
    teeth = binary_erosion(inner, disk(blur_radius(lm, cfg, "lipstick") + 1))
    assert teeth.any()
    assert not _changed(out, face)[teeth].any(), "lipstick painted the teeth"


def test_spline_passes_through_the_landmarks() -> None:
    _, _, lm, _ = FACES[0]
    pts = lm[list(OUTER_LIP)]
    curve = spline_curve(pts, closed=True, samples=4000)
    dist = np.linalg.norm(pts[:, None, :] - curve[None, :, :], axis=2).min(axis=1)
    assert dist.max() < 0.3
    # smooth: no step longer than a small fraction of the perimeter
    steps = np.linalg.norm(np.diff(curve, axis=0), axis=1)
    assert steps.max() < 0.01 * steps.sum()
    # degenerate input (all points equal) does not crash
    assert len(spline_curve(np.ones((6, 2)), closed=True)) == 1


@pytest.mark.parametrize("component", COMPONENTS)
def test_heavier_intensity_moves_the_colour_further(component: str) -> None:
    for name, face, lm, _ in FACES:
        region = region_mask(face.shape[:2], lm, component)
        original = face[region].astype(float).mean(axis=0)
        dist = []
        for level in ("light", "medium", "heavy"):
            out, _ = apply_makeup(face, lm, MakeupConfig(components=[component], intensity=level))
            dist.append(np.linalg.norm(out[region].astype(float).mean(axis=0) - original))
        assert dist[0] < dist[1] < dist[2], (name, component, dist)


def test_continuous_alpha_and_zero_alpha_changes_nothing() -> None:
    _, face, lm, _ = FACES[1]
    out, mask = apply_makeup(face, lm, MakeupConfig(intensity=0.0))
    np.testing.assert_array_equal(out, face)
    assert not mask.any()
    d = []
    for alpha in (0.1, 0.3, 0.6, 0.9):
        out, _ = apply_makeup(face, lm, MakeupConfig(components=["lipstick"], intensity=alpha))
        d.append(np.abs(out.astype(int) - face).sum())
    assert d == sorted(d) and d[0] > 0


def test_deterministic() -> None:
    _, face, lm, _ = FACES[2]
    cfg = MakeupConfig(colour="adaptive", intensity="heavy")
    a, ma = apply_makeup(face, lm, cfg)
    b, mb = apply_makeup(face.copy(), lm.copy(), cfg)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ma, mb)


def test_patch_statistics_is_the_between_brows_rectangle() -> None:
    _, face, lm, _ = FACES[0]
    x0, y0, x1, y1 = between_brows_box(lm, face.shape[:2])
    assert lm[21, 0] - 1 <= x0 < x1 <= lm[22, 0] + 1
    assert y0 < y1 <= lm[27, 1] + 1
    mean, intensity = patch_statistics(face, lm)
    patch = face[y0:y1, x0:x1].reshape(-1, 3).astype(float)
    np.testing.assert_allclose(mean, patch.mean(axis=0))
    gray = patch @ np.array([0.299, 0.587, 0.114])
    assert intensity == pytest.approx(gray.mean() / 255.0)


def test_adaptive_colour_follows_the_between_brows_patch() -> None:
    _, face, lm, _ = FACES[3]
    x0, y0, x1, y1 = between_brows_box(lm, face.shape[:2])
    cfg = MakeupConfig(
        colour="adaptive", skin_source="between_brows", components=["lipstick"], intensity="heavy"
    )
    colours, scale = adaptive_colours(face, lm, cfg)
    darker = face.copy()
    patch = darker[y0:y1, x0:x1].astype(float)
    patch[..., 0] *= 0.5  # less red, and darker, between the brows only
    darker[y0:y1, x0:x1] = np.rint(patch).astype(np.uint8)
    colours2, scale2 = adaptive_colours(darker, lm, cfg)
    m1, _ = patch_statistics(face, lm)
    m2, _ = patch_statistics(darker, lm)
    for c in COMPONENTS:
        np.testing.assert_allclose(colours2[c] / colours[c], m2 / m1, rtol=1e-6)
    assert scale2 > scale  # darker skin -> stronger makeup
    # fixed colours ignore the patch; adaptive lipstick changes with it (outside the patch)
    region = region_mask(face.shape[:2], lm, "lipstick")
    out1, _ = apply_makeup(face, lm, cfg)
    out2, _ = apply_makeup(darker, lm, cfg)
    assert out2[region][:, 0].astype(float).mean() < out1[region][:, 0].astype(float).mean() - 2
    fixed = MakeupConfig(components=["lipstick"], intensity="heavy")
    np.testing.assert_array_equal(
        apply_makeup(face, lm, fixed)[0][region], apply_makeup(darker, lm, fixed)[0][region]
    )


def test_sizes_scale_with_the_face() -> None:
    _, face, lm, _ = FACES[1]
    h, w = face.shape[:2]
    for c in COMPONENTS:
        area2 = region_mask((2 * h, 2 * w), lm * 2 + 0.5, c).sum()
        area4 = region_mask((4 * h, 4 * w), lm * 4 + 1.5, c).sum()
        assert area4 / area2 == pytest.approx(4.0, rel=0.12), c


def test_bad_landmarks_and_images_raise_clear_errors() -> None:
    _, face, lm, _ = FACES[0]
    with pytest.raises(LandmarkError, match="no landmarks"):
        apply_makeup(face, None, MakeupConfig())
    with pytest.raises(LandmarkError, match=r"68x2.*\(5, 2\)"):
        apply_makeup(face, lm[:5], MakeupConfig())
    nan = lm.copy()
    nan[3, 0] = np.nan
    with pytest.raises(LandmarkError, match="NaN"):
        apply_makeup(face, nan, MakeupConfig())
    with pytest.raises(ValueError, match="uint8"):
        apply_makeup(face.astype(np.float32), lm, MakeupConfig())
    with pytest.raises(ValueError, match="HxWx3"):
        apply_makeup(face[..., 0], lm, MakeupConfig())


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"components": ["mascara"]}, "mascara"),
        ({"components": []}, "at least one"),
        ({"intensity": 1.5}, r"\[0, 1\]"),
        ({"intensity": "extreme"}, "intensity"),
        ({"colour": "random"}, "colour"),
        ({"colours": {"lipstick": [300, 0, 0]}}, "colours.lipstick"),
        ({"blur": -1.0}, "blur"),
        ({"sparkle": True}, "sparkle"),
    ],
)
def test_bad_makeup_params_name_the_key(params: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        build_transform("makeup", params, source="relations.yaml")


def test_makeup_transform_from_params_matches_apply_makeup() -> None:
    _, face, lm, _ = FACES[2]
    params = {
        "components": ["blush", "lipstick"],
        "intensity": 0.5,
        "colours": {"blush": [250, 90, 90]},
    }
    transform = build_transform("makeup", params)
    assert transform.needs_landmarks
    out, mask = transform(face, lm)
    ref, ref_mask = apply_makeup(face, lm, MakeupConfig(**params))
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(mask, ref_mask)
