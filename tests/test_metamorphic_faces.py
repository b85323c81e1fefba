"""Real aligned faces with dlib landmarks (shared by the metamorphic tests), the index loader and
the command line."""

from __future__ import annotations

import csv
import importlib.util
import json
from functools import cache
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.fairness.metamorphic.data import frame_positions, samples_from_index
from fairforensics.fairness.metamorphic.runner import FaceSample, Skipped
from fairforensics.preprocessing.align import align_face
from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index
from tests.test_cli import run_command
from tests.testdata import CELEBRITIES

REPO = Path(__file__).resolve().parents[1]
CELEB = CELEBRITIES
# two women, two men; img1 smiles with the mouth open (inner-mouth cut-out of the lipstick)
NAMES = ("img1", "img26", "img13", "img29")


def gender_of(name: str) -> str:
    with (CELEB / "attributes.csv").open(newline="") as fh:
        return {row["file"]: row["gender"] for row in csv.DictReader(fh)}[f"{name}.jpg"]


def read_rgb(path: Path) -> np.ndarray:
    bgr = cv2.imread(str(path))
    assert bgr is not None, path
    return np.ascontiguousarray(bgr[..., ::-1])


@cache
def aligned_faces(size: int = 128) -> tuple[tuple[str, np.ndarray, np.ndarray, str], ...]:
    """(name, aligned RGB crop, its 68 landmarks, gender) per face in NAMES."""
    analyzer = FaceAnalyzer()
    out = []
    for name in NAMES:
        rgb = read_rgb(CELEB / f"{name}.jpg")
        faces = analyzer.analyze(rgb)
        assert faces, f"dlib finds no face in {name}"
        crop, _, lm = align_face(rgb, faces[0][1], size=size)
        out.append((name, crop, lm.astype(np.float64), gender_of(name)))
    return tuple(out)


# --- the index loader and the command line, on real faces ---


def _write_png(path: Path, rgb: np.ndarray) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), rgb[..., ::-1])
    return path.name


def _make_index(root: Path) -> Path:
    """Four one-frame test videos: stored landmarks, corrupt landmarks, no face, unreadable."""
    faces = {name: (crop, lm, g) for name, crop, lm, g in aligned_faces(256)}
    videos = []

    def add(
        vid: str, label: int, gender: str, image: np.ndarray | bytes, lm: np.ndarray | bytes | None
    ):
        frame = root / vid / "frames" / "000.png"
        frame.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(image, bytes):
            frame.write_bytes(image)
        else:
            _write_png(frame, image)
        lm_rel = None
        if lm is not None:
            lm_path = root / vid / "landmarks" / "000.npy"
            lm_path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(lm, bytes):
                lm_path.write_bytes(lm)
            else:
                np.save(lm_path, lm.astype(np.float32))
            lm_rel = [f"{vid}/landmarks/000.npy"]
        videos.append(
            VideoEntry(
                id=vid,
                label=label,
                method="fake" if label else "real",
                split="test",
                frames=[f"{vid}/frames/000.png"],
                landmarks=lm_rel,
                attributes={"gender": gender},
            )
        )

    crop, lm, _ = faces["img26"]
    add("stored", 0, "female", crop, lm)
    crop, _, _ = faces["img13"]
    add("corrupt_lm", 1, "male", crop, b"not a numpy file")
    # white wall, no face: the top-left corner of the 384 px copy, enlarged to 300 x 300
    background = cv2.resize(read_rgb(CELEB / "img13.jpg")[:56, :56], (300, 300))
    add("no_face", 1, "female", np.ascontiguousarray(background), None)
    add("unreadable", 0, "male", b"\x89PNG broken", None)
    index = DatasetIndex(dataset="celebtest", task="deepfake", videos=videos, root=root)
    write_index(index, root / "celebtest.json")
    return root / "celebtest.json"


def test_frame_positions() -> None:
    assert frame_positions(5, None) == [0, 1, 2, 3, 4]
    assert frame_positions(5, 2) == [0, 4]
    assert frame_positions(9, 3) == [0, 4, 8]
    assert frame_positions(2, 10) == [0, 1]
    with pytest.raises(ValueError, match="frame_num"):
        frame_positions(5, 0)


def test_samples_from_index_reads_landmarks_and_reports_bad_frames(tmp_path: Path) -> None:
    items = list(samples_from_index(_make_index(tmp_path)))
    by_key = {item.key.split("/")[2]: item for item in items}
    stored = by_key["stored"]
    assert isinstance(stored, FaceSample) and stored.attributes == {"gender": "female"}
    expected = np.load(tmp_path / "stored" / "landmarks" / "000.npy")
    np.testing.assert_allclose(stored.landmarks, expected)
    assert stored.image.shape == (256, 256, 3) and stored.label == 0
    # a corrupt landmark file falls back to dlib, which finds the aligned face
    fallback = by_key["corrupt_lm"]
    assert isinstance(fallback, FaceSample) and fallback.landmarks.shape == (68, 2)
    truth = dict((n, lm) for n, _, lm, _ in aligned_faces(256))["img13"]
    assert np.abs(fallback.landmarks - truth).mean() < 6.0
    assert isinstance(by_key["no_face"], Skipped) and "no face" in by_key["no_face"].reason
    assert isinstance(by_key["unreadable"], Skipped) and "unreadable" in by_key["unreadable"].reason
    with pytest.raises(ValueError, match="no videos in split 'train'"):
        list(samples_from_index(tmp_path / "celebtest.json", "train"))


