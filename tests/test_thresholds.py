"""The decision threshold (issue 29, item 4): what a run records, how a command resolves it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from fairforensics.configs import ConfigError
from fairforensics.evaluation.metrics import eer, video_scores
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.evaluation.scoring import video_codes
from fairforensics.evaluation.thresholds import (
    RUN_THRESHOLDS,
    DecisionThreshold,
    decision_threshold,
    warn_if_one_class,
    write_run_thresholds,
)
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import Trainer
from tests.test_train_utils import make_index


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    make_index(root, "tiny", n_real=3, n_fake=3, frames=2, size=32)
    return root


def _train(data_root: Path, out: Path, **sets: str) -> Path:
    base = {
        "data.data_root": str(data_root),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 2,
        "train.batch_size": 4,
        "train.resolution": 32,
        "train.frame_num": 2,
        "train.test_frame_num": 2,
        "train.selection_level": "video",
        "output_dir": str(out),
        **sets,
    }
    cfg = load_train_config("meso4", overrides=[f"{k}={v}" for k, v in base.items()])
    return Trainer(cfg).fit()


def _video_eer_threshold(csv: Path) -> float:
    pred = read_predictions(csv)
    y, s, _ = video_scores(pred.label, pred.score, video_codes(pred)[0])
    return eer(y, s)[1]


def test_a_run_records_the_validation_threshold_of_best_and_last(
    data_root: Path, tmp_path: Path
) -> None:
    run = _train(data_root, tmp_path)
    record = json.loads((run / RUN_THRESHOLDS).read_text())
    assert (record["rule"], record["level"], record["val_data"]) == ("eer", "video", ["tiny"])
    summary = json.loads((run / "metrics" / "summary.json").read_text())
    best = record["checkpoints"]["best"]
    last = record["checkpoints"]["last"]
    assert best["step"] == summary["best_step"] and last["step"] == 6
    for entry in (best, last):  # the EER threshold of that evaluation's val predictions, videos
        csv = run / "predictions" / f"val_tiny_step{entry['step']:07d}.csv"
        assert entry["threshold"] == pytest.approx(_video_eer_threshold(csv))
    chosen = decision_threshold(run=run)
    assert chosen.value == pytest.approx(best["threshold"])
    assert "validation threshold of run" in chosen.source and "video level" in chosen.source
    assert decision_threshold(run=run, weights="last").value == pytest.approx(last["threshold"])
    assert decision_threshold(threshold_from=run).value == pytest.approx(best["threshold"])


def test_a_checkpoint_saved_after_its_evaluation_records_none(
    data_root: Path, tmp_path: Path
) -> None:
    # 3 steps per epoch, evaluated every 2: last.pt (step 6) is saved at an evaluated step,
    # but the epoch-0 last.pt (step 3) was not; with 1 epoch, last (step 3) has no threshold
    run = _train(data_root, tmp_path, **{"train.epochs": "1", "train.eval_every_steps": "2"})
    record = json.loads((run / RUN_THRESHOLDS).read_text())
    assert set(record["checkpoints"]) == {"best"} and record["checkpoints"]["best"]["step"] == 2
    chosen = decision_threshold(run=run, weights="last")
    assert chosen.value == 0.5
    assert chosen.source.startswith("0.5 (default: run") and "last checkpoint" in chosen.source


def test_resolution_order_and_sources(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run_thresholds(
        run, "frame", ["demo"], {"best": {"threshold": 0.71, "step": 9, "epoch": 2}, "last": None}
    )
    assert decision_threshold(run=run) == DecisionThreshold(
        0.71,
        f"validation threshold of run {run} (best checkpoint, step 9; EER rule, frame level, "
        "on demo/val)",
    )
    assert decision_threshold(run=run, threshold=0.6) == DecisionThreshold(0.6, "--threshold 0.6")
    evaluation = tmp_path / "eval.json"
    evaluation.write_text(
        json.dumps({"settings": {"threshold": 0.42}, "threshold_from": "EER rule on x/val"})
    )
    assert decision_threshold(run=run, threshold_from=evaluation) == DecisionThreshold(
        0.42, f"eval.json of {evaluation}: EER rule on x/val"
    )
    bare = tmp_path / "older_run"
    bare.mkdir()
    assert decision_threshold(run=bare) == DecisionThreshold(
        0.5, f"0.5 (default: run {bare} records no validation threshold)"
    )
    assert decision_threshold() == DecisionThreshold(0.5, "0.5 (default)")
    with pytest.raises(ConfigError, match="not both"):
        decision_threshold(threshold=0.5, threshold_from=evaluation)
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        decision_threshold(threshold=1.5)
    with pytest.raises(ConfigError, match="records no validation threshold"):
        decision_threshold(threshold_from=bare)
    with pytest.raises(ConfigError, match="no such eval.json"):
        decision_threshold(threshold_from=tmp_path / "missing.json")


def test_warn_if_one_class(caplog: pytest.LogCaptureFixture) -> None:
    t = DecisionThreshold(0.5, "0.5 (default)")
    with caplog.at_level(logging.WARNING):
        assert warn_if_one_class(np.array([0.61, 0.9, 0.7]), t, "demo/test", y_true=[0, 1, 1])
    assert "all 3 decisions are fake" in caplog.text and "0.61 to 0.9" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert warn_if_one_class([0.1, 0.2], t, "x", y_true=[1, 0])
        assert not warn_if_one_class([0.1, 0.7], t, "x", y_true=[1, 0])
        assert not warn_if_one_class([], t, "x", y_true=[])
    assert "all 2 decisions are real" in caplog.text and caplog.text.count("WARNING") == 1


def test_one_class_decisions_on_a_one_class_set_are_not_flagged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 40, item 6: only real files, all decided real, is right: no warning. Without
    labels (``detect``) the decisions are stated as information, with no advice."""
    t = DecisionThreshold(0.5, "0.5 (default)")
    with caplog.at_level(logging.INFO):
        assert not warn_if_one_class([0.1, 0.2, 0.3], t, "originals", y_true=[0, 0, 0])
        assert caplog.records == []
        assert not warn_if_one_class([0.1, 0.2], t, "my photos")
    (record,) = caplog.records
    assert record.levelno == logging.INFO and "all 2 decisions are real" in record.message
    assert "threshold" in record.message and "--threshold" not in record.message


