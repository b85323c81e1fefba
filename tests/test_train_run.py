"""End-to-end trainer runs on tiny real-face data: run dir, reload, resume, DDP, requires, NaN."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from torch import nn
from torch.nn import functional as F

from fairforensics.configs import ConfigError
from fairforensics.configs.crop import CropSpec
from fairforensics.detectors import (
    Detector,
    build_detector,
    load_detector_file,
    read_checkpoint,
    register_detector,
)
from fairforensics.evaluation.predict import predict_images, predict_index
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.evaluation.runs import load_run
from fairforensics.fairness.fairswap import fairswap_transforms
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import NonFiniteLossError, Trainer
from tests.test_cli import run_command
from tests.test_train_utils import face, make_index


@register_detector("_tiny_linear")
class TinyLinear(Detector):
    """Pooled pixels -> linear: no batch norm and no dropout (exact DDP comparisons)."""

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        self.fc = nn.Linear(3 * 4 * 4, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat = F.adaptive_avg_pool2d(batch["image"], 4).flatten(1)
        return self.outputs(self.fc(feat), feat)


@register_detector("_tiny_mask")
class TinyMask(TinyLinear):
    """Also predicts the manipulation mask (an FFD-like detector needing masks/landmarks)."""

    requires = frozenset({"mask", "landmarks", "method_label"})

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        self.seg = nn.Conv2d(3, 1, 3, padding=1)
        self.method = nn.Linear(3 * 4 * 4, 3)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        out = super().forward(batch)
        out["mask_logits"] = self.seg(batch["image"])
        out["method_logits"] = self.method(out["feat"])
        return out

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        assert batch["landmarks"].shape[1:] == (68, 2)
        ce = F.cross_entropy(out["logits"], batch["label"])
        seg = F.binary_cross_entropy_with_logits(out["mask_logits"], batch["mask"])
        meth = F.cross_entropy(out["method_logits"], batch["method_label"])
        return {"total": ce + seg + meth, "ce": ce, "seg": seg, "method": meth}


@register_detector("_tiny_pairs")
class TinyPairs(TinyLinear):
    requires = frozenset({"pairs"})

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        label, partner = batch["label"], batch["pair_index"]
        assert (label[partner] != label).all() and (
            partner[partner] == torch.arange(len(label))
        ).all()
        return super().loss(batch, out)


@register_detector("_tiny_sbi")
class TinySBI(TinyMask):
    requires = frozenset({"blend:sbi", "mask", "landmarks", "method_label"})


@register_detector("_tiny_xray")
class TinyXray(TinyLinear):
    requires = frozenset({"blend:xray"})

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        xray = batch["xray"]
        assert xray.shape[1] == 1 and float(xray.min()) >= 0 and float(xray.max()) <= 1
        fake = batch["label"] == 1
        assert float(xray[~fake].abs().sum()) == 0 and float(xray[fake].sum()) > 0
        return super().loss(batch, out)


@register_detector("_tiny_dropout")
class TinyDropout(TinyLinear):
    """Dropout draws from the global RNG, so an exact resume must restore it."""

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat = F.dropout(F.adaptive_avg_pool2d(batch["image"], 4).flatten(1), 0.5, self.training)
        return self.outputs(self.fc(feat), feat)


@register_detector("_tiny_nan")
class TinyNaN(TinyLinear):
    """Its loss turns NaN at the 4th training step."""

    calls = 0

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        losses = super().loss(batch, out)
        TinyNaN.calls += 1
        if TinyNaN.calls >= 4:
            losses["total"] = losses["total"] * float("nan")
        return losses


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    make_index(root, "tiny", n_real=3, n_fake=3, frames=2, size=32)
    return root


def _cfg(data_root: Path, out: Path, detector: str = "meso4", **sets: Any):
    base = {
        "data.data_root": str(data_root),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.test_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 2,
        "train.batch_size": 4,
        "train.resolution": 32,
        "train.frame_num": 2,
        "train.test_frame_num": 2,
        "train.log_every_steps": 1,
        "output_dir": str(out),
    }
    base.update(sets)
    return load_train_config(detector, overrides=[f"{k}={v}" for k, v in base.items()])


@pytest.mark.parametrize("coupled", [False, True])
def test_predicted_scores_do_not_depend_on_the_batch_size(data_root: Path, coupled: bool) -> None:
    """The evaluation path (predict_index, predict_images: eval mode, no augmentation) gives a
    frame one score in batches of 1 and of 5, for SIA too (its default attention is per face);
    DeepfakeBench's batch-coupled SIA (the parity option) is what would break it."""
    torch.manual_seed(0)
    sia = build_detector("sia", pretrained=False, input_size=32, batch_coupled_attention=coupled)
    one = predict_index(sia, data_root / "tiny.json", "val", frame_num=2, batch_size=1)
    five = predict_index(sia, data_root / "tiny.json", "val", frame_num=2, batch_size=5)
    images = [face(i, 40) for i in range(3)]
    alone, together = predict_images(sia, images, batch_size=1), predict_images(sia, images, 3)
    assert sia.training  # the mode it was in is restored
    gap = max(np.abs(five.score - one.score).max(), np.abs(together - alone).max())
    assert (gap > 1e-5) if coupled else (gap <= 1e-5), gap


