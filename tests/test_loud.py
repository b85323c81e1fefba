"""Fail loudly, print less, report plainly (issue 23, items 7-9): one-line device errors, a
training progress bar and a loss line every epoch, warnings summarised once, names instead of
reprs, the leaderboard's message, ``--scores logits`` for ``test.py --predictions``, and the
evaluation report (threshold and its source, relative paths, the fairness section)."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from scipy.special import expit, logit

import fairforensics.cli.fairness as fairness_cli
import fairforensics.cli.test as test_cli
from fairforensics.cli.errors import RepeatFilter
from fairforensics.configs import ConfigError
from fairforensics.detectors import build_detector, save_checkpoint
from fairforensics.evaluation.confidence import bootstrap_ci
from fairforensics.evaluation.plots import read_scalars
from fairforensics.evaluation.predictions import Predictions, read_predictions, write_predictions
from fairforensics.evaluation.tables import Result, leaderboard
from fairforensics.fairness.metamorphic.runner import detector_scorer
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import Trainer
from tests.test_train_utils import make_index
from tests.testdata import REPO


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny index (3 real, 3 fake videos per split) and a Meso4 run folder with best.pt."""
    root = tmp_path_factory.mktemp("loud")
    data = root / "data"
    make_index(data, "tiny", n_real=3, n_fake=3, frames=2, size=32)
    run = root / "runs" / "r"
    (run / "checkpoints").mkdir(parents=True)
    torch.manual_seed(0)
    model = build_detector("meso4", input_size=32)
    save_checkpoint(run / "checkpoints" / "best.pt", {"model": model.state_dict(), "meta": {}})
    cfg = {
        "detector": "meso4",
        "model": {"input_size": 32},
        "train": {"test_frame_num": 2},
        "data": {"data_root": str(data), "train_data": ["tiny"]},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    return run


def _no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["train", "test"])
def test_device_cuda_without_cuda_is_one_line_exit_2(run: Path, command: str) -> None:
    data = run.parents[1] / "data"
    if command == "train":
        args = ["--detector", "meso4", "--train-data", "tiny", "--data-root", str(data)]
    else:
        args = ["--run", str(run), "--test-data", "tiny", "--out", str(run.parent / "e")]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "FF_TRACEBACK": ""}
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / f"{command}.py"), *args, "--set", "device=cuda"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=run.parent,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "device cuda: torch" in lines[0] and "sees no CUDA device" in lines[0]
    )
    assert "--set device=cpu" in lines[0] and "Traceback" not in done.stderr


