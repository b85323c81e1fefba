"""``fairforensics detect`` and ``fairforensics.detect``: a file's score equals what
``preprocess`` + ``test.py`` give it with a trained run, bad files are one line each, and the
report opens offline."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import fairforensics
from fairforensics.cli.detect import main as detect_main
from fairforensics.cli.test import main as run_test_py
from fairforensics.configs import ConfigError
from fairforensics.evaluation.metrics import video_scores
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.preprocessing.index import read_index
from fairforensics.preprocessing.pipeline import run_preprocess
from tests.test_face_path import assert_face_on_template
from tests.test_preprocess_pipeline import config, make_ff_tree
from tests.testdata import CELEBRITIES, FACE_RECOGNITION

FACES = {"sampling.num_frames": 4, "align.size": 64}  # what every index here is made with
DEMO_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "preprocess" / "demo.yaml"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Tiny demo data (make demo's generator: 10 real videos of 4 frames and their self-blended
    fakes), its index and a Meso4 trained on it for one epoch."""
    from fairforensics.preprocessing.demo_dataset import make_demo_dataset
    from fairforensics.training.config import load_train_config
    from fairforensics.training.trainer import Trainer

    root = tmp_path_factory.mktemp("detect")
    raw = make_demo_dataset(root / "raw", n_videos=10, n_frames=4, size=192)
    overrides = [f"dataset.root={raw}", f"dataset.attributes.csv={raw / 'attributes.csv'}",
                 f"output.root={root / 'processed'}", *(f"{k}={v}" for k, v in FACES.items())]  # fmt: skip
    run_preprocess(
        load_preprocess_config(DEMO_CONFIG, overrides=overrides), workers=1, progress=False
    )
    sets = {
        "data.data_root": root / "processed",
        "data.train_data": "[demo]",
        "data.val_data": "[demo]",
        "data.num_workers": 0,
        "train.epochs": 1,
        "train.batch_size": 8,
        "train.resolution": 32,
        "train.frame_num": 4,
        "train.test_frame_num": 3,  # fewer than the 4 crops: the same 3 must be picked
        "output_dir": root / "runs",
        "run_name": "meso4",
        "device": "cpu",
    }
    run = Trainer(load_train_config("meso4", overrides=[f"{k}={v}" for k, v in sets.items()])).fit()
    return raw, root / "processed", run


def scores_of_test_py(run: Path, data_root: Path, name: str, split: str, out: Path):
    """Per-video scores of ``test.py`` on ``split`` of index ``name``: {source path: score}."""
    sets = ["n_boot=0", "plots=false", "report=false", f"split={split}", "device=cpu"]
    args = ["--run", str(run), "--test-data", name, "--data-root", str(data_root)]
    assert run_test_py([*args, "--out", str(out), *(a for s in sets for a in ("--set", s))]) == 0
    pred = read_predictions(out / "predictions" / f"{name}.csv")
    _, scores, keys = video_scores(pred.label, pred.score, pred.video_key)
    index = read_index(data_root / f"{name}.json")
    source = {f"{name}/{v.method}/{v.id}": v.source for v in index.videos}
    return {source[k]: s for k, s in zip(keys, scores, strict=True)}, pred


def test_detect_equals_preprocess_and_test_on_videos(demo, tmp_path):
    raw, processed, run = demo
    want, _ = scores_of_test_py(run, processed, "demo", "test", tmp_path / "eval")
    assert len(want) == 4  # two real test videos and their fakes
    result = fairforensics.detect([raw / src for src in want], run=run, device="cpu")
    assert (
        str(run / "meta.json") in result.face_settings_source
        and result.face_settings["align"]["size"] == 64
    )
    for f in result.files:
        assert f.status == "scored" and len(f.faces) == 3, (f.path, f.reason)
        assert f.score == pytest.approx(want[f.path.relative_to(raw).as_posix()], abs=1e-6)
        assert f.score == pytest.approx(np.mean([x.score for x in f.faces]), abs=1e-9)
        assert f.verdict == ("fake" if f.score >= result.threshold else "real")