def test_meso4_two_epochs_run_dir_and_reload(data_root: Path, tmp_path: Path) -> None:
    run = Trainer(_cfg(data_root, tmp_path)).fit()
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert {"detector", "model", "train", "data"} <= set(cfg)
    assert cfg["model"]["input_size"] == 32 and cfg["train"]["optimizer"]["lr"] == 2e-4
    assert cfg["crop"] is None  # the crop of its training data: "tiny" does not record one
    meta = json.loads((run / "meta.json").read_text())
    assert meta["seed"] == 1024 and meta["packages"]["torch"] and "git_commit" in meta
    for name in ("best", "last"):
        ckpt = torch.load(run / "checkpoints" / f"{name}.pt", weights_only=True)
        assert set(ckpt) >= {"model", "meta"} and ckpt["meta"]["detector"] == "meso4"
    evals = sorted((run / "metrics").glob("step*.json"))
    assert len(evals) == 2  # one per epoch
    m = json.loads(evals[-1].read_text())
    assert {"frame/auc", "frame/ap", "frame/eer", "frame/acc", "video/auc"} <= set(m["val"]["tiny"])
    assert m["val"]["tiny"]["n_frames"] == 12 and m["val"]["tiny"]["n_videos"] == 6
    summary = json.loads((run / "metrics" / "summary.json").read_text())
    assert summary["selection"] == "val" and summary["best_step"] in (3, 6)
    assert list((run / "tensorboard").glob("events.out.tfevents*"))
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["replaced_frames"] == [] and set(manifest["epochs"]) == {"0", "1"}

    detector, resolved = load_run(run, "best")
    assert resolved["detector"] == "meso4" and not detector.training
    saved = read_predictions(run / "predictions" / f"val_tiny_step{summary['best_step']:07d}.csv")
    again = predict_index(detector, data_root / "tiny.json", "val", frame_num=2, batch_size=5)
    assert len(saved) == len(again) == 12
    np.testing.assert_allclose(np.sort(again.score), np.sort(saved.score), rtol=1e-5, atol=1e-6)
    assert set(again.attributes) == {"gender"}
    same = load_detector_file("meso4", run / "checkpoints" / "last.pt")
    imgs = [face(i, 40) for i in range(3)]
    scores = predict_images(same, imgs, batch_size=2)
    assert scores.shape == (3,) and ((scores >= 0) & (scores <= 1)).all()
    with pytest.raises(ValueError, match="uint8"):
        predict_images(same, [np.zeros((8, 8), np.float32)])


class _KillAt:
    """A batch transform that dies at call ``n`` (a run killed mid-epoch)."""

    def __init__(self, n: int | None) -> None:
        self.n, self.calls = n, 0

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        assert batch["image"].dtype == torch.uint8 and batch["image"].dim() == 4
        if self.n is not None and self.calls == self.n:
            raise KeyboardInterrupt("killed")
        return batch


