"""FairSWAP (paper 001, Sec. V) on real faces with gender attributes."""

from __future__ import annotations

import csv
import logging

import cv2
import numpy as np
import pytest
import torch

from fairforensics.fairness.fairswap import FairSwap, build_fairswap
from tests.testdata import CELEBRITIES

CELEB = CELEBRITIES
SIZE = 96


def _faces(n_female: int, n_male: int) -> tuple[torch.Tensor, list[str]]:
    with (CELEB / "attributes.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    chosen = [r for r in rows if r["gender"] == "female"][:n_female]
    chosen += [r for r in rows if r["gender"] == "male"][:n_male]
    images = []
    for r in chosen:
        bgr = cv2.imread(str(CELEB / r["file"]))
        assert bgr is not None, r["file"]
        rgb = cv2.resize(
            cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), (SIZE, SIZE), interpolation=cv2.INTER_AREA
        )
        images.append(torch.from_numpy(rgb).permute(2, 0, 1).float() / 127.5 - 1.0)
    return torch.stack(images), [r["gender"] for r in chosen]


@pytest.fixture(scope="module")
def faces():
    return _faces(4, 4)


def _batch(faces, labels, with_map=True):
    image, gender = faces
    batch = {
        "image": image.clone(),
        "label": torch.tensor(labels, dtype=torch.long),
        "attributes": {"gender": list(gender)},
        "video_id": [f"v{i}" for i in range(len(labels))],
    }
    if with_map:  # a distinct value per sample so every map cell tells where it came from
        batch["pixel_map"] = (
            torch.arange(len(labels), dtype=torch.float32)
            .view(-1, 1, 1, 1)
            .expand(-1, 1, 12, 12)
            .clone()
        )
    return batch


def _check_swap(before, after, i, base, src, box):
    top, left, size = box
    expected = before["image"][base].clone()
    expected[:, top : top + size, left : left + size] = before["image"][
        src, :, top : top + size, left : left + size
    ]
    assert torch.equal(after["image"][i], expected)


def test_bona_fide_swaps_with_other_gender_and_keeps_label(faces):
    labels = [0] * 8
    before = _batch(faces, labels)
    after = FairSwap(p1=1.0, patch=64, seed=0)(before)
    gender = before["attributes"]["gender"]
    assert torch.equal(after["label"], before["label"])
    for i in range(8):
        j = int(after["fairswap_partner"][i])
        assert j >= 0 and j != i and gender[j] != gender[i]
        box = after["fairswap_box"][i].tolist()
        assert box[2] == 64 and 0 <= box[0] <= SIZE - 64 and 0 <= box[1] <= SIZE - 64
        _check_swap(before, after, i, i, j, box)
        assert not torch.equal(after["image"][i], before["image"][i])  # real faces differ
        # map: partner's values inside the (scaled) patch, own values elsewhere
        m = after["pixel_map"][i, 0]
        assert set(m.unique().tolist()) == {float(i), float(j)}
    assert torch.equal(before["image"], faces[0])  # the input batch is not modified


def test_no_swap_when_probabilities_are_zero(faces):
    before = _batch(faces, [0, 1] * 4)
    after = FairSwap(p1=0.0, p2=0.0, seed=0)(before)
    assert torch.equal(after["image"], before["image"])
    assert torch.equal(after["pixel_map"], before["pixel_map"])
    assert (after["fairswap_partner"] == -1).all()


def test_attack_with_attack_partner(faces):
    labels = [1] * 8
    before = _batch(faces, labels)
    after = FairSwap(p2=1.0, p3=0.0, seed=1)(before)
    assert (after["label"] == 1).all()
    for i in range(8):
        j = int(after["fairswap_partner"][i])
        assert labels[j] == 1 and j != i
        _check_swap(before, after, i, i, j, after["fairswap_box"][i].tolist())


def test_attack_with_bona_fide_partner_large_and_small_partial_attack(faces):
    labels = [1, 0, 1, 0, 1, 0, 1, 0]
    before = _batch(faces, labels)
    # p4 = 0: x1 keeps its attack image and receives a bona fide patch (large partial attack)
    large = FairSwap(p1=0.0, p2=1.0, p3=1.0, p4=0.0, seed=2)(before)
    # p4 = 1: the bona fide partner image carries x1's attack patch (small partial attack)
    small = FairSwap(p1=0.0, p2=1.0, p3=1.0, p4=1.0, seed=2)(before)
    for i in (0, 2, 4, 6):
        for out, small_attack in ((large, False), (small, True)):
            j = int(out["fairswap_partner"][i])
            assert labels[j] == 0
            assert int(out["label"][i]) == 1  # binary label stays attack
            box = out["fairswap_box"][i].tolist()
            base, src = (j, i) if small_attack else (i, j)
            _check_swap(before, out, i, base, src, box)
            m = out["pixel_map"][i, 0]
            top, left, size = box
            # 64 px of 96 are 8 of 12 cells, starting at the rounded scaled corner
            y0, x0 = min(round(top / 8), 4), min(round(left / 8), 4)
            y1, x1 = y0 + 8, x0 + 8
            inside = torch.zeros_like(m, dtype=torch.bool)
            inside[y0:y1, x0:x1] = True
            assert (m[inside] == src).all() and (m[~inside] == base).all()
    # bona fide samples untouched (p1 = 0)
    for i in (1, 3, 5, 7):
        assert torch.equal(large["image"][i], before["image"][i])