def test_detect_equals_preprocess_and_test_on_images(demo, tmp_path):
    """Photos preprocessed with the run's face settings and tested, against detect on them."""
    _, _, run = demo
    photos = tmp_path / "photos"
    for k, name in enumerate(("img1.jpg", "img13.jpg", "img22.jpg")):
        (photos / "test" / ("real" if k < 2 else "fake")).mkdir(parents=True, exist_ok=True)
        shutil.copy(CELEBRITIES / name, photos / "test" / ("real" if k < 2 else "fake") / name)
    overrides = ["dataset.name=photos", "dataset.type=generic", f"dataset.root={photos}",
                 f"output.root={tmp_path / 'idx'}"] + [f"{k}={v}" for k, v in FACES.items()]  # fmt: skip
    run_preprocess(load_preprocess_config(overrides=overrides), workers=1, progress=False)
    want, _ = scores_of_test_py(run, tmp_path / "idx", "photos", "test", tmp_path / "eval")
    result = fairforensics.detect(photos, run=run, device="cpu")
    assert [f.status for f in result.files] == ["scored"] * 3
    for f in result.files:
        assert f.kind == "image" and f.score == pytest.approx(
            want[f.path.relative_to(photos).as_posix()], abs=1e-6
        )
    # and the crop itself, checked without the project's code: dlib's landmarks found again on
    # detect's crop (made at 256 px, where dlib finds faces) sit on the template
    big = fairforensics.detect(
        photos, run=run, device="cpu", face_overrides=["align.size=256"], keep_crops=True
    )
    for f in big.files:
        assert_face_on_template(f.faces[0].crop)


def test_crops_are_scored_as_test_py_scores_stored_crops(demo, tmp_path):
    """--crops on preprocessed crops with --detector/--weights: each crop's score is test.py's
    score of that frame."""
    _, processed, run = demo
    _, pred = scores_of_test_py(run, processed, "demo", "val", tmp_path / "eval")
    index = read_index(processed / "demo.json")
    video = next(v for v in index.split("val") if v.method == "real")
    crops = [index.resolve(p) for p in video.frames]
    out = tmp_path / "out"
    args = [*map(str, crops), "--crops", "--detector", "meso4", "--out", str(out)]
    with pytest.raises(SystemExit) as info:
        detect_main_exit([*args, "--weights", str(run / "checkpoints" / "best.pt")])
    assert info.value.code == 0
    rows = {r["path"]: float(r["score"]) for r in csv.DictReader(open(out / "detections.csv"))}
    frames = dict(zip(video.frames, video.frame_indices, strict=True))
    got = 0
    for rel, path in zip(video.frames, crops, strict=True):
        match = (pred.video_id == video.id) & (pred.method == "real") & (pred.frame == frames[rel])
        if match.any():  # test.py scores 3 of the 4 crops
            assert rows[str(path)] == pytest.approx(float(pred.score[match][0]), abs=1e-6)
            got += 1
    assert got == 3


def detect_main_exit(argv: list[str]) -> None:
    """The command as run from a shell: exit code through SystemExit."""
    from fairforensics.cli.errors import run_cli

    run_cli(detect_main, argv)


