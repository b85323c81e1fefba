"""FairSWAP partners from the whole training set, map cells, per-rank seeds, exact resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from fairforensics.detectors import CheckpointError, read_checkpoint
from fairforensics.fairness.fairswap import FairSwap, PartnerPool, fairswap_transforms, map_box
from fairforensics.training.trainer import Trainer
from tests.test_train_run import _cfg
from tests.test_train_utils import make_index


class FakeSet:
    """A training set of ``n`` flat-colour images: sample ``j`` has value ``j`` everywhere."""

    def __init__(self, labels: list[int], groups: list[str], size: int = 32, bad=()) -> None:
        self._labels, self._groups, self.size, self.bad = labels, groups, size, set(bad)
        self.loaded: list[int] = []

    @property
    def labels(self) -> np.ndarray:
        return np.asarray(self._labels)

    def groups(self, key: str) -> np.ndarray:
        return np.asarray(self._groups if key == "gender" else [""] * len(self._labels), object)

    def __getitem__(self, j: int) -> dict[str, Any]:
        self.loaded.append(j)
        if j in self.bad:
            return {"_skipped": f"v{j}: no readable frame"}
        return {
            "image": torch.full((3, self.size, self.size), j, dtype=torch.uint8),
            "pixel_map": torch.full((1, 14, 14), float(j)),
            "dataset": "d",
            "video_id": f"v{j}",
            "frame": 0,
        }


def _batch_of(ds: FakeSet, idx: list[int]) -> dict[str, Any]:
    samples = [ds[j] for j in idx]
    return {
        "image": torch.stack([s["image"] for s in samples]),
        "pixel_map": torch.stack([s["pixel_map"] for s in samples]),
        "label": torch.tensor([ds._labels[j] for j in idx]),
        "attributes": {"gender": [ds._groups[j] for j in idx]},
        "dataset": ["d"] * len(idx),
        "video_id": [f"v{j}" for j in idx],
        "frame": torch.zeros(len(idx), dtype=torch.long),
    }


def test_partners_come_from_the_whole_training_set_of_the_other_group():
    # 40 samples: bona fide 0..19 (even: female, odd: male), attacks 20..39
    labels = [0] * 20 + [1] * 20
    groups = ["female" if j % 2 == 0 else "male" for j in range(40)]
    ds = FakeSet(labels, groups)
    swap = FairSwap(p1=1.0, p2=1.0, p3=1.0, p4=0.0, patch=8, seed=0)
    swap.bind(ds, rank=0)
    batch_idx = [0, 1, 20, 21]  # two bona fide, two attacks
    seen: set[int] = set()
    for _ in range(30):
        out = swap(_batch_of(ds, batch_idx))
        for i, x1 in enumerate(batch_idx):
            j = int(out["fairswap_partner"][i])
            assert labels[j] == 0 and groups[j] != groups[x1] and j != x1
            top, left, size = out["fairswap_box"][i].tolist()
            # x1 keeps its pixels outside the patch and gets the partner's inside
            assert (out["image"][i, :, top : top + size, left : left + size] == j).all()
            assert int((out["image"][i] == x1).sum()) == 3 * (32 * 32 - size * size)
            seen.add(j)
    assert len(seen - set(batch_idx)) >= 8  # partners from outside the batch
    assert (out["label"] == torch.tensor([0, 0, 1, 1])).all()


def test_pool_falls_back_skips_unreadable_and_never_draws_x1():
    ds = FakeSet([0, 0, 0, 1], ["f", "f", "f", "m"], bad=[1])
    pool = PartnerPool(ds, "gender")
    assert pool.candidates(0, "m").tolist() == [0, 1, 2]
    assert pool.candidates(0, "f").tolist() == [0, 1, 2]  # no bona fide male: any group
    assert pool.candidates(1, "m").tolist() == [3]
    rng = np.random.default_rng(0)
    for _ in range(20):
        j, sample = pool.draw(0, "f", ("d", "v0", 0), rng)
        assert j == 2 and sample["video_id"] == "v2"  # not x1 (v0), not unreadable (v1)
    assert pool.draw(1, "m", ("d", "v3", 0), rng) is None  # the only attack is x1 itself
    assert 1 in ds.loaded


def test_small_partial_attack_starts_from_the_pool_partner():
    ds = FakeSet([0, 1] * 8, ["f", "m"] * 8)
    swap = FairSwap(p2=1.0, p3=1.0, p4=1.0, patch=8, seed=1)
    swap.bind(ds)
    out = swap(_batch_of(ds, [1]))
    j = int(out["fairswap_partner"][0])
    top, left, size = out["fairswap_box"][0].tolist()
    assert ds._labels[j] == 0 and (out["image"][0, :, :top, :] == j).all()
    assert (out["image"][0, :, top : top + size, left : left + size] == 1).all()
    y0, y1, x0, x1 = map_box(top, left, size, 32, 32, 14, 14)
    m = out["pixel_map"][0, 0]
    assert (m[y0:y1, x0:x1] == 1).all() and int((m == 1).sum()) == (y1 - y0) * (x1 - x0)
    assert int(out["label"][0]) == 1


@pytest.mark.parametrize("top", [0, 5, 17, 100, 160])
def test_a_64px_patch_marks_16_cells_of_a_14x14_map(top):
    y0, y1, x0, x1 = map_box(top, 160 - top, 64, 224, 224, 14, 14)
    assert (y1 - y0) * (x1 - x0) == 16
    assert 0 <= y0 and y1 <= 14 and 0 <= x0 and x1 <= 14
    assert abs(y0 - top * 14 / 224) <= 0.5 + 1e-9  # the cells the patch covers, rounded
    assert map_box(0, 0, 3, 224, 224, 14, 14) == (0, 1, 0, 1)  # at least one cell


def test_seed_per_rank_and_state_round_trip():
    ds = FakeSet([0, 1] * 4, ["f", "m"] * 4)
    draws = []
    for rank in (0, 1):
        swap = FairSwap(seed=7)
        swap.bind(ds, rank)
        draws.append(swap.rng.random(4).tolist())
        assert draws[-1] == np.random.default_rng(7 + rank).random(4).tolist()
    assert draws[0] != draws[1]
    swap = FairSwap(seed=3)
    swap.bind(ds)
    state = json.loads(json.dumps(swap.state_dict()))  # JSON-able
    first = swap.rng.random(3)
    swap.load_state_dict(state)
    assert np.array_equal(swap.rng.random(3), first)


class _Record:
    """Records FairSWAP's partners and boxes; raises KeyboardInterrupt at call ``kill``."""

    def __init__(self, kill: int | None, log: list) -> None:
        self.kill, self.log, self.calls = kill, log, 0

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.kill is not None and self.calls == self.kill:
            raise KeyboardInterrupt("killed")
        self.log.append((batch["fairswap_partner"].tolist(), batch["fairswap_box"].tolist()))
        return batch


