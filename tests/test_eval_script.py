"""scripts/test.py end to end: a run directory with a tiny Meso4 on real faces, --detector with a
weights file, --predictions of another tool, and --leaderboard over the evaluation folders."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import yaml

from fairforensics.detectors import build_detector, save_checkpoint
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index
from tests.testdata import CELEBRITIES

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "test.py"


def script():
    spec = importlib.util.spec_from_file_location("test_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A 'tiny' index of real faces (3 real, 3 'fake' videos of 2 frames) and a Meso4 run dir."""
    root = tmp_path_factory.mktemp("evalscript")
    data = root / "data"
    faces = sorted(CELEBRITIES.glob("img*.jpg"))[:6]
    videos = []
    for v, path in enumerate(faces):
        img = cv2.resize(cv2.imread(str(path)), (64, 64), interpolation=cv2.INTER_AREA)
        method = "DF" if v % 2 else "real"
        rel = [f"tiny/{method}/{v:03d}/frames/{f:03d}.png" for f in range(2)]
        for f, r in enumerate(rel):
            (data / r).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(data / r), np.roll(img, 3 * f, axis=1))
        videos.append(
            VideoEntry(
                f"{v:03d}",
                v % 2,
                method,
                "test" if v < 6 else "val",
                rel,
                attributes={"gender": "female"},
            )
        )
    write_index(DatasetIndex("tiny", "deepfake", videos, root=data), data / "tiny.json")
    torch.manual_seed(0)
    model = build_detector("meso4", input_size=64)
    run = root / "run"
    (run / "checkpoints").mkdir(parents=True)
    save_checkpoint(
        run / "checkpoints" / "best.pt", {"model": model.state_dict(), "meta": {"epoch": 1}}
    )
    cfg = {
        "detector": "meso4",
        "model": {"input_size": 64},
        "train": {"test_frame_num": 2},
        "data": {"data_root": str(data), "train_data": ["FF-c23"]},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    return root, data, run, model


def test_run_dir_end_to_end(setup) -> None:
    root, data, run, model = setup
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(run / "tensorboard")) as w:
        for step in (1, 2):
            w.add_scalar("val/tiny/auc", 0.5 + step / 10, step)
    sets = [
        "n_boot=20",
        "batch_size=4",
        "analysis.gradcam=2",
        "analysis.tsne=3",
        "analysis.spectra=2",
    ]
    rc = script().main(
        [
            "--run",
            str(run),
            "--test-data",
            "tiny",
            "absent",
            "--allow-missing",
            *(a for s in sets for a in ("--set", s)),
        ]
    )
    assert rc == 0
    ev = run / "eval" / "best"
    pred = read_predictions(ev / "predictions" / "tiny.csv")
    assert len(pred) == 12 and set(pred.attributes) == {"gender"}
    # the scores are the model's on the same faces
    model.eval()
    img = cv2.cvtColor(cv2.imread(str(data / "tiny/real/000/frames/000.png")), cv2.COLOR_BGR2RGB)
    from fairforensics.evaluation.predict import predict_images

    first = pred.score[(pred.video_id == "000") & (pred.frame == 0)][0]
    assert first == pytest.approx(float(predict_images(model, [img])[0]), abs=1e-5)
    info = json.loads((ev / "eval.json").read_text())
    assert (
        info["detector"] == "meso4" and info["train_data"] == "FF-c23" and info["weights"] == "best"
    )
    skipped = json.loads((ev / "manifest.json").read_text())["skipped"]
    assert [s["test_data"] for s in skipped] == ["absent"]
    metrics = json.loads((ev / "metrics" / "tiny.json").read_text())
    assert metrics["video"]["n_videos"] == 6 and "auc" in metrics["frame"]["ci"]
    assert (ev / "tables" / "frame_auc.md").is_file() and (ev / "report.html").is_file()
    for fig in (
        "analysis/gradcam_tiny",
        "analysis/tsne_tiny",
        "analysis/spectra_tiny",
        "figures/training_curves",
    ):
        assert (ev / f"{fig}.png").is_file(), fig
    report = (ev / "report.html").read_text()
    assert "analysis/tsne_tiny.png" in report and "figures/training_curves.png" in report
    # a second run reuses the predictions (resume) and gives the same metrics
    mtime = (ev / "predictions" / "tiny.csv").stat().st_mtime_ns
    script().main(
        ["--run", str(run), "--test-data", "tiny", "--set", "n_boot=20", "--set", "plots=false"]
    )
    assert (ev / "predictions" / "tiny.csv").stat().st_mtime_ns == mtime
    assert json.loads((ev / "metrics" / "tiny.json").read_text())["frame"] == metrics["frame"]