def test_a_folder_with_bad_files(demo, tmp_path, capsys):
    """A video without a face, a corrupt file and a text file: the good files are scored, each
    bad video is one line, the text file (neither image nor video, found by the folder search)
    is skipped and counted, exit 1, and the report opens offline with its images."""
    _, _, run = demo
    raw = make_ff_tree(tmp_path / "raw")  # 004 has no face, 005 is corrupt
    folder = tmp_path / "inbox"
    shutil.copytree(raw / "original_sequences" / "youtube" / "c23" / "videos", folder)
    (folder / "notes.txt").write_text("not a video")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        detect_main_exit([str(folder), "--run", str(run), "--out", str(out), "--device", "cpu"])
    assert info.value.code == 1
    stdout = capsys.readouterr().out
    status = {Path(r["path"]).name: r for r in csv.DictReader(open(out / "detections.csv"))}
    assert {k: r["status"] for k, r in status.items()} == {
        "000.mp4": "scored", "001.mp4": "scored", "002.mp4": "scored", "003.mp4": "scored",
        "004.mp4": "no_face", "005.mp4": "failed",
    }  # fmt: skip
    assert "no face in any of the 4 sampled frames" in status["004.mp4"]["reason"]
    assert status["005.mp4"]["score"] == ""
    assert "cannot open video: no video container" in status["005.mp4"]["reason"]  # item 9
    for name in ("004.mp4", "005.mp4"):
        (line,) = [x for x in stdout.splitlines() if name in x]
        assert status[name]["status"] in line
    assert (
        "4 scored, 1 without a face, 1 failed; skipped 1 other file in the folders (.txt 1)"
        in stdout
    )
    frames = list(csv.DictReader(open(out / "frames.csv")))
    assert len(frames) == 4 * 3 and {r["track"] for r in frames} == {"0"}
    data = json.loads((out / "detections.json").read_text())
    assert data["counts"] == {"scored": 4, "no_face": 1, "failed": 1}
    assert data["other_files_skipped"] == [str(folder / "notes.txt")]
    check_offline(out / "report.html", n_images=4 * 3)


def check_offline(report: Path, n_images: int) -> None:
    """Every image of the report is embedded or a file beside it; nothing is fetched."""
    text = report.read_text(encoding="utf-8")
    sources = re.findall(r"<img src=['\"]([^'\"]+)['\"]", text)
    embedded = [s for s in sources if s.startswith("data:image/")]
    assert len(embedded) >= n_images
    for src in sources:
        if not src.startswith("data:"):
            assert not re.match(r"[a-z]+://|/", src) and (report.parent / src).is_file(), src
    assert "http://" not in text and "https://" not in text


def test_all_faces_tracks_and_explain(demo, tmp_path):
    _, _, run = demo
    two = FACE_RECOGNITION / "two_people.jpg"
    result = fairforensics.detect(two, run=run, device="cpu", all_faces=True, explain=True)
    (f,) = result.files
    assert f.status == "scored" and sorted(f.track_scores) == [0, 1]
    assert f.score == max(f.track_scores.values()) and len(f.faces) == 2
    assert all(cam is not None and cam.shape == thumb.shape for _, thumb, cam in f.strip)
    assert result.explain is None  # Grad-CAM ran
    for _, thumb, cam in f.strip:  # a map, not one value: the heat under the 0.45 blend varies
        heat = (cam.astype(np.float64) - 0.55 * thumb) / 0.45
        assert heat.reshape(-1, 3).std(axis=0).max() > 20, "the Grad-CAM overlay is one colour"
    largest = fairforensics.detect(two, run=run, device="cpu")
    assert largest.files[0].n_faces == 1
    assert largest.files[0].score == pytest.approx(f.track_scores[0], abs=1e-6)


