"""The Table-3 sweep runner (benchmarks.sweep, scripts/benchmark.py)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fairforensics.benchmarks import sweep as sw

REPO = Path(__file__).resolve().parents[1]


def _recorder(calls: list[list[str]]):
    def runner(cmd: list[str]) -> None:
        calls.append(cmd)
        if "--out" in cmd:  # scripts/test.py: leave an evaluation folder behind
            Path(cmd[cmd.index("--out") + 1]).mkdir(parents=True, exist_ok=True)

    return runner


def test_commands_launchers_and_resume_without_running(tmp_path: Path) -> None:
    s = sw.Sweep(["meso4", "xception"], tmp_path, train_data=["demo"], test_data=["a", "b"], gpus=2)
    train = sw.train_command(s, "meso4")
    assert train[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert train[5:8] == ["-m", "fairforensics.cli", "train"]  # no checkout path: works installed
    assert sw.eval_command(s, "meso4")[:4] == [sys.executable, "-m", "fairforensics.cli", "test"]
    assert train[train.index("--output-dir") + 1] == str(tmp_path / "meso4")
    assert "run_name=run" in train and "--config" in train
    assert sw.launcher(0) == [sys.executable]
    assert sw.eval_command(s, "meso4")[-2:] == ["--out", str(tmp_path / "meso4" / "eval")]
    calls: list[list[str]] = []
    assert sw.run_one(s, "meso4", _recorder(calls)) and len(calls) == 2
    record = json.loads((tmp_path / "meso4" / sw.DONE).read_text())
    assert record["commands"] == calls
    assert not sw.run_one(s, "meso4", _recorder(calls)) and len(calls) == 2  # finished: skipped
    (tmp_path / "xception" / "run").mkdir(parents=True)  # killed mid-run: no completion record
    (tmp_path / "xception" / "run" / "stale").write_text("x")
    assert sw.run_one(s, "xception", _recorder(calls)) and len(calls) == 4
    assert not (tmp_path / "xception" / "run" / "stale").exists()


def test_failed_run_leaves_no_completion_record(tmp_path: Path) -> None:
    s = sw.Sweep(["meso4"], tmp_path, train_data=["demo"])

    def failing(cmd: list[str]) -> None:
        raise sw.SweepError("command failed with exit code 1")

    with pytest.raises(sw.SweepError, match="meso4: command failed"):
        sw.run_one(s, "meso4", failing)
    assert not (tmp_path / "meso4" / sw.DONE).exists()


def test_detector_names_and_weights_dir(tmp_path: Path) -> None:
    every = sw.resolve_detectors(["all"])
    assert {"ucf", "xray", "fwa"} <= set(every) and "lbp_mlp" not in every
    with pytest.raises(sw.SweepError, match="unknown detectors nope; choose from"):
        sw.resolve_detectors(["meso4", "nope"])
    with pytest.raises(sw.SweepError, match="no DeepfakeBench checkpoint, tried"):
        sw.deepfakebench_weights(tmp_path, "ucf")
    (tmp_path / "facexray_best.pth").write_bytes(b"")
    assert sw.deepfakebench_weights(tmp_path, "xray") == tmp_path / "facexray_best.pth"
    s = sw.Sweep(["xray"], tmp_path / "out", weights_dir=tmp_path, test_data=["CDFv2"])
    calls: list[list[str]] = []
    sw.run_one(s, "xray", _recorder(calls))
    assert len(calls) == 1 and calls[0][calls[0].index("--weights") + 1].endswith(
        "facexray_best.pth"
    )


def test_models_dir_tests_the_packages_and_trains_nothing(tmp_path: Path) -> None:
    """Issue 39: the sweep's test half (and its robustness step) loads model packages."""
    (tmp_path / "pkgs" / "xray").mkdir(parents=True)
    s = sw.Sweep(["xray"], tmp_path / "out", models_dir=tmp_path / "pkgs", test_data=["CDFv2"],
                 robustness=True)  # fmt: skip
    calls: list[list[str]] = []
    sw.run_one(s, "xray", _recorder(calls))
    assert [c[3] for c in calls] == ["test", "robustness"]  # nothing trained
    for cmd in calls:
        assert cmd[cmd.index("--model") + 1] == str(tmp_path / "pkgs" / "xray")
        assert "--run" not in cmd and "--weights" not in cmd
    both = sw.Sweep(["xray"], tmp_path / "o2", models_dir=tmp_path, weights_dir=tmp_path)
    with pytest.raises(sw.SweepError, match="not both"):
        sw.run_sweep(both, _recorder([]))