def test_resume_mid_epoch_matches_an_uninterrupted_run(data_root: Path, tmp_path: Path) -> None:
    sets = {"train.checkpoint_every_steps": 1, "train.save_predictions": "false"}
    full = Trainer(_cfg(data_root, tmp_path / "a", "_tiny_dropout", **sets)).fit()
    with pytest.raises(KeyboardInterrupt):
        killed_cfg = _cfg(data_root, tmp_path / "b", "_tiny_dropout", **sets)
        Trainer(killed_cfg, batch_transforms=[_KillAt(5)]).fit()
    (killed,) = (tmp_path / "b").iterdir()
    state = read_checkpoint(killed / "checkpoints" / "last.pt")["state"]
    assert (state["epoch"], state["batch_in_epoch"], state["step"]) == (1, 1, 4)
    resumed = Trainer.from_run(killed, batch_transforms=[_KillAt(None)]).fit()
    a = read_checkpoint(full / "checkpoints" / "last.pt")
    b = read_checkpoint(resumed / "checkpoints" / "last.pt")
    assert a["state"]["step"] == b["state"]["step"] == 6
    for k, v in a["model"].items():
        torch.testing.assert_close(b["model"][k], v, rtol=1e-5, atol=1e-6, msg=k)
    assert json.loads((full / "metrics" / "summary.json").read_text())[
        "best_value"
    ] == pytest.approx(json.loads((resumed / "metrics" / "summary.json").read_text())["best_value"])


def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(
    data_root: Path, tmp_path: Path
) -> None:
    TinyNaN.calls = 0
    cfg = _cfg(data_root, tmp_path, "_tiny_nan")
    with pytest.raises(NonFiniteLossError, match="non-finite loss at epoch 1, step 4"):
        Trainer(cfg).fit()
    (run,) = tmp_path.iterdir()
    last = read_checkpoint(run / "checkpoints" / "last.pt")
    assert last["state"]["step"] == 3
    assert all(torch.isfinite(v).all() for v in last["model"].values())


@pytest.mark.parametrize("detector", ["_tiny_mask", "_tiny_pairs", "_tiny_sbi", "_tiny_xray"])
def test_detectors_with_requires_train(data_root: Path, tmp_path: Path, detector: str) -> None:
    res = 64 if detector in ("_tiny_sbi", "_tiny_xray") else 32
    cfg = _cfg(data_root, tmp_path, detector, **{"train.epochs": 1, "train.resolution": res})
    run = Trainer(cfg).fit()
    last = read_checkpoint(run / "checkpoints" / "last.pt")
    assert last["state"]["step"] == (3 if detector == "_tiny_mask" else 1)


def test_fairswap_and_class_balanced_sampler(data_root: Path, tmp_path: Path) -> None:
    cfg = _cfg(
        data_root,
        tmp_path,
        "_tiny_linear",
        **{
            "train.epochs": 1,
            "train.fairswap.enabled": "true",
            "train.fairswap.patch": 8,
            "train.sampler": "class_balanced",
            "train.selection": "test-top3",
        },
    )
    with pytest.raises(ConfigError, match="fairswap_transforms"):
        Trainer(cfg)
    trainer = Trainer(cfg, batch_transforms=fairswap_transforms(cfg.train))
    run = trainer.fit()
    assert type(trainer.batch_transforms[-1]).__name__ == "FairSwap"
    summary = json.loads((run / "metrics" / "summary.json").read_text())
    assert summary["selection"] == "test-top3" and "tiny" in summary["test_top3"]


