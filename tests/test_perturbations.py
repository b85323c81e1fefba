"""DeeperForensics-1.0's perturbations (issue 33) pinned on small hand cases, without ../shared:
the reference's parameters, its colour round trip through float YCbCr, its truncation, the
noise added after the division by 255, the block count that scales with the frame size."""

from __future__ import annotations

import numpy as np
import pytest

from fairforensics.preprocessing.perturb_files import perturb_image, read_meta, write_meta
from fairforensics.preprocessing.perturbations import (
    FRAME_TYPES,
    LEVELS,
    PARAMETERS,
    TYPES,
    Perturbation,
    PerturbationError,
    block_count,
    parse_chain,
    perturb_frame,
    perturbation_rng,
)


def _pixel(rgb) -> np.ndarray:
    return np.array([[rgb]], np.uint8)


def test_parameters_are_the_references() -> None:
    assert TYPES == ("CS", "CC", "BW", "GNC", "GB", "JPEG", "VC")
    assert PARAMETERS["CS"] == (0.4, 0.3, 0.2, 0.1, 0.0)
    assert PARAMETERS["GB"] == (7, 9, 13, 17, 21)
    assert PARAMETERS["VC"] == (30, 32, 35, 38, 40)
    assert Perturbation("JPEG", 4).param == 5 and str(Perturbation("GNC", 2)) == "GNC:2"


def test_colour_saturation_by_hand() -> None:
    # red: Y = 76.245; level 5 (param 0) leaves the chroma at 0.5, which the inverse maps to
    # (0.5 * 255 - 16) / 224 - 0.5 = -0.0022, not 0: a hair below luma, truncated -> 76
    red = _pixel([255, 0, 0])
    assert perturb_frame(red, Perturbation("CS", 5)).tolist() == [[[76, 76, 76]]]
    # level 1 (0.4): Cr 127.95 -> 112.46 -> 45.28 -> 51.48: R = 76.245 + 1.403 * 50.98 = 147.77
    assert perturb_frame(red, Perturbation("CS", 1)).tolist() == [[[147, 45, 45]]]
    # grey: both chroma a hair under their centre push R and B just under 128 and G just over
    grey = _pixel([128, 128, 128])
    assert perturb_frame(grey, Perturbation("CS", 3)).tolist() == [[[127, 128, 127]]]


def test_colour_contrast_truncates() -> None:
    # 255 * 0.85 = 216.75 and 200 * 0.85 = 170 (float32): truncated, not rounded
    out = perturb_frame(_pixel([255, 200, 1]), Perturbation("CC", 1))
    assert out.tolist() == [[[216, 170, 0]]]


def test_block_wise_counts_blocks_by_frame_size() -> None:
    rng = np.random.default_rng(0)
    small = np.full((255, 400, 3), 7, np.uint8)  # short side under 256: no block (the quirk)
    assert np.array_equal(perturb_frame(small, Perturbation("BW", 5), rng), small)
    assert block_count(255, 400, 80) == 0 and block_count(720, 1280, 16) == 32
    frame = np.full((256, 264, 3), 7, np.uint8)
    out = perturb_frame(frame, Perturbation("BW", 5), rng)  # 80 blocks; nothing drawn before
    changed = np.any(out != frame, axis=2)
    assert np.all(out[changed] == 128)
    assert 0.5 * 80 * 64 < changed.sum() <= 80 * 64
    # the reference's randint(0, side - 1 - 8) bound: the last row and column are never covered
    assert not changed[-1].any() and not changed[:, -1].any()
    same = perturb_frame(frame, Perturbation("BW", 5), np.random.default_rng(0))
    assert np.array_equal(same, out)


def test_gaussian_noise_is_added_after_dividing_by_255() -> None:
    """Noise of variance 0.001 on YCbCr / 255, luma included: sigma 255 * sqrt(0.001) = 8.06 in
    the reference's YCbCr units, so per RGB channel (inverse matrix, 255/219 and 255/224 scales)
    std 15.94 (R), 11.88 (G), 18.79 (B)."""
    grey = np.full((128, 128, 3), 128, np.uint8)
    out = perturb_frame(grey, Perturbation("GNC", 1), np.random.default_rng(3))
    diff = out.astype(np.float64) - grey
    s = 255 * np.sqrt(0.001)
    y, c = s * 255 / 219, s * 255 / 224
    want = [np.hypot(y, 1.403 * c), np.sqrt(y**2 + (0.714 * c) ** 2 + (0.344 * c) ** 2)]
    want.append(np.hypot(y, 1.773 * c))
    assert np.allclose(diff.reshape(-1, 3).std(0), want, rtol=0.03)
    assert np.all(np.abs(diff.reshape(-1, 3).mean(0) + 0.5) < 0.5)  # truncation: about -0.5
    with pytest.raises(PerturbationError, match="Generator"):
        perturb_frame(grey, Perturbation("GNC", 1))