def test_resume_with_fairswap_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    root = tmp_path / "data"
    make_index(root, "tiny", n_real=3, n_fake=3, frames=2, size=32)
    sets = {
        "data.data_root": str(root),
        "train.checkpoint_every_steps": 1,
        "train.save_predictions": "false",
        "train.fairswap.enabled": "true",
        "train.fairswap.p1": 1.0,
        "train.fairswap.p2": 1.0,
        "train.fairswap.patch": 8,
    }

    def run(out: Path, kill: int | None, log: list, resume: Path | None = None) -> Path:
        cfg = _cfg(root, out, "_tiny_dropout", **sets)
        transforms = [*fairswap_transforms(cfg.train), _Record(kill, log)]
        if resume is not None:
            return Trainer.from_run(resume, batch_transforms=transforms).fit()
        return Trainer(cfg, batch_transforms=transforms).fit()

    full_log: list = []
    full = run(tmp_path / "a", None, full_log)
    killed_log: list = []
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", 5, killed_log)
    (killed,) = (tmp_path / "b").iterdir()
    state = read_checkpoint(killed / "checkpoints" / "last.pt")["state"]
    assert len(state["rng"][0]["transforms"]) == 1  # FairSWAP's generator is saved
    resumed_log: list = []
    resumed = run(tmp_path / "b", None, resumed_log, resume=killed)
    assert killed_log + resumed_log == full_log  # same partners and boxes, step by step
    assert any(j >= 0 for partners, _ in full_log for j in partners)
    a = read_checkpoint(full / "checkpoints" / "last.pt")
    b = read_checkpoint(resumed / "checkpoints" / "last.pt")
    for k, v in a["model"].items():
        torch.testing.assert_close(b["model"][k], v, rtol=1e-5, atol=1e-6, msg=k)
    cfg = _cfg(root, tmp_path / "b", "_tiny_dropout", **sets)
    extra = [*fairswap_transforms(cfg.train), FairSwap(seed=1)]  # 2 generators, 1 saved
    with pytest.raises(CheckpointError, match="1 batch-transform states but this run has 2"):
        Trainer.from_run(killed, batch_transforms=extra).fit()