def test_bad_configs_fail_early(data_root: Path, tmp_path: Path) -> None:
    from fairforensics.configs import ConfigError

    with pytest.raises(ConfigError, match="val_data"):
        Trainer(_cfg(data_root, tmp_path, **{"data.val_data": "[]"}))
    with pytest.raises(ConfigError, match="train_data"):
        Trainer(_cfg(data_root, tmp_path, **{"data.train_data": "[]"}))
    with pytest.raises(Exception, match="missing.json"):
        Trainer(_cfg(data_root, tmp_path, **{"data.train_data": "[missing]"})).fit()
    with pytest.raises(ConfigError, match="fewer than one batch"):
        Trainer(_cfg(data_root, tmp_path, **{"train.batch_size": 64})).fit()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker(rank: int, world: int, port: int, data_root: str, out: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE=str(world),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
    )
    torch.set_num_threads(1)
    Trainer(_cfg(Path(data_root), Path(out), "_tiny_linear", **{"run_name": "ddp"})).fit()
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_ddp_two_processes_match_one_process(data_root: Path, tmp_path: Path) -> None:
    single = Trainer(_cfg(data_root, tmp_path / "one", "_tiny_linear")).fit()
    torch.multiprocessing.spawn(
        _ddp_worker, args=(2, _free_port(), str(data_root), str(tmp_path / "two")), nprocs=2
    )
    a = read_checkpoint(single / "checkpoints" / "last.pt")
    b = read_checkpoint(tmp_path / "two" / "ddp" / "checkpoints" / "last.pt")
    assert a["state"]["step"] == b["state"]["step"] == 6
    for k, v in a["model"].items():
        torch.testing.assert_close(b["model"][k], v, rtol=1e-5, atol=1e-6, msg=k)
    m1 = json.loads(sorted((single / "metrics").glob("step*.json"))[-1].read_text())
    m2 = json.loads(
        sorted((tmp_path / "two" / "ddp" / "metrics").glob("step*.json"))[-1].read_text()
    )
    assert m2["val"]["tiny"]["n_frames"] == 12  # gathered from both ranks
    assert m1["val"]["tiny"]["frame/auc"] == pytest.approx(m2["val"]["tiny"]["frame/auc"], abs=1e-6)


def test_train_script(data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "train_script", Path(__file__).parents[1] / "scripts" / "train.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    common = [
        "--detector",
        "_tiny_linear",
        "--data-root",
        str(data_root),
        "--output-dir",
        str(tmp_path),
    ]
    sets = [
        "--set",
        "train.epochs=1",
        "--set",
        "train.batch_size=4",
        "--set",
        "train.resolution=32",
        "--set",
        "data.num_workers=0",
        "--set",
        "train.frame_num=2",
    ]
    assert script.main([*common, "--train-data", "tiny", "--val-data", "tiny", *sets]) == 0
    (run,) = tmp_path.iterdir()
    assert yaml.safe_load((run / "config.yaml").read_text())["data"]["val_data"] == ["tiny"]
    assert script.main(["--resume", str(run)]) == 0  # already finished: nothing left to do
    # --resume --set: epochs (safe) extends the run; other keys and flags are refused, each an
    # "error: ..." line with exit code 2 like every command's input errors
    for argv, message in (
        (["--resume", str(run), "--set", "train.lr=0.5"], "train.lr cannot change in a resumed"),
        (["--resume", str(run), "--train-data", "tiny"], "--train-data cannot be combined"),
        ([*common, "--train-data", "nope", *sets], "nope.json"),
        ([*common, "--train-data", "tiny", "--set", "train.lr=1"], "unknown key 'train.lr'"),
    ):
        code, err = run_command(script.main, argv, capsys)
        assert code == 2 and err.startswith("error: ") and message in err, err
        assert len(err.splitlines()) == 1, err
    assert script.main(["--resume", str(run), "--set", "train.epochs=2"]) == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["train"]["epochs"] == 2
    assert set(json.loads((run / "manifest.json").read_text())["epochs"]) == {"0", "1"}