def test_rates_follow_p1_p2_p3_p4(faces):
    swap = FairSwap(seed=3)  # paper values 0.3, 0.3, 0.5, 0.5
    labels = [0, 1] * 4
    n_bona = n_bona_swapped = n_attack = n_attack_swapped = n_bf_partner = n_small = 0
    before = _batch(faces, labels, with_map=False)
    for _ in range(300):
        out = swap(before)
        for i, lab in enumerate(labels):
            j = int(out["fairswap_partner"][i])
            if lab == 0:
                n_bona += 1
                n_bona_swapped += j >= 0
            else:
                n_attack += 1
                if j >= 0:
                    n_attack_swapped += 1
                    if labels[j] == 0:
                        n_bf_partner += 1
                        # small partial attack: the result is mostly the bona fide partner
                        n_small += torch.equal(
                            out["image"][i][:, :2, :2], before["image"][j][:, :2, :2]
                        ) and (out["fairswap_box"][i][0] > 1 or out["fairswap_box"][i][1] > 1)
    assert abs(n_bona_swapped / n_bona - 0.3) < 0.05
    assert abs(n_attack_swapped / n_attack - 0.3) < 0.05
    assert abs(n_bf_partner / n_attack_swapped - 0.5) < 0.08
    assert abs(n_small / n_bf_partner - 0.5) < 0.12


def test_binary_detector_batch_without_map(faces):
    before = _batch(faces, [0, 1] * 4, with_map=False)
    after = FairSwap(p1=1.0, p2=1.0, seed=4)(before)
    assert "pixel_map" not in after
    assert torch.equal(after["label"], before["label"])
    assert after["image"].shape == before["image"].shape


def test_mask_follows_pixels_and_patch_clamped(faces, caplog):
    before = _batch(faces, [1] * 8, with_map=False)
    before["mask"] = (
        torch.arange(8, dtype=torch.float32).view(-1, 1, 1, 1).expand(-1, 1, SIZE, SIZE).clone()
    )
    with caplog.at_level(logging.WARNING):
        after = FairSwap(p2=1.0, p3=0.0, patch=200, seed=5)(before)
    assert "patch clamped" in caplog.text
    for i in range(8):
        j = int(after["fairswap_partner"][i])
        assert after["fairswap_box"][i].tolist() == [0, 0, SIZE]
        assert (after["mask"][i] == j).all()


def test_falls_back_to_same_group_and_warns_without_attribute(faces, caplog):
    image, _ = faces
    batch = {
        "image": image[:4].clone(),
        "label": torch.zeros(4, dtype=torch.long),
        "attributes": {"gender": ["female"] * 4},
    }
    out = FairSwap(p1=1.0, seed=6)(batch)
    assert (out["fairswap_partner"] >= 0).all()
    del batch["attributes"]
    with caplog.at_level(logging.WARNING):
        out = FairSwap(p1=1.0, seed=6)(batch)
    assert "no attribute 'gender'" in caplog.text
    assert (out["fairswap_partner"] >= 0).all()
    single = {"image": image[:1].clone(), "label": torch.zeros(1, dtype=torch.long)}
    assert (FairSwap(p1=1.0, seed=6)(single)["fairswap_partner"] == -1).all()  # no partner


def test_bad_input():
    with pytest.raises(ValueError, match="p3 must be a probability"):
        FairSwap(p3=1.5)
    with pytest.raises(ValueError, match="patch"):
        FairSwap(patch=0)
    with pytest.raises(ValueError, match="image \\[B,3,H,W\\]"):
        FairSwap()({"image": torch.zeros(3, 8, 8), "label": torch.zeros(3, dtype=torch.long)})
    with pytest.raises(ValueError, match="has 1 entries for a batch of 2"):
        FairSwap()(
            {
                "image": torch.zeros(2, 3, 8, 8),
                "label": torch.zeros(2, dtype=torch.long),
                "attributes": {"gender": ["f"]},
            }
        )


def test_build_from_trainer_config():
    from fairforensics.training.config import FairSwapConfig

    assert build_fairswap(FairSwapConfig()) is None
    swap = build_fairswap(FairSwapConfig(enabled=True, p1=0.4, patch=32))
    assert isinstance(swap, FairSwap) and swap.p1 == 0.4 and swap.patch == 32 and swap.p4 == 0.5
    image = torch.from_numpy(np.zeros((2, 3, 64, 64), dtype=np.float32))
    assert swap({"image": image, "label": torch.tensor([0, 1])})["image"].shape == (2, 3, 64, 64)