def test_detector_weights_predictions_and_leaderboard(setup, tmp_path, capsys) -> None:
    root, data, run, _ = setup
    weights = run / "checkpoints" / "best.pt"
    out = tmp_path / "by_file"
    model_yaml = tmp_path / "meso4_small.yaml"
    model_yaml.write_text("detector: meso4\nmodel:\n  input_size: 64\n")
    args = ["--detector", "meso4", "--weights", str(weights), "--model-config", str(model_yaml)]
    args += ["--data-root", str(data), "--test-data", "tiny"]
    script().main(
        [
            *args,
            "--out",
            str(out),
            "--set",
            "n_boot=0",
            "--set",
            "levels=[video]",
            "--set",
            "plots=false",
        ]
    )
    ev = json.loads((out / "eval.json").read_text())
    assert ev["detector"] == "meso4" and ev["settings"]["levels"] == ["video"]
    assert not (out / "figures").exists() and (out / "tables" / "video_auc.csv").is_file()
    # another tool's predictions file, evaluated as "theirs"
    theirs = tmp_path / "theirs"
    src = out / "predictions" / "tiny.csv"
    script().main(
        [
            "--predictions",
            f"tiny={src}",
            "--name",
            "theirs",
            "--out",
            str(theirs),
            "--set",
            "n_boot=0",
        ]
    )
    assert (theirs / "predictions" / "tiny.csv").is_file()
    board = tmp_path / "board"
    capsys.readouterr()
    script().main(
        ["--leaderboard", str(out), str(theirs), "--out", str(board), "--set", "levels=[video]"]
    )
    printed = capsys.readouterr().out
    assert "report: " in printed and "predictions: " not in printed  # it writes none
    assert not (board / "predictions").exists()
    rows = json.loads((board / "leaderboard_video_auc.json").read_text())["rows"]
    assert {r["Detector"] for r in rows} == {"meso4", "theirs"}
    assert rows[0]["tiny"] == pytest.approx(rows[1]["tiny"])  # same predictions, same AUC


def test_script_errors(setup, tmp_path, capsys) -> None:
    _, data, run, _ = setup
    s = script()
    with pytest.raises(Exception, match="--weights FILE"):
        s.main(["--detector", "meso4", "--test-data", "tiny"])
    with pytest.raises(Exception, match="no config.yaml"):
        s.main(["--run", str(tmp_path), "--test-data", "tiny"])
    with pytest.raises(Exception, match="metrics"):
        s.main(["--run", str(run), "--test-data", "tiny", "--set", "metrics=[bogus]"])
    with pytest.raises(Exception, match="no test sets"):
        s.main(["--run", str(run), "--out", str(tmp_path / "x")])
    with pytest.raises(Exception, match="--name"):
        s.main(["--predictions", "a=b.csv"])