def test_fairness_decides_at_the_evaluation_threshold_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib

    from fairforensics.evaluation.predictions import write_predictions
    from tests.test_fairness_report import _predictions

    cli = importlib.import_module("fairforensics.cli.fairness")
    pred = _predictions(n_videos=20, frames=1)
    evaluation = tmp_path / "eval"
    csv = evaluation / "predictions" / "demo.csv"
    write_predictions(csv, pred)
    (evaluation / "eval.json").write_text(
        json.dumps({"settings": {"threshold": 0.3}, "threshold_from": "EER rule on demo/val"})
    )
    fast = ["--set", "bootstrap=0", "--set", "permutations=0", "--set", "curve_bootstrap=0"]
    common = ["--predictions", str(csv), "--attributes", "gender", "--no-figures", *fast]

    def run(*args: str) -> tuple[int, dict, str]:
        out = tmp_path / f"fair{len(args)}"
        rc = cli.main([*common, "--out", str(out), *args])
        err = capsys.readouterr().err
        report = json.loads((out / "fairness.json").read_text()) if rc == 0 else {}
        return rc, report.get("gender", {}), err

    rc, report, err = run()  # the eval.json beside the predictions
    source = f"eval.json of {evaluation / 'eval.json'}: EER rule on demo/val"
    assert rc == 0 and f"decision threshold: 0.3 ({source})" in err
    assert (report["threshold"], report["threshold_from"]) == (0.3, source)
    female = pred.attributes["gender"] == "female"
    assert report["groups"]["female"]["acc"] == pytest.approx(
        float(np.mean((pred.score[female] >= 0.3) == pred.label[female]))
    )
    rc, report, err = run("--threshold", "0.6")
    assert rc == 0 and report["threshold"] == 0.6 and "decision threshold: 0.6 (--threshold" in err
    rc, report, err = run("--threshold", "1")  # every decision "real": said so
    assert rc == 0 and "demo.csv: all 20 decisions are real" in caplog.text
    rc, _, err = run("--set", "threshold=0.4", "--threshold", "0.6")
    assert rc == 2 and "give one" in err
    rc, report, err = run("--set", "threshold=0.4")
    assert rc == 0 and report["threshold_from"] == "threshold 0.4 of the report settings"