def test_video_detectors_read_the_clip_indexes(tmp_path: Path) -> None:
    import tests.clip_detectors  # noqa: F401  (registers _tiny_clip, a video detector)

    s = sw.Sweep(
        ["meso4", "_tiny_clip"], tmp_path, train_data=["demo"], data_root="frames",
        clip_data_root="clips", imports=["tests.clip_detectors"],
    )  # fmt: skip
    for detector, root in (("meso4", "frames"), ("_tiny_clip", "clips")):
        for cmd in (sw.train_command(s, detector), sw.eval_command(s, detector)):
            assert cmd[cmd.index("--data-root") + 1] == root
            assert cmd[-2:] == ["--import", "tests.clip_detectors"]
    same = sw.Sweep(["_tiny_clip"], tmp_path, data_root="frames")  # no clip root: the same data
    assert "frames" in sw.train_command(same, "_tiny_clip")


def test_robustness_step_writes_into_the_evaluation_folder(tmp_path: Path) -> None:
    s = sw.Sweep(
        ["meso4"], tmp_path, train_data=["demo"], test_data=["demo"], data_root="d",
        robustness=True, source_root="raw", robustness_args=["--types", "GB,VC"],
    )  # fmt: skip
    calls: list[list[str]] = []
    assert sw.run_one(s, "meso4", _recorder(calls)) and len(calls) == 3
    cmd = calls[2]
    assert cmd[:4] == [sys.executable, "-m", "fairforensics.cli", "robustness"]
    assert cmd[cmd.index("--run") + 1] == str(tmp_path / "meso4" / "run")
    assert cmd[cmd.index("--test-data") + 1] == "demo" and "--data-root" in cmd
    assert cmd[cmd.index("--source-root") + 1] == "raw" and "GB,VC" in cmd
    assert cmd[cmd.index("--out") + 1] == str(tmp_path / "meso4" / "eval" / "robustness")


def test_the_sweep_writes_frame_and_video_leaderboards(tmp_path: Path) -> None:
    """Issue 31, item 6: the video-level leaderboard docs/evaluation.md describes."""
    from fairforensics.evaluation.predictions import write_predictions
    from fairforensics.evaluation.results import evaluate_prediction_files
    from fairforensics.evaluation.settings import load_test_config
    from tests.test_eval_tables import predictions_with_auc

    def runner(cmd: list[str]) -> None:
        if "--out" in cmd:  # scripts/test.py: an evaluation folder with predictions
            out = Path(cmd[cmd.index("--out") + 1])
            src = out.parent / "demo.csv"
            write_predictions(src, predictions_with_auc(0.75, "demo"))
            cfg = load_test_config(overrides=["n_boot=0", "plots=false", "report=false"])
            evaluate_prediction_files({"demo": src}, out, cfg, out.parent.name, "demo")

    s = sw.Sweep(
        ["meso4", "xception"], tmp_path, train_data=["demo"], test_data=["demo"], costs=False
    )
    board = sw.run_sweep(s, runner)
    for level in ("frame", "video"):
        rows = json.loads((board / f"leaderboard_{level}_auc.json").read_text())["rows"]
        assert {r["Detector"] for r in rows} == {"meso4", "xception", "constant", "random"}
    assert "AUC (video level)" in (board / "report.html").read_text()


def test_every_evaluation_decides_at_its_runs_threshold(tmp_path: Path) -> None:
    """Issue 46, item 1: a trained run is tested with ``--run`` and nothing that overrides its
    validation threshold; DeepfakeBench's checkpoints get one chosen on the validation data
    (``--val-data``); the robustness step decides at the threshold its evaluation used."""
    import importlib

    test_cli = importlib.import_module("fairforensics.cli.test")
    trained = sw.Sweep(["meso4"], tmp_path / "a", train_data=["demo"], val_data=["v1", "v2"],
                       test_data=["demo"], robustness=True)  # fmt: skip
    cmd = sw.eval_command(trained, "meso4")
    args = test_cli.parse_args(cmd[4:])
    assert args.run == tmp_path / "a" / "meso4" / "run" and args.val_data is None
    assert not args.overrides and not args.config  # the run's threshold is not overridden
    (tmp_path / "facexray_best.pth").write_bytes(b"")
    released = sw.Sweep(["xray"], tmp_path / "b", weights_dir=tmp_path, train_data=["FF-c23"],
                        test_data=["CDFv2"], robustness=True)  # fmt: skip
    args = test_cli.parse_args(sw.eval_command(released, "xray")[4:])
    assert args.val_data == ["FF-c23"]  # no val data given: the training data's val split
    args = test_cli.parse_args(sw.eval_command(replace(released, val_data=["v"]), "xray")[4:])
    assert args.val_data == ["v"]
    for sweep, detector in ((trained, "meso4"), (released, "xray")):
        robust = sw.robustness_command(sweep, detector)
        assert "--val-data" not in robust and "v1" not in robust
        parsed = importlib.import_module("fairforensics.cli.robustness").parse_args(robust[4:])
        assert parsed.threshold_from == sweep.folder(detector) / "eval" / "eval.json"
        assert parsed.val_data is None