def test_thresholds(demo, tmp_path):
    """The run's validation threshold by default; --threshold and --threshold-from win."""
    _, _, run = demo
    photo = CELEBRITIES / "img1.jpg"
    default = fairforensics.detect(photo, run=run, device="cpu")
    recorded = json.loads((run / "validation_threshold.json").read_text())
    assert default.threshold == recorded["checkpoints"]["best"]["threshold"]
    assert "validation threshold of run" in default.threshold_source
    given = fairforensics.detect(photo, run=run, device="cpu", threshold=0.25)
    assert given.threshold == 0.25 and "--threshold 0.25" in given.threshold_source
    eval_json = tmp_path / "eval.json"
    eval_json.write_text(json.dumps({"settings": {"threshold": 0.61}, "threshold_from": "EER"}))
    read = fairforensics.detect(photo, run=run, device="cpu", threshold_from=eval_json)
    assert read.threshold == 0.61 and str(eval_json) in read.threshold_source
    f = read.files[0]
    assert f.verdict == ("fake" if f.score >= 0.61 else "real")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--detector", "meso4"], "--detector needs --weights FILE"),
        (["--detector", "nope", "--weights", "x.pt"], "not a registered detector"),
        (["--run", "/nonexistent/run"], "not a run directory"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as info:
        detect_main_exit([str(CELEBRITIES / "img1.jpg"), *args])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.extended
@pytest.mark.parametrize("stem", ["Meso4_DF", "Meso4_F2F", "MesoInception_DF", "MesoInception_F2F"])
def test_mesonet_authors_files_score_their_own_crops_through_detect_crops(stem, tmp_path):
    """``detect --crops --detector NAME --weights X.h5`` on the authors' four test crops scores
    as the authors' model does: the Deepfake-trained files call the two ``df`` crops fake and
    the two ``real`` crops real, the Face2Face-trained ones call all four real (their output is
    P(real), ours P(fake): tests/test_mesonet_released.py)."""
    pytest.importorskip("h5py", reason="the Keras import needs h5py (pip install h5py)")
    from tests.test_mesonet_released import FILES, _check_scores, _mesonet

    mesonet = _mesonet()  # skips, naming the path, without ../shared
    crops = sorted((mesonet / "test_images").glob("*/*.jpg"))
    out = tmp_path / "out"
    argv = [str(mesonet / "test_images"), "--crops", "--detector", FILES[stem][0]]
    argv += ["--weights", str(mesonet / "weights" / f"{stem}.h5"), "--out", str(out)]
    with pytest.raises(SystemExit) as info:
        detect_main_exit([*argv, "--device", "cpu"])
    assert info.value.code == 0
    rows = {r["path"]: r for r in csv.DictReader(open(out / "detections.csv"))}
    assert sorted(rows) == [str(p) for p in crops]
    label = np.array([int(p.parent.name == "df") for p in crops])
    score = np.array([float(rows[str(p)]["score"]) for p in crops])
    _check_scores(stem, label, score)
    assert {rows[str(p)]["faces"] for p in crops} == {"1"}


def test_a_video_detector_equals_test_py_on_clips(tmp_path):
    """A video detector's run on an index made with sampling.mode clips: detect cuts the same
    clips (the settings read from the training index itself, as for a run made before meta.json
    recorded them) and gives test.py's per-video scores."""
    import torch
    import yaml

    import tests.clip_detectors  # noqa: F401 - registers _tiny_clip
    from fairforensics.configs.loader import config_to_dict
    from fairforensics.detectors import build_detector, save_checkpoint

    raw = make_ff_tree(tmp_path / "raw")
    data = tmp_path / "clips"
    clips = {"sampling.mode": "clips", "sampling.clip_size": 3, "sampling.num_clips": 2}
    run_preprocess(config(raw, data, **FACES, **clips), workers=1, progress=False)
    torch.manual_seed(0)
    model = build_detector("_tiny_clip")
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    save_checkpoint(run / "checkpoints" / "best.pt", {"model": model.state_dict(), "meta": {}})
    cfg = {
        "detector": "_tiny_clip",
        "model": config_to_dict(model.cfg),
        "train": {"test_frame_num": 6},
        "data": {"data_root": str(data), "train_data": ["demo"]},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    want, _ = scores_of_test_py(run, data, "demo", "train", tmp_path / "eval")
    result = fairforensics.detect([raw / src for src in want], run=run, device="cpu")
    assert str(data / "demo.json") in result.face_settings_source
    for f in result.files:
        assert f.status == "scored" and [len(x.frames) for x in f.faces] == [3, 3], f.reason
        assert f.score == pytest.approx(want[f.path.relative_to(raw).as_posix()], abs=1e-6)
    photo = fairforensics.detect(CELEBRITIES / "img1.jpg", run=run, device="cpu").files[0]
    assert photo.status == "failed" and "clips of 3 consecutive frames" in photo.reason
    with pytest.raises(ConfigError, match="--all-faces"):
        fairforensics.detect(CELEBRITIES / "img1.jpg", run=run, device="cpu", all_faces=True)


def test_inputs_folders_lists_and_problems(tmp_path):
    from fairforensics.evaluation.detection.inputs import expand_inputs

    (tmp_path / "a" / "b").mkdir(parents=True)
    for name in ("a/x.mp4", "a/b/y.JPG", "a/.hidden.mp4", "a/notes.md", "z.png"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "list.txt").write_text("# my files\nz.png\n\na\nmissing.mp4\na/x.mp4\n")
    (tmp_path / "a" / "metadata.json").write_text("{}")
    got, others = expand_inputs([tmp_path / "list.txt", tmp_path / "z.png", tmp_path / "a"])
    names = [(e.path.relative_to(tmp_path).as_posix(), e.kind, e.problem) for e in got]
    assert names == [
        ("z.png", "image", None),
        ("a/b/y.JPG", "image", None),
        ("a/x.mp4", "video", None),
        ("missing.mp4", "video", "file not found"),
    ]  # a folder's other files are skipped and counted (once), not failed rows
    assert [p.relative_to(tmp_path).as_posix() for p in others] == ["a/metadata.json", "a/notes.md"]
    (named,), _ = expand_inputs([tmp_path / "a" / "notes.md"])  # named explicitly: an error
    assert named.kind == "other" and "unsupported file type '.md'" in named.problem


def test_a_detector_without_a_run_crops_as_its_config_says(tmp_path):
    """``--detector NAME`` without a run: the faces are cropped as the detector config's
    ``crop:`` section says (here the MesoNet authors' crop at 64 px), not with DeepfakeBench's
    default crop, and the crop scored is the face path's crop with those settings."""
    import yaml

    from fairforensics.configs.crop import CropSpec
    from fairforensics.detectors import build_detector, save_checkpoint
    from fairforensics.preprocessing.align import crop_face
    from fairforensics.preprocessing.config import FaceSettings
    from fairforensics.preprocessing.face_path import face_crops

    model = {"variant": "deepfakebench", "pretrained": False, "input_size": 64}
    spec = CropSpec("mesonet", 2.86, 64)
    yaml_path = tmp_path / "meso4_mesonet_crop.yaml"
    yaml_path.write_text(
        yaml.safe_dump({"detector": "meso4", "model": model, "crop": spec.to_json()})
    )
    weights = tmp_path / "meso4.pt"
    save_checkpoint(weights, {"model": build_detector("meso4", model).state_dict(), "meta": {}})
    photo = CELEBRITIES / "img1.jpg"
    result = fairforensics.detect(
        photo, detector="meso4", weights=weights, model_config=yaml_path, device="cpu",
        keep_crops=True,
    )  # fmt: skip
    (f,) = result.files
    assert f.status == "scored" and len(f.faces) == 1, f.reason
    settings = FaceSettings.from_json(result.face_settings)
    assert settings.align.crop == spec, result.face_settings["align"]
    assert "meso4's config" in result.face_settings_source
    assert spec.describe() in result.face_settings_source
    got = face_crops(photo, settings)
    assert f.faces[0].crop.shape == (64, 64, 3)
    assert np.array_equal(f.faces[0].crop, got.crops[0].image)
    (frame,) = got.decoded.frames.values()
    template, _, _ = crop_face(frame, got.faces.found[0][2], CropSpec(size=64))
    assert not np.array_equal(f.faces[0].crop, template)  # DeepfakeBench's crop differs


def test_a_run_without_recorded_settings_crops_as_its_config_says(tmp_path, caplog):
    """A run whose training data records no face-crop settings: the crop its config records
    (its training data's) is used, with DeepfakeBench's other defaults, and said so."""
    import yaml

    from fairforensics.configs.crop import CropSpec
    from fairforensics.evaluation.detection.source import run_face_settings

    (tmp_path / "run").mkdir()
    cfg = {"detector": "meso4", "data": {"data_root": str(tmp_path), "train_data": ["gone"]}}
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump(cfg))
    spec = CropSpec("mesonet", 2.86, 128)
    settings, source = run_face_settings(tmp_path / "run", spec)
    assert settings.align.crop == spec and "records no settings" in source
    assert spec.describe() in source and "records no face-crop settings" in caplog.text
    settings, _ = run_face_settings(tmp_path / "run")
    assert settings.align.crop == CropSpec()