def test_compare_mode(setup, tmp_path, capsys) -> None:
    _, data, run, _ = setup
    src = run / "eval" / "best" / "predictions" / "tiny.csv"
    if not src.is_file():  # standalone run of this test
        args = ["--test-data", "tiny", "--set", "n_boot=0", "--set", "plots=false"]
        script().main(["--run", str(run), *args])
    assert script().main(["--compare", str(src), str(src)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"frame", "video"}
    assert out["frame"]["diff"] == 0 and out["frame"]["p_value"] == 1.0


def test_deepfakebench_checkpoint_through_weights(setup, tmp_path) -> None:
    """A DeepfakeBench checkpoint (raw state dict, DDP prefixes) predicts like ours."""
    root, data, run, model = setup
    dfb = tmp_path / "meso4_best.pth"
    torch.save({f"module.{k}": v for k, v in model.state_dict().items()}, dfb)
    model_yaml = tmp_path / "meso4_small.yaml"
    model_yaml.write_text("detector: meso4\nmodel:\n  input_size: 64\n")
    common = ["--detector", "meso4", "--model-config", str(model_yaml), "--data-root", str(data)]
    common += ["--test-data", "tiny", "--set", "n_boot=0", "--set", "plots=false"]
    ours = run / "checkpoints" / "best.pt"
    for weights, out in ((ours, tmp_path / "ours"), (dfb, tmp_path / "dfb")):
        script().main([*common, "--weights", str(weights), "--out", str(out)])
    a = (tmp_path / "ours" / "predictions" / "tiny.csv").read_text()
    assert (tmp_path / "dfb" / "predictions" / "tiny.csv").read_text() == a


def test_changed_weights_are_predicted_again(setup, tmp_path, caplog) -> None:
    """Issue 14 item 2: an existing --out with other weights is never reused stale."""
    _, data, run, _ = setup
    model_yaml = tmp_path / "meso4_small.yaml"
    model_yaml.write_text("detector: meso4\nmodel:\n  input_size: 64\n")
    torch.manual_seed(1)
    other = tmp_path / "other.pt"
    save_checkpoint(other, {"model": build_detector("meso4", input_size=64).state_dict()})
    out = tmp_path / "out"
    common = ["--detector", "meso4", "--model-config", str(model_yaml), "--data-root", str(data)]
    common += ["--test-data", "tiny", "--set", "n_boot=0", "--set", "plots=false"]
    common += ["--out", str(out)]
    csv = out / "predictions" / "tiny.csv"
    script().main([*common, "--weights", str(run / "checkpoints" / "best.pt")])
    first = read_predictions(csv).score.copy()
    stamp = csv.stat().st_mtime_ns
    with caplog.at_level("INFO"):
        script().main([*common, "--weights", str(run / "checkpoints" / "best.pt")])
    assert csv.stat().st_mtime_ns == stamp and "same provenance" in caplog.text
    script().main([*common, "--weights", str(other)])
    second = read_predictions(csv).score
    assert not np.allclose(first, second)
    prov = json.loads((out / "predictions" / "tiny.provenance.json").read_text())
    # relative to the output folder, so that the folder can move (issue 23, item 8)
    assert prov["weights_file"] == "../other.pt" and prov["detector"] == "meso4"
    ev = json.loads((out / "eval.json").read_text())
    assert ev["weights_sha256"] == prov["weights_sha256"]
    # a changed index or split is predicted again too; a CSV without provenance is not trusted
    caplog.clear()
    with caplog.at_level("INFO"):
        script().main([*common, "--weights", str(other), "--set", "frame_num=1"])
    assert "['settings'] changed" in caplog.text
    (out / "predictions" / "tiny.provenance.json").unlink()
    caplog.clear()
    with caplog.at_level("INFO"):
        script().main([*common, "--weights", str(other)])
    assert "['provenance'] changed" in caplog.text


def test_unwritable_out_fails_before_predicting(setup, tmp_path) -> None:
    _, data, run, _ = setup
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    from fairforensics.configs import ConfigError

    with pytest.raises(ConfigError, match="not writable.*--out"):
        script().main(["--run", str(run), "--test-data", "tiny", "--out", str(blocker / "out")])


def test_missing_test_set_is_an_error_unless_allowed(setup, tmp_path) -> None:
    """Issue 14 item 7: a missing test set fails before predicting; --allow-missing lists it."""
    _, data, run, _ = setup
    from fairforensics.configs import ConfigError

    out = tmp_path / "out"
    args = ["--run", str(run), "--test-data", "tiny", "absent", "--out", str(out)]
    args += ["--set", "n_boot=0", "--set", "plots=false"]
    with pytest.raises(ConfigError, match="absent.*--allow-missing"):
        script().main(args)
    assert not (out / "predictions" / "tiny.csv").exists()  # failed before predicting
    assert script().main([*args, "--allow-missing"]) == 0
    ev = json.loads((out / "eval.json").read_text())
    assert ev["test_data"] == ["tiny"] and "absent" in ev["skipped"][0]
    assert "absent" in (out / "report.html").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["test_data"] for s in manifest["skipped"]] == ["absent"]