@pytest.mark.parametrize(
    ("selection", "patience", "best_epoch", "epochs_run"),
    [("val", None, 1, 3), ("test-top3", None, 2, 3), ("val", 1, 0, 2)],
)
def test_selection_picks_the_scripted_epoch(
    data_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    selection: str,
    patience: int | None,
    best_epoch: int,
    epochs_run: int,
) -> None:
    from fairforensics.training import trainer as T

    script = {
        "val": iter([0.6, 0.9, 0.7] if patience is None else [0.9, 0.5, 0.4]),
        "test": iter([0.9, 0.5, 0.99]),
    }
    calls: list[str] = []

    def scripted(preds: Any) -> dict[str, float]:
        split = "val" if len(calls) % 2 == 0 else "test"
        calls.append(split)
        return {"frame/auc": next(script[split]), "n_frames": float(len(preds))}

    monkeypatch.setattr(T, "detection_metrics", scripted)
    sets = {"train.epochs": 3, "train.selection": selection, "train.save_predictions": "false"}
    if patience:
        sets["train.patience"] = patience
    run = Trainer(_cfg(data_root, tmp_path, "_tiny_linear", **sets)).fit()
    best = read_checkpoint(run / "checkpoints" / "best.pt")
    assert best["meta"]["epoch"] == best_epoch and best["meta"]["step"] == 3 * (best_epoch + 1)
    assert read_checkpoint(run / "checkpoints" / "last.pt")["state"]["epoch"] == epochs_run
    assert len(list((run / "metrics").glob("step*.json"))) == epochs_run


def test_bench_train_reports_every_rate(data_root: Path) -> None:
    from fairforensics.benchmarks.train import bench_train

    out = bench_train(
        "_tiny_linear",
        batch_size=4,
        resolution=32,
        steps=2,
        warmup=1,
        num_workers=0,
        index=data_root / "tiny.json",
        rounds=2,
    )
    rates = [k for k in out if k.endswith("_per_s")]
    assert len(rates) == 12 and all(out[k] > 0 for k in rates)
    assert out["frames"] == 12 and 0 < out["loader_keeps_fraction"]
    assert [len(v) for v in out["step_rounds"].values()] == [2, 2]
    assert out["step_speedup"] == round(
        out["step_images_per_s"] / out["reference_step_images_per_s"], 3
    )


def test_reference_step_trains_and_reports_batch_metrics() -> None:
    from fairforensics.benchmarks.train import reference_step

    torch.manual_seed(0)
    model = build_detector("meso4", input_size=32).train()
    before = [p.detach().clone() for p in model.parameters()]
    step = reference_step(model, torch.optim.Adam(model.parameters(), lr=1e-3))
    batch = {"image": torch.rand(4, 3, 32, 32), "label": torch.tensor([0, 1, 0, 1])}
    metrics = step(batch, torch.device("cpu"))
    assert set(metrics) == {"loss", "acc", "ap", "auc", "eer"}
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    one_class = step(
        {"image": batch["image"], "label": torch.zeros(4, dtype=torch.long)}, torch.device("cpu")
    )
    assert set(one_class) == {"loss", "acc"}


def test_a_run_records_the_crop_of_its_training_data(data_root: Path, tmp_path: Path) -> None:
    """Issue 29 item 3: the run's config says which crop its weights expect (the training data's,
    not the detector YAML's original one; unknown when the index does not record it, as in
    test_meso4_two_epochs_run_dir_and_reload)."""
    index = json.loads((data_root / "tiny.json").read_text())
    index.update(schema_version=3, dataset="tinymeso")
    index["crop"] = {"method": "mesonet", "scale": 2.86, "size": 32}
    (data_root / "tinymeso.json").write_text(json.dumps(index))
    sets = {"data.train_data": "[tinymeso]", "data.val_data": "[]", "data.test_data": "[]"}
    cfg = _cfg(data_root, tmp_path / "a", **sets, **{"train.epochs": 1})
    assert cfg.crop == CropSpec("template", 1.3, 256)  # meso4.yaml: DeepfakeBench's weights
    run = Trainer(cfg).fit()
    assert yaml.safe_load((run / "config.yaml").read_text())["crop"] == index["crop"]
    assert load_run(run, "last")[1]["crop"] == index["crop"]