def _script():
    spec = importlib.util.spec_from_file_location(
        "metamorphic_script", REPO / "scripts" / "metamorphic.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_on_a_run_dir(tmp_path: Path, capsys, caplog) -> None:
    torch = pytest.importorskip("torch")
    checkpoint = pytest.importorskip("fairforensics.detectors.weights")
    import yaml

    from fairforensics.detectors import build_detector
    from fairforensics.evaluation.thresholds import write_run_thresholds

    data_root = tmp_path / "data"
    _make_index(data_root)
    run = tmp_path / "run"
    torch.manual_seed(0)
    detector = build_detector("meso4", input_size=64)
    checkpoint.save_checkpoint(
        run / "checkpoints" / "best.pt", {"model": detector.state_dict(), "meta": {}}
    )
    (run / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "detector": "meso4",
                "model": {"input_size": 64},
                "data": {"data_root": str(data_root)},
            }
        )
    )
    # the run's validation threshold decides (issue 29, item 4); at 0 every face is "fake"
    write_run_thresholds(run, "frame", ["celebval"], {"best": {"threshold": 0.0, "step": 3}})
    script = _script()
    rc = script.main(["--run", str(run), "--test-data", "celebtest", "--batch-size", "2"])
    assert rc == 0
    used = f"validation threshold of run {run} (best checkpoint, step 3; EER rule, frame level"
    assert f"decision threshold: 0 ({used}" in capsys.readouterr().err
    assert "celebtest/test: all 2 decisions are fake" in caplog.text
    out = run / "metamorphic" / "celebtest"
    summary = json.loads((out / "metamorphic.json").read_text())
    assert summary["threshold"] == 0.0 and summary["threshold_from"].startswith(used)
    assert summary["model"]["input_size"] == 64  # the config the detector was built with
    assert (
        f"a score >= 0 is a fake decision (decision threshold: {used}"
        in (out / "metamorphic.md").read_text()
    )
    assert summary["n_faces"] == 2 and summary["n_skipped"] == 2
    assert len(summary["rows"]) == 8 * 3
    for name in (
        "metamorphic.csv",
        "metamorphic.md",
        "accuracy.png",
        "examples.png",
        "manifest.json",
        "metamorphic.html",
        "predictions/TC7.csv",
    ):
        assert (out / name).is_file(), name
    missing = ["--run", str(run), "--test-data", "missing", "--batch-size", "2"]
    assert run_command(script.main, missing, capsys)[0] == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("relations: [{id: R, cases: [{id: T, transform: glitter}]}]")
    glitter = ["--run", str(run), "--test-data", "celebtest", "--relations", str(bad)]
    assert run_command(script.main, glitter, capsys)[0] == 2


def test_script_with_a_detector_and_a_keras_weights_file(tmp_path: Path, capsys) -> None:
    """``--detector/--variant/--model-config/--weights`` as in scripts/test.py, here with a Keras
    ``.h5`` (a synthetic one in the authors' layout; the released files are tested on their
    authors' crops in test_mesonet_released.py); files of another kind are one clear error."""
    pytest.importorskip("h5py")
    import yaml

    from fairforensics.detectors import build_detector
    from fairforensics.evaluation.predict import predict_images
    from fairforensics.evaluation.predictions import read_predictions
    from tests.test_keras_meso import SIZE, _meso4

    data_root = tmp_path / "data"
    _make_index(data_root)
    h5, _ = _meso4(tmp_path)
    model_yaml = tmp_path / "meso4_64.yaml"
    model = {"variant": "paper", "input_size": SIZE, "mean": [0, 0, 0], "std": [1, 1, 1]}
    model_yaml.write_text(yaml.safe_dump({"detector": "meso4", "model": model}))
    script = _script()
    base = ["--test-data", "celebtest", "--data-root", str(data_root), "--batch-size", "2"]
    out = tmp_path / "out"
    args = ["--detector", "meso4", "--weights", str(h5), "--model-config", str(model_yaml)]
    assert script.main([*args, *base, "--out", str(out)]) == 0
    summary = json.loads((out / "metamorphic.json").read_text())
    assert summary["detector"] == "meso4" and summary["weights"] == h5.name
    assert summary["n_faces"] == 2 and len(summary["weights_sha256"]) == 64
    pred = read_predictions(out / "predictions" / "benchmark.csv")
    reference = build_detector("meso4", {**model, "pretrained": str(h5)})
    faces = [read_rgb(data_root / v / "frames" / "000.png") for v in pred.video_id]
    np.testing.assert_allclose(pred.score, predict_images(reference, faces), atol=1e-6)
    # default output folder: metamorphic/<detector>_<weights name>/<dataset>
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert script.main([*args, *base]) == 0
    assert (tmp_path / "metamorphic" / "meso4_meso4" / "celebtest" / "metamorphic.md").is_file()

    notes = tmp_path / "notes.txt"
    notes.write_text("weights are elsewhere\n")
    cases = [
        (["--detector", "meso4", "--weights", str(notes)], "a text file; weights must be"),
        (["--detector", "xception", "--weights", str(h5)], "detector 'xception' cannot read"),
        (["--detector", "meso4"], "--detector needs --weights FILE"),
        (["--detector", "nosuch", "--weights", str(h5)], "not a registered detector"),
        (["--run", str(tmp_path), "--variant", "paper"], "go with --detector"),
    ]
    for argv, message in cases:
        code, err = run_command(script.main, [*argv, *base], capsys)
        assert code == 2, argv
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