def test_gaussian_blur_kernel_and_sigma() -> None:
    """An impulse through GB level 1 is the 7x7 Gaussian of sigma 7/6, scaled by 255."""
    impulse = np.zeros((15, 15, 3), np.uint8)
    impulse[7, 7] = 255
    out = perturb_frame(impulse, Perturbation("GB", 1))[:, :, 0].astype(int)
    g = np.exp(-(np.arange(-3, 4) ** 2) / (2 * (7 / 6) ** 2))
    g /= g.sum()
    assert np.abs(out[4:11, 4:11] - 255 * np.outer(g, g)).max() <= 1
    assert out[7, 7] == 30 and out.sum() - out[4:11, 4:11].sum() == 0


def test_jpeg_is_down_and_up_sampling() -> None:
    image = np.zeros((4, 4, 3), np.uint8)
    image[:, 2:] = 200  # down by 2: [0, 200]; bilinear back up: 0, 50, 150, 200
    out = perturb_frame(image, Perturbation("JPEG", 1))
    assert out[:, :, 1].tolist() == [[0, 50, 150, 200]] * 4
    with pytest.raises(PerturbationError, match="at least 6 pixels"):
        perturb_frame(np.zeros((5, 9, 3), np.uint8), Perturbation("JPEG", 5))


def test_every_frame_type_and_level_keeps_shape_and_changes_pixels() -> None:
    rng = np.random.default_rng(1)
    frame = rng.integers(0, 256, (260, 264, 3), dtype=np.uint8)
    before = frame.copy()
    for kind in FRAME_TYPES:
        for level in LEVELS:
            out = perturb_frame(frame, Perturbation(kind, level), rng)
            assert out.shape == frame.shape and out.dtype == np.uint8 and out.flags.c_contiguous
            assert not np.array_equal(out, frame), f"{kind}:{level} left the frame unchanged"
    assert np.array_equal(frame, before)  # the input is never written (the reference's BW is)


def test_vc_is_not_a_frame_perturbation() -> None:
    with pytest.raises(PerturbationError, match="video"):
        perturb_frame(np.zeros((8, 8, 3), np.uint8), Perturbation("VC", 1))
    with pytest.raises(PerturbationError, match="video"):
        perturb_image(
            np.zeros((8, 8, 3), np.uint8), [Perturbation("GB", 1), Perturbation("VC", 1)], None
        )


def test_chains_and_random_draws() -> None:
    steps = parse_chain("GB:2+vc:3")
    rng = np.random.default_rng(0)
    assert [str(s.draw(rng)) for s in steps] == ["GB:2", "VC:3"]
    assert [s.level for s in parse_chain("GB+CS", level=4)] == ["4", "4"]
    for bad, message in [
        ("XX:1", "unknown perturbation type 'XX'"),
        ("GB:6", "unknown perturbation level '6'"),
        ("GB", "no level"),
        ("GB:0+CS:1", "level '0'"),
    ]:
        with pytest.raises(PerturbationError, match=message):
            parse_chain(bad)
    spec = parse_chain("random:random")[0]
    draws = [str(spec.draw(np.random.default_rng(s), video=False)) for s in range(60)]
    assert draws == [str(spec.draw(np.random.default_rng(s), video=False)) for s in range(60)]
    assert not any(d.startswith("VC") for d in draws) and len(set(draws)) > 10
    videos = {spec.draw(np.random.default_rng(s)).type for s in range(200)}
    assert videos == set(TYPES)


def test_perturbation_rng_is_per_case() -> None:
    a = perturbation_rng(0, "video1", "GNC", 3).standard_normal(4)
    assert np.array_equal(a, perturbation_rng(0, "video1", "GNC", 3).standard_normal(4))
    assert not np.array_equal(a, perturbation_rng(0, "video2", "GNC", 3).standard_normal(4))
    assert not np.array_equal(a, perturbation_rng(1, "video1", "GNC", 3).standard_normal(4))


def test_meta_file_chains_history(tmp_path) -> None:
    meta = tmp_path / "meta.txt"
    write_meta(meta, "a.mp4", "b.mp4", [Perturbation("GB", 2)])
    write_meta(meta, "b.mp4", "c.mp4", [Perturbation("VC", 3)])
    assert meta.read_text() == "b.mp4 GB:2\nc.mp4 GB:2 VC:3\n"
    assert read_meta(meta)["c.mp4"] == ["GB:2", "VC:3"]