def test_metamorphic_device_fails_before_any_face(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_cuda(monkeypatch)
    with pytest.raises(ConfigError, match=r"device cuda: .*\(--device cpu\)") as info:
        detector_scorer(build_detector("meso4", input_size=32), device="cuda")
    assert "--set" not in str(info.value)


def test_detect_device_error_names_the_option_detect_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """``detect`` takes ``--device``, not ``--set device=``: its one-line error says so."""
    from fairforensics.cli.detect import main as detect_main
    from fairforensics.cli.errors import run_cli

    _no_cuda(monkeypatch)
    monkeypatch.setenv("FF_TRACEBACK", "")
    (tmp_path / "w.pt").write_bytes(b"PK\x03\x04")  # a checkpoint's first bytes: passes preflight
    (tmp_path / "face.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # an image to score
    argv = [str(tmp_path), "--crops", "--detector", "meso4", "--weights", str(tmp_path / "w.pt")]
    with pytest.raises(SystemExit) as info:
        run_cli(detect_main, [*argv, "--device", "cuda"])
    assert info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "sees no CUDA device" in lines[0], lines
    assert "(--device cpu)" in lines[0] and "--set" not in lines[0]


def test_settings_device_error_names_set_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that read the test/train settings (train, test, robustness) take --set device=."""
    from fairforensics.preprocessing.device import resolve_device

    _no_cuda(monkeypatch)
    with pytest.raises(ConfigError, match=r"\(--set device=cpu\)"):
        resolve_device("cuda")


def test_training_shows_a_bar_on_a_terminal_and_a_loss_line_every_epoch(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    sets = {
        "data.data_root": str(run.parents[1] / "data"),
        "data.train_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 2,
        "train.batch_size": 4,
        "train.resolution": 32,
        "train.frame_num": 2,
        "train.log_every_steps": 20,  # more than an epoch's 3 steps: no per-step line
        "output_dir": str(tmp_path),
    }
    overrides = [f"{k}={v}" for k, v in sets.items()]
    for stream, name in ((Terminal(), "tty"), (io.StringIO(), "log")):
        monkeypatch.setattr(sys, "stderr", stream)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="fairforensics.training.trainer"):
            cfg = load_train_config("meso4", overrides=[*overrides, f"run_name={name}"])
            Trainer(cfg).fit()
        lines = [r.getMessage() for r in caplog.records]
        done = [m for m in lines if "done: mean loss" in m]
        assert [m.split(":")[0] for m in done] == ["epoch 0 done", "epoch 1 done"], lines
        assert not any(" step " in m and " loss " in m and "done" not in m for m in lines)
        assert ("epoch 0: 100%" in stream.getvalue()) == (name == "tty")
        assert "loss=" in stream.getvalue() if name == "tty" else stream.getvalue() == ""


def test_repeated_warnings_are_summarised_once() -> None:
    log = logging.getLogger("tests.loud.repeats")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    repeats = RepeatFilter()
    handler.addFilter(repeats)
    log.addHandler(handler)
    log.propagate = False
    log.setLevel(logging.INFO)
    try:
        for k in range(4):
            log.warning("bootstrap %s: %d replicates undefined", f"m{k}", k)
        log.warning("%s", "first free text")
        log.warning("%s", "second free text")
        for path, why in (("a/1.mp4", "file not found"), ("b/2.mp4", "file not found")):
            log.warning("%s: %s", path, why)  # the same kind: paths and numbers aside
        log.warning("%s: %s", "c/3.mp4", "no face")  # another reason, another kind
        log.info("not counted %d", 1)
        log.info("not counted %d", 2)
    finally:
        log.removeHandler(handler)
    shown = stream.getvalue().splitlines()
    assert shown == [
        "bootstrap m0: 0 replicates undefined",
        "first free text",
        "second free text",
        "a/1.mp4: file not found",
        "c/3.mp4: no face",
        "not counted 1",
        "not counted 2",
    ]
    assert repeats.summary() == [
        "3 more warnings like: bootstrap m0: 0 replicates undefined",
        "1 more warning like: a/1.mp4: file not found",
    ]


def test_a_command_prints_a_repeated_warning_once_and_counts_the_rest() -> None:
    code = (
        "import logging\n"
        "from fairforensics.cli.errors import configure_logging, run_cli\n"
        "def main(argv):\n"
        "    configure_logging(level=logging.INFO, format='%(levelname)s %(message)s')\n"
        "    for v in range(5):\n"
        "        logging.getLogger('x').warning('skipped v%d/a.mp4: no face', v)\n"
        "    return 0\n"
        "run_cli(main)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "WARNING skipped v0/a.mp4: no face",
        "WARNING 4 more warnings like: skipped v0/a.mp4: no face",
    ]


def test_bootstrap_notes_are_one_warning_per_evaluation(caplog: pytest.LogCaptureFixture) -> None:
    """bootstrap_ci logs nothing; the evaluation logs its undefined intervals once, by reason."""
    from fairforensics.evaluation.results import _log_interval_notes

    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([0.2, 0.7, 0.4, 0.6, 0.1, 0.9])
    with caplog.at_level(logging.WARNING):
        ci = bootstrap_ci(y, s, np.arange(6), n_boot=200, seed=1)
    assert caplog.records == []
    notes = {m: iv.note for m, iv in ci.items() if iv.note}
    assert {"auc", "ap", "eer"} <= set(notes)
    per_set = {"demo": {"frame": {"ci_notes": notes}, "video": {"ci_notes": notes}}}
    with caplog.at_level(logging.WARNING, logger="fairforensics.evaluation.results"):
        _log_interval_notes(per_set, ["auc", "ap", "eer"])
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith("bootstrap intervals: demo frame: auc, ap, eer interval: fewer than")


def test_tensorboard_logs_are_read_without_info_noise(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_scalar("val/auc", 0.7, 1)
    with caplog.at_level(logging.INFO):
        series = read_scalars(tmp_path)
    assert list(series) == ["val/auc"]
    assert not [r for r in caplog.records if r.name.startswith("tensorboard")]


def test_leaderboard_names_missing_and_undefined_results(caplog: pytest.LogCaptureFixture) -> None:
    results = [
        Result("meso4", "FF-c23", "FF-c23", {"auc": 0.9}),
        Result("meso4", "FF-c23", "DFDC", {"auc": float("nan")}),  # evaluated, one class only
        Result("xception", "FF-c23", "FF-c23", {"auc": 0.95}),  # never evaluated on DFDC
        Result("f3net", "FF-c23", "DFDC", {"auc": 0.6}),
    ]
    with caplog.at_level(logging.WARNING):
        leaderboard(results, "auc")
    text = caplog.text
    assert "meso4 has no defined AUC on DFDC (NaN: e.g. one class only)" in text
    assert "xception was not evaluated on DFDC; its Cross average is left empty" in text
    assert "lacks" not in text and "['" not in text


def _logit_predictions(path: Path) -> np.ndarray:
    rng = np.random.default_rng(0)
    label = np.repeat([0, 1], 6)
    logits = rng.normal(label * 1.5, 1.0)
    write_predictions(
        path,
        Predictions(
            dataset=["d"] * 12,
            video_id=[f"v{k // 2}" for k in range(12)],
            frame=np.tile([0, 1], 6),
            label=label,
            score=logits,
            method=["real"] * 6 + ["fake"] * 6,
            attributes={"gender": ["female", "male"] * 6},
        ),
    )
    return logits


def test_predictions_of_logits_are_accepted_by_test_py(tmp_path: Path) -> None:
    logits = _logit_predictions(tmp_path / "logits.csv")
    out = tmp_path / "eval"
    args = ["--predictions", f"d={tmp_path / 'logits.csv'}", "--name", "x", "--out", str(out)]
    fast = ["--set", "n_boot=0", "--set", "plots=false"]
    assert test_cli.main([*args, *fast, "--scores", "logits"]) == 0
    kept = read_predictions(out / "predictions" / "d.csv")  # probabilities: a leaderboard reads it
    np.testing.assert_allclose(kept.score, expit(logits), rtol=1e-6)
    auc = json.loads((out / "metrics" / "d.json").read_text())["frame"]["metrics"]["auc"]
    from sklearn.metrics import roc_auc_score

    assert auc == pytest.approx(roc_auc_score(kept.label, logits))
    with pytest.raises(ValueError, match="would overwrite it with probabilities"):
        test_cli.main(["--predictions", f"d={out / 'predictions' / 'd.csv'}", "--name", "x",
                       "--out", str(out), *fast, "--scores", "logits"])  # fmt: skip
    with pytest.raises(ConfigError, match="--scores applies to --predictions and --compare"):
        test_cli.main(["--leaderboard", str(out), "--scores", "logits"])


def test_unknown_attribute_names_names(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "p.csv"
    write_predictions(
        path,
        Predictions(
            dataset=["d"] * 4,
            video_id=["a", "b", "c", "e"],
            frame=np.zeros(4, int),
            label=np.array([0, 1, 0, 1]),
            score=expit(logit(np.array([0.2, 0.8, 0.3, 0.6]))),
            method=["real", "fake", "real", "fake"],
            attributes={"gender": ["f", "f", "m", "m"]},
        ),
    )
    args = ["--predictions", str(path), "--attributes", "gender,age", "--out", str(tmp_path / "f")]
    assert fairness_cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: unknown attribute age (asked: gender,age); the predictions' attribute columns "
        "are gender"
    )


def test_report_threshold_relative_paths_and_fairness_section(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """--val-data as a .json path (once x.json.json); the report says which threshold and where
    it came from, its paths are relative (the folders move), and ff-fairness adds its section."""
    moved = tmp_path / "project"
    shutil.copytree(run.parents[1], moved)  # data/ and runs/r
    run, index = moved / "runs" / "r", moved / "data" / "tiny.json"
    sets = ["--set", "n_boot=0", "--set", "plots=false"]
    args = ["--run", str(run), "--test-data", "tiny", "--val-data", str(index), *sets]
    assert test_cli.main(args) == 0
    ev = run / "eval" / "best"
    info = json.loads((ev / "eval.json").read_text())
    assert info["threshold_from"] == "EER rule, frame level, on the val split of tiny"
    assert 0 < info["threshold"] < 1 and info["threshold"] == info["settings"]["threshold"]
    assert info["run"] == "../.." and info["weights_file"] == "../../checkpoints/best.pt"
    assert str(tmp_path) not in (ev / "eval.json").read_text()
    report = (ev / "report.html").read_text()
    shown = f"{info['threshold']:.6g} (EER rule, frame level, on the val split of tiny)"
    assert f"<b>decision threshold</b>: {shown}" in report
    assert "<b>test_data</b>: tiny<br>" in report  # names, not "['tiny']"

    capsys.readouterr()
    fair = run / "fairness"
    args = ["--predictions", str(ev / "predictions" / "tiny.csv"), "--attributes", "gender"]
    args += ["--threshold-from", str(ev / "eval.json"), "--out", str(fair)]
    fast = ["--set", "bootstrap=0", "--set", "permutations=0", "--set", "curve_bootstrap=0"]
    assert fairness_cli.main([*args, *fast]) == 0
    assert f"fairness section added to {ev / 'report.html'}" in capsys.readouterr().out
    assert fairness_cli.main([*args, *fast]) == 0  # a re-run replaces its section
    report = (ev / "report.html").read_text()
    # the metrics, calibration, threshold transfer and fairness sections (the last in the toc too)
    assert report.count("<h2 id='s") == 5 and report.count("Fairness: gender (tiny)") == 2
    assert "<a href='../../fairness/section.html'>" in report
    assert f"decision threshold {info['threshold']:.6g}" in report
    assert '<img src="../../fairness/figures/gender_accuracy.png"' in report
    # move the whole project: every link of the report still resolves
    again = tmp_path / "elsewhere"
    shutil.move(str(moved), again)
    ev = again / "runs" / "r" / "eval" / "best"
    for link in ("../../fairness/section.html", "../../fairness/figures/gender_accuracy.png"):
        assert (ev / link).is_file()
    assert (ev / json.loads((ev / "eval.json").read_text())["weights_file"]).is_file()