def _copy_index(data: Path, name: str, val_videos: int) -> None:
    """``tiny`` under another name with its first ``val_videos`` videos in the val split."""
    index = json.loads((data / "tiny.json").read_text())
    index["dataset"] = name
    for n, video in enumerate(index["videos"]):
        video["split"] = "val" if n < val_videos else "test"
    (data / f"{name}.json").write_text(json.dumps(index))


def test_empty_split_is_named_and_exits_1_after_the_others(setup, tmp_path, capsys) -> None:
    """Issue 29 item 6: a requested set with an empty split is skipped, the others evaluated,
    and the command exits 1 naming it."""
    _, data, run, _ = setup
    _copy_index(data, "tinyval", val_videos=2)
    out = tmp_path / "out"
    args = ["--run", str(run), "--test-data", "tiny", "tinyval", "--split", "val"]
    rc = script().main([*args, "--out", str(out), "--set", "n_boot=0", "--set", "plots=false"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "error:" in err and "tiny (" in err and "has no videos" in err and "tinyval" not in err
    assert read_predictions(out / "predictions" / "tinyval.csv").video_id.tolist().count("000") == 2
    assert not (out / "predictions" / "tiny.csv").exists()
    ev = json.loads((out / "eval.json").read_text())
    assert ev["settings"]["split"] == "val" and ev["skipped"][0].startswith("tiny:")


def test_split_all_and_the_valid_names(setup, tmp_path, capsys) -> None:
    """``--split all`` scores every video; a bad name lists the valid ones."""
    _, data, run, _ = setup
    _copy_index(data, "tinyhalf", val_videos=3)
    out = tmp_path / "out"
    args = ["--run", str(run), "--test-data", "tinyhalf", "--out", str(out)]
    args += ["--set", "n_boot=0", "--set", "plots=false"]
    assert script().main([*args, "--split", "all"]) == 0
    assert len(read_predictions(out / "predictions" / "tinyhalf.csv")) == 12
    with pytest.raises(SystemExit) as exc:
        script().main([*args, "--split", "testing"])
    assert exc.value.code == 2
    assert "choose from 'train', 'val', 'test', 'all'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script().main(["--help"])
    assert "train, val, test, all" in " ".join(capsys.readouterr().out.split())


def test_a_partial_test_set_is_named_partial_in_every_table(setup, tmp_path) -> None:
    """Issue 29 item 5: tables and reports read the index's counts and name a partial set."""
    _, data, run, _ = setup
    index = json.loads((data / "tiny.json").read_text())
    index.update(schema_version=3, dataset="tinypart", videos_listed=1000, videos_found=6)
    (data / "tinypart.json").write_text(json.dumps(index))
    out = tmp_path / "out"
    args = ["--run", str(run), "--test-data", "tinypart", "tiny", "--out", str(out)]
    assert script().main([*args, "--set", "n_boot=0", "--set", "plots=false"]) == 0
    label = "tinypart (partial: 6 of 1,000 listed videos)"
    summary = (out / "tables" / "frame_summary.md").read_text()
    assert label in summary and "| tiny |" in summary.replace("  ", " ")
    assert label in (out / "tables" / "frame_auc.md").read_text()
    assert label in (out / "report.html").read_text()
    assert json.loads((out / "eval.json").read_text())["partial"] == {
        "tinypart": "6 of 1,000 listed videos"
    }
    assert json.loads((out / "metrics" / "tinypart.json").read_text())["partial"] == label
    board = tmp_path / "board"
    assert script().main(["--leaderboard", str(out), "--out", str(board)]) == 0
    assert label in (board / "leaderboard_frame_auc.md").read_text()


def test_an_index_cropped_otherwise_than_the_weights_is_warned_once_and_recorded(
    setup, tmp_path, caplog
) -> None:
    """Issue 29 item 3: a run whose training data had the MesoNet authors' crop, tested on a set
    cropped DeepfakeBench's way and on one whose crop is unknown: one warning, eval.json says
    which crop each set has, and a fairness report of those predictions repeats the note."""
    _, data, run, _ = setup
    mine = tmp_path / "run"
    shutil.copytree(run, mine)
    cfg = yaml.safe_load((mine / "config.yaml").read_text())
    cfg["crop"] = {"method": "mesonet", "scale": 2.86, "size": 256}
    (mine / "config.yaml").write_text(yaml.safe_dump(cfg))
    index = json.loads((data / "tiny.json").read_text())
    index.update(schema_version=3, dataset="tinywide")
    index["crop"] = {"method": "template", "scale": 1.3, "size": 256}
    (data / "tinywide.json").write_text(json.dumps(index))
    out = tmp_path / "out"
    args = ["--run", str(mine), "--test-data", "tinywide", "tiny", "--out", str(out)]
    with caplog.at_level("INFO"):
        assert script().main([*args, "--set", "n_boot=0", "--set", "plots=false"]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert sum("tinywide was cropped with" in m for m in warned) == 1
    assert "crop of tiny is unknown" in caplog.text
    ev = json.loads((out / "eval.json").read_text())
    assert ev["expected_crop"] == cfg["crop"] and ev["crops"]["tiny"] == "unknown"
    assert "margin 1.3" in ev["crops"]["tinywide"] and "tinywide" in ev["crop_notes"]
    from fairforensics.fairness.evaluation_section import evaluation_notes

    assert evaluation_notes(out / "predictions" / "tinywide.csv") == [ev["crop_notes"]["tinywide"]]
    assert evaluation_notes(out / "predictions" / "nothing.csv") == []


def test_run_decides_at_its_validation_threshold_as_detect_does(setup, tmp_path, capsys) -> None:
    """Issue 46, item 1: ``test --run`` decides at the validation threshold the run recorded
    (the resolver of ``detect``), says so, and records how it was chosen; without a record 0.5
    and why; a threshold the user sets wins."""
    from fairforensics.evaluation.thresholds import write_run_thresholds

    _, _, run, _ = setup
    recorded = tmp_path / "run"
    shutil.copytree(run, recorded, ignore=shutil.ignore_patterns("eval"))
    write_run_thresholds(recorded, "frame", ["tiny"], {"best": {"threshold": 0.37, "step": 4,
                                                                "epoch": 1}})  # fmt: skip
    quiet = ["--test-data", "tiny", "--set", "n_boot=0", "--set", "plots=false"]
    for run_dir, extra, value, how in (
        (recorded, [], 0.37, "run"),
        (run, [], 0.5, "default"),
        (recorded, ["--set", "threshold=0.3"], 0.3, "given"),
    ):
        out = tmp_path / f"eval_{how}"
        assert script().main(["--run", str(run_dir), *quiet, *extra, "--out", str(out)]) == 0
        info = json.loads((out / "eval.json").read_text())
        assert info["threshold"] == value and info["threshold_chosen_by"] == how
        err = capsys.readouterr().err
        assert f"decision threshold: {value:g}" in err, err
    assert (
        "records no validation threshold"
        in json.loads((tmp_path / "eval_default" / "eval.json").read_text())["threshold_from"]
    )
