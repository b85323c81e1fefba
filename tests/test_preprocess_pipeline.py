"""The preprocessing pipeline end to end on a tiny FaceForensics++ tree made from real photos."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing.config import PreprocessConfig, load_preprocess_config
from fairforensics.preprocessing.index import read_index
from fairforensics.preprocessing.pipeline import run_preprocess
from fairforensics.preprocessing.video import read_frames, sample_indices
from fairforensics.preprocessing.worker import RECORD
from tests.testdata import DATA as TEST_DATA

DATA = TEST_DATA
PHOTO = DATA / "faces" / "face_recognition" / "obama-240p.jpg"


def write_video(path: Path, frames: list[np.ndarray], fps: int = 10) -> None:
    """Write RGB frames to an mp4 (cv2, mp4v)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    for f in frames:
        writer.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR) if f.ndim == 3 else cv2.merge([f] * 3))
    writer.release()


def face_frames(n: int, shift: int = 3) -> list[np.ndarray]:
    """``n`` frames of a real face photo moving a few pixels per frame."""
    rgb = cv2.cvtColor(cv2.imread(str(PHOTO)), cv2.COLOR_BGR2RGB)
    return [np.roll(rgb, (k * shift) % 20, axis=1) for k in range(n)]


def make_ff_tree(root: Path, n_frames: int = 6) -> Path:
    """FF++ layout: 6 real videos, their 6 fakes of one method with masks, split files.

    Video 004 has no face (grey frames), 005 is a corrupt file, fake 002_003 is 2 frames long,
    the mask video of 003_002 is corrupt.
    """
    real = root / "original_sequences" / "youtube" / "c23" / "videos"
    fake = root / "manipulated_sequences" / "Deepfakes" / "c23" / "videos"
    masks = root / "manipulated_sequences" / "Deepfakes" / "masks" / "videos"
    frames = face_frames(n_frames)
    h, w = frames[0].shape[:2]
    mask = np.zeros((h, w), np.uint8)
    mask[40:200, 130:300] = 255
    pairs = [("000", "001"), ("002", "003"), ("004", "005")]
    for a, b in pairs:
        for vid in (a, b):
            if vid == "004":
                write_video(real / f"{vid}.mp4", [np.full((h, w, 3), 128, np.uint8)] * n_frames)
            elif vid == "005":
                real.mkdir(parents=True, exist_ok=True)
                (real / f"{vid}.mp4").write_bytes(b"not a video at all" * 10)
            else:
                write_video(real / f"{vid}.mp4", frames)
        for x, y in ((a, b), (b, a)):
            if "004" in (x, y) or "005" in (x, y):
                continue
            n = 2 if (x, y) == ("002", "003") else n_frames
            write_video(fake / f"{x}_{y}.mp4", frames[:n])
            if (x, y) == ("003", "002"):
                (masks / f"{x}_{y}.mp4").write_bytes(b"corrupt mask")
            else:
                write_video(masks / f"{x}_{y}.mp4", [mask] * n)
    (root / "splits").mkdir(parents=True, exist_ok=True)
    for split, pair in zip(("train", "val", "test"), pairs, strict=True):
        (root / "splits" / f"{split}.json").write_text(json.dumps([list(pair)]))
    (root / "attributes.csv").write_text(
        "identity,gender,lighting\n000,male,bright\n001,male,dim\n002,male,bright\n003,male,dim\n"
    )
    return root


def config(raw: Path, out: Path, **over: object) -> PreprocessConfig:
    overrides = [
        f"dataset.root={raw}",
        f"output.root={out}",
        f"dataset.attributes.csv={raw / 'attributes.csv'}",
        "sampling.num_frames=4",
        "align.size=64",
        "dataset.options.methods=[Deepfakes]",
        "dataset.options.masks=true",
        "dataset.options.allow_partial=true",  # the fakes of 004 and 005 are not made
    ] + [f"{k}={v}" for k, v in over.items()]
    return load_preprocess_config(
        Path(__file__).resolve().parents[1] / "configs" / "preprocess" / "demo.yaml",
        overrides=overrides,
    )


@pytest.fixture(scope="module")
def ff_raw(tmp_path_factory) -> Path:
    return make_ff_tree(tmp_path_factory.mktemp("ff") / "raw")


@pytest.fixture(scope="module")
def first_run(ff_raw, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    cfg = config(ff_raw, out)
    summary = run_preprocess(cfg, workers=1, progress=False)
    return cfg, out, summary


def snapshot(out: Path, name: str = "demo") -> dict[str, bytes]:
    """Every output file's bytes (the index, crops, landmarks, masks), records excluded."""
    files = {"index": (out / f"{name}.json").read_bytes()}
    for p in sorted((out / name).rglob("*")):
        if p.is_file() and p.name != RECORD:
            files[str(p.relative_to(out))] = p.read_bytes()
    return files


def test_index_matches_outputs(first_run):
    cfg, out, summary = first_run
    index = read_index(out / "demo.json", check_files=True)
    keys = {(v.method, v.id) for v in index.videos}
    # 004 (no face) and 005 (corrupt) are skipped; their pair's fakes were never made
    assert keys == {
        ("real", "000"), ("real", "001"), ("real", "002"), ("real", "003"),
        ("Deepfakes", "000_001"), ("Deepfakes", "001_000"),
        ("Deepfakes", "002_003"), ("Deepfakes", "003_002"),
    }  # fmt: skip
    assert summary.videos_skipped == 2 and summary.videos_done == 8
    by_key = {(v.method, v.id): v for v in index.videos}
    v = by_key[("Deepfakes", "000_001")]
    assert v.split == "train" and v.label == 1 and v.identity == "000"
    assert v.attributes == {"gender": "male", "lighting": "bright"}
    assert v.frame_indices == sample_indices(6, "fixed_num_frames", 4) == [0, 1, 3, 5]
    assert v.source == "manipulated_sequences/Deepfakes/c23/videos/000_001.mp4"
    assert v.frames[0] == "demo/manipulated_sequences/Deepfakes/c23/videos/000_001/frames/000.png"
    crop = cv2.imread(str(index.resolve(v.frames[0])))
    assert crop.shape == (64, 64, 3)
    lm = np.load(index.resolve(v.landmarks[0]))
    assert lm.shape == (68, 2) and lm.dtype == np.float32
    assert (lm > -5).all() and (lm < 69).all()
    mask = cv2.imread(str(index.resolve(v.masks[0])), cv2.IMREAD_GRAYSCALE)
    assert set(np.unique(mask)) <= {0, 255} and mask.mean() > 20
    assert by_key[("real", "000")].masks is None
    assert by_key[("Deepfakes", "003_002")].masks is None  # its mask video is corrupt
    assert len(by_key[("Deepfakes", "003_002")].frames) == 4
    assert len(by_key[("Deepfakes", "002_003")].frames) == 2  # short video: all its frames
    # both test videos were skipped (no face, corrupt): the test split is flagged
    assert index.split_info == {"train": "official", "val": "official", "test": "empty"}


def test_crop_matches_direct_alignment(first_run, ff_raw):
    """The saved crop is the aligned face of the sampled source frame (RGB order kept)."""
    from fairforensics.preprocessing.align import align_face
    from fairforensics.preprocessing.faces import FaceAnalyzer

    _, out, _ = first_run
    index = read_index(out / "demo.json")
    v = next(x for x in index.videos if x.id == "001")
    frame = read_frames(ff_raw / v.source, [v.frame_indices[1]])[v.frame_indices[1]]
    (box, lm), *_ = FaceAnalyzer().analyze(frame)
    crop, _, crop_lm = align_face(frame, lm, size=64)
    saved = cv2.cvtColor(cv2.imread(str(index.resolve(v.frames[1]))), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(saved, crop)
    np.testing.assert_allclose(np.load(index.resolve(v.landmarks[1])), crop_lm, atol=1e-5)


def test_manifest_lists_every_skip(first_run):
    _, out, _ = first_run
    manifest = json.loads((out / "demo.manifest.json").read_text())
    reasons = {v["id"]: v["reason"] for v in manifest["skipped_videos"]}
    assert "no face" in reasons["004"]
    assert "cannot open video" in reasons["005"] or "no decodable frame" in reasons["005"]
    assert any(
        w["id"] == "002_003" and "only 2 frames" in w["warning"] for w in manifest["warnings"]
    )
    assert any(n["id"] == "003_002" and "mask unreadable" in n["note"] for n in manifest["notes"])
    problems = " ".join(p["reason"] for p in manifest["layout_problems"])
    assert "no row in" in problems  # 004/005 have no attributes row
    assert manifest["summary"]["videos_done"] == 8
    log = (out / "demo.log").read_text()
    assert "skipped real/004" in log and "skipped real/005" in log


def test_rerun_skips_finished_videos(first_run):
    cfg, out, _ = first_run
    before = snapshot(out)
    summary = run_preprocess(cfg, workers=1, progress=False)
    assert summary.videos_cached == 8 and summary.faces == 0  # nothing recomputed
    assert snapshot(out) == before


def test_resume_after_a_kill_redoes_half_written_videos(first_run, tmp_path):
    cfg, out, _ = first_run
    work = tmp_path / "out"
    shutil.copytree(out, work)
    before = snapshot(work)
    cfg2 = config(Path(cfg.dataset.root), work)
    video = work / "demo" / "original_sequences" / "youtube" / "c23" / "videos"
    # a kill mid-video leaves only the hidden temporary folder, never a half video folder
    shutil.rmtree(video / "001")
    stale = video / ".001.tmp-killed"
    (stale / "frames").mkdir(parents=True)
    (stale / "frames" / "000.png").write_bytes(b"half")
    # a finished video that lost a file (disk trouble) is redone as well
    (video / "000" / "landmarks" / "003.npy").unlink()
    (work / "demo.json").unlink()  # the kill came before the index was written
    summary = run_preprocess(cfg2, workers=1, progress=False)
    assert summary.videos_cached == 6
    assert not stale.exists()
    assert snapshot(work) == before


def test_changed_settings_and_overwrite_redo(first_run, tmp_path):
    cfg, out, _ = first_run
    work = tmp_path / "out"
    shutil.copytree(out, work)
    raw = Path(cfg.dataset.root)
    summary = run_preprocess(config(raw, work, **{"align.size": 48}), workers=1, progress=False)
    assert summary.videos_cached == 0 and summary.videos_done == 8
    index = read_index(work / "demo.json")
    assert cv2.imread(str(index.resolve(index.videos[0].frames[0]))).shape == (48, 48, 3)
    summary = run_preprocess(config(raw, work, **{"align.size": 48}), overwrite=True, workers=1)
    assert summary.videos_cached == 0


def test_shards_then_index_only_equals_full_run(first_run, tmp_path):
    cfg, out, _ = first_run
    work = tmp_path / "out"
    cfg2 = config(Path(cfg.dataset.root), work)
    seen: set[tuple[str, str]] = set()
    for i in range(2):
        s = run_preprocess(cfg2, workers=2 if i == 0 else 1, num_shards=2, shard_index=i)
        part = read_index(s.index_path, check_files=True)
        keys = {(v.method, v.id) for v in part.videos}
        assert not keys & seen
        seen |= keys
        assert s.index_path.name == f"demo.shard-{i}-of-2.json"
    summary = run_preprocess(cfg2, index_only=True)
    assert summary.videos_pending == 2  # the two bad videos have no completion record
    assert snapshot(work) == snapshot(out)
    with pytest.raises(ValueError, match="shard"):
        run_preprocess(cfg2, num_shards=2, shard_index=2)


def test_jpeg_output_and_smoothing(ff_raw, tmp_path):
    cfg = config(ff_raw, tmp_path, **{"output.format": "jpg", "align.smooth_window": 3})
    run_preprocess(cfg, workers=1, progress=False)
    index = read_index(tmp_path / "demo.json", check_files=True)
    assert index.videos[0].frames[0].endswith(".jpg")


def test_fixed_stride_on_the_real_video(tmp_path):
    raw = tmp_path / "raw"
    (raw / "real").mkdir(parents=True)
    shutil.copy(DATA / "videos" / "short_hamilton_clip.mp4", raw / "real" / "clip.mp4")
    cfg = load_preprocess_config(
        overrides=[
            "dataset.name=clip",
            "dataset.type=generic",
            f"dataset.root={raw}",
            "dataset.options.ratios={test: 1.0}",
            f"output.root={tmp_path / 'out'}",
            "sampling.mode=fixed_stride",
            "sampling.stride=100",
            "face.retry_upsample=0",
            "align.size=64",
        ]  # fmt: skip
    )
    summary = run_preprocess(cfg, workers=1, progress=False)
    index = read_index(tmp_path / "out" / "clip.json", check_files=True)
    (v,) = index.videos
    # frame 0 has only a small face in the background, which HOG finds with upsample 1 only
    assert summary.frames_sampled == 3 and v.frame_indices == [100, 200]
    manifest = json.loads((tmp_path / "out" / "clip.manifest.json").read_text())
    assert manifest["skipped_frames"] == [
        {"method": "real", "id": "real__clip", "frame": 0, "reason": "no face"}
    ]
    assert v.split == "test" and v.label == 0 and v.method == "real"
    assert index.split_info["test"].startswith("derived") and index.split_info["train"] == "empty"
    cfg.face.retry_upsample = 1
    run_preprocess(cfg, workers=1, progress=False)  # new settings: the video is redone
    assert read_index(tmp_path / "out" / "clip.json").videos[0].frame_indices == [0, 100, 200]


def test_sample_indices():
    assert sample_indices(100, "fixed_num_frames", 4) == [0, 33, 66, 99]
    assert sample_indices(3, "fixed_num_frames", 32) == [0, 1, 2]
    assert sample_indices(10, "fixed_stride", stride=4) == [0, 4, 8]
    assert sample_indices(0) == []
    with pytest.raises(ValueError, match="mode"):
        sample_indices(10, "random")  # type: ignore[arg-type]


def test_read_frames_decodes_only_what_is_asked(ff_raw):
    path = ff_raw / "original_sequences" / "youtube" / "c23" / "videos" / "000.mp4"
    frames = read_frames(path, [1, 4, 9])  # 9 is past the end of a 6-frame video
    assert sorted(frames) == [1, 4] and frames[1].shape[0] == 240 and frames[1].ndim == 3


@pytest.mark.parametrize(
    "override, message",
    [
        ("sampling.mode=every", "sampling.mode"),
        ("face.detector=retinaface", "face.detector"),
        ("face.detect_on=hsv", "face.detect_on"),
        ("face.face_size_from_previous=maybe", "face.face_size_from_previous"),
        ("align.scale=0.5", "align"),
        ("dataset.colour=red", "dataset.colour"),
        ("dataset.options.compression=c99", "compression"),
    ],
)
def test_config_errors_name_the_key(ff_raw, tmp_path, override, message):
    with pytest.raises(ConfigError, match=message):
        cfg = config(ff_raw, tmp_path, **dict([override.split("=")]))
        run_preprocess(cfg, workers=1, progress=False)


def test_all_faces_option_on_a_photo_of_two_people(tmp_path):
    raw = tmp_path / "raw"
    (raw / "real").mkdir(parents=True)
    shutil.copy(DATA / "faces" / "face_recognition" / "two_people.jpg", raw / "real" / "two.jpg")
    base = [
        "dataset.name=two", "dataset.type=generic", f"dataset.root={raw}",
        f"output.root={tmp_path / 'out'}", "align.size=64", "face.upsample=1",
    ]  # fmt: skip
    run_preprocess(load_preprocess_config(overrides=base), workers=1, progress=False)
    assert len(read_index(tmp_path / "out" / "two.json").videos[0].frames) == 1
    cfg = load_preprocess_config(overrides=base + ["face.keep=all"])
    run_preprocess(cfg, workers=1, progress=False)
    (v,) = read_index(tmp_path / "out" / "two.json", check_files=True).videos
    assert [Path(f).name for f in v.frames] == ["000_0.png", "000_1.png"]
    assert v.frame_indices == [0, 0]
    a, b = (np.load(read_index(tmp_path / "out" / "two.json").resolve(p)) for p in v.landmarks)
    assert a.shape == b.shape == (68, 2)


def crash_on_001(item):
    """A worker function that kills its process on real/001 (like a segfault in a decoder)."""
    import os

    from fairforensics.preprocessing.worker import VideoResult

    if item.key == ("real", "001"):
        os._exit(3)
    return VideoResult(key=item.key, frames_sampled=1)


def test_a_crashing_worker_skips_only_its_video():
    from fairforensics.preprocessing.datasets.base import SourceItem
    from fairforensics.preprocessing.pipeline import _run_pool

    items = [SourceItem(f"{k:03d}", 0, "real", "train", Path("x"), f"r/{k}") for k in range(6)]
    results = []
    _run_pool(items, crash_on_001, 2, results.append)
    by_key = {r.key: r for r in results}
    assert len(results) == 6
    assert by_key[("real", "001")].reason == "the worker process crashed on it"
    assert all(r.reason is None for k, r in by_key.items() if k != ("real", "001"))


def crash_on_001_while_000_runs(flag_dir, item):
    """000 is busy when 001 kills its process, so the pool stops 000's worker mid-video too."""
    import os
    import time

    from fairforensics.preprocessing.worker import VideoResult

    started = Path(flag_dir) / "000-started"
    if item.key == ("real", "000"):
        started.touch()
        time.sleep(1.0)
    elif item.key == ("real", "001"):
        deadline = time.time() + 10
        while not started.exists() and time.time() < deadline:
            time.sleep(0.01)
        os._exit(3)
    return VideoResult(key=item.key, frames_sampled=1)


@pytest.mark.slow
def test_a_video_stopped_with_the_crashing_worker_is_run_again(tmp_path):
    import functools

    from fairforensics.preprocessing.datasets.base import SourceItem
    from fairforensics.preprocessing.pipeline import _run_pool

    items = [SourceItem(f"{k:03d}", 0, "real", "train", Path("x"), f"r/{k}") for k in range(4)]
    results = []
    _run_pool(
        items, functools.partial(crash_on_001_while_000_runs, str(tmp_path)), 2, results.append
    )
    reasons = {r.key[1]: r.reason for r in results}
    assert sorted(reasons) == ["000", "001", "002", "003"] and len(results) == 4
    assert reasons == {
        "000": None,
        "001": "the worker process crashed on it",
        "002": None,
        "003": None,
    }


@pytest.mark.slow
def test_sigkill_mid_run_then_resume(first_run, tmp_path):
    """Kill the real script with SIGKILL after its first finished video, re-run, same output."""
    import signal
    import subprocess
    import sys
    import time

    cfg, out, _ = first_run
    work = tmp_path / "out"
    # 2 of the 10 videos fail on purpose (make_ff_tree): accept them
    sets = [f"dataset.root={cfg.dataset.root}", f"output.root={work}",
            f"dataset.attributes.csv={Path(cfg.dataset.root) / 'attributes.csv'}",
            "sampling.num_frames=4", "align.size=64", "dataset.options.methods=[Deepfakes]",
            "dataset.options.masks=true", "max_failed_share=1"]  # fmt: skip
    cmd = [sys.executable, str(Path(__file__).resolve().parents[1] / "scripts" / "preprocess.py"),
           "--config", str(Path(__file__).resolve().parents[1] / "configs/preprocess/demo.yaml"),
           "--workers", "1", "--no-progress"] + [a for s in sets for a in ("--set", s)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if any((work / "demo").rglob("_done.json")):
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (work / "demo.json").exists()
    # only whole videos (with their record) or hidden temporary folders can be left behind
    for folder in (work / "demo").rglob("frames"):
        assert (folder.parent / "_done.json").is_file() or folder.parent.name.startswith(".")
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert not [p for p in (work / "demo").rglob(".*.tmp-*")]
    assert snapshot(work) == snapshot(out)


def test_a_frame_that_cannot_be_aligned_is_skipped_not_the_video(tmp_path, ff_raw):
    from fairforensics.preprocessing.faces import FaceAnalyzer
    from fairforensics.preprocessing.worker import STAGES, _write

    cfg = config(ff_raw, tmp_path)
    frame = face_frames(1)[0]
    lm = FaceAnalyzer().analyze(frame)[0][1]
    found = [(0, 0, np.zeros((68, 2), np.float32)), (1, 0, lm)]
    skipped: list = []
    record = _write(
        cfg, {0: frame, 1: frame}, found, [f[2] for f in found], None, tmp_path,
        dict.fromkeys(STAGES, 0.0), skipped,
    )  # fmt: skip
    assert record["frames"] == ["frames/001.png"] and record["frame_indices"] == [1]
    assert skipped[0]["frame"] == 0 and "alignment failed" in skipped[0]["reason"]


def test_outputs_honour_the_umask(ff_raw, tmp_path):
    """Video folders (made through mkdtemp, 0700 by itself) and files follow the umask (022)."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        run_preprocess(config(ff_raw, tmp_path), workers=1, progress=False)
    finally:
        os.umask(old)
    paths = [tmp_path / "demo.json", *(tmp_path / "demo").rglob("*")]
    assert any(p.is_dir() for p in paths) and any(p.is_file() for p in paths)
    for p in paths:
        want = 0o755 if p.is_dir() else 0o644
        assert stat.S_IMODE(p.stat().st_mode) == want, p


@pytest.mark.parametrize(
    ("over", "follows"),
    [({}, True), ({"face.face_size_from_previous": "false"}, False), ({"face.keep": "all"}, False)],
)
def test_each_kept_frame_gets_the_previous_face_size(ff_raw, tmp_path, monkeypatch, over, follows):
    from fairforensics.preprocessing import worker
    from fairforensics.preprocessing.faces import FaceAnalyzer

    calls: list[tuple[float | None, tuple | None]] = []  # (face_size given, largest box)
    real = FaceAnalyzer.detect

    def spy(analyzer, rgb, face_size=None):
        boxes = real(analyzer, rgb, face_size)
        calls.append((face_size, boxes[0] if boxes else None))
        return boxes

    monkeypatch.setattr(FaceAnalyzer, "detect", spy)
    monkeypatch.setattr(worker, "_ANALYZERS", {})
    cfg = config(ff_raw, tmp_path / "out", **over)
    cfg.dataset.options["methods"] = []  # the real videos only
    run_preprocess(cfg, workers=1, progress=False)
    hints = [hint for hint, _ in calls]
    assert len(calls) >= 4
    if not follows:
        assert hints == [None] * len(calls)
        return
    # within a video each call gets the side of the face found the call before
    for (_, before), (hint, _) in zip(calls[:-1], calls[1:], strict=True):
        if hint is not None:
            assert before is not None and hint == min(before[2] - before[0], before[3] - before[1])
    assert hints.count(None) >= 2  # each video starts without one


@pytest.mark.parametrize(("models", "loaded"), [(None, 2), ("/nonexistent", 1)])
def test_pool_preload_loads_the_models_and_never_fails(models, loaded):
    """The fork server imports preprocessing.pool_preload: models loaded once, errors left to
    the worker that needs the model (a missing file must not stop the server)."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    code = (
        "from pathlib import Path\n"
        "import fairforensics.preprocessing.faces as faces\n"
        + (f"faces.models_dir = lambda: Path({models!r})\n" if models else "")
        + "import fairforensics.preprocessing.pool_preload\n"
        "print(faces._load.cache_info().currsize)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [str(loaded)]


def test_a_partial_dataset_is_an_error_unless_allowed(ff_raw, tmp_path, capsys):
    """Issue 29 item 5: listed videos that are not on disk are counted; above max_failed_share
    it is an error before anything is processed, unless allow_partial says the subset is
    intended; then the index and manifest record the counts and the set is named partial."""
    from fairforensics.cli.errors import run_cli
    from fairforensics.cli.preprocess import main
    from fairforensics.preprocessing.pipeline import PartialDataset

    cfg = config(ff_raw, tmp_path / "out", **{"dataset.options.allow_partial": "false"})
    with pytest.raises(PartialDataset, match=r"2 of the 12 videos .*allow_partial: true"):
        run_preprocess(cfg, workers=1, progress=False)
    assert not (tmp_path / "out" / "demo.json").exists()  # failed before processing anything
    demo = Path(__file__).resolve().parents[1] / "configs" / "preprocess" / "demo.yaml"
    sets = [f"dataset.root={ff_raw}", f"output.root={tmp_path / 'out'}"]
    sets += ["dataset.attributes=null", "dataset.options.methods=[Deepfakes]"]
    with pytest.raises(SystemExit) as stop:  # the command: one line, exit 2
        run_cli(main, ["--config", str(demo), *(a for s in sets for a in ("--set", s))])
    assert stop.value.code == 2 and "allow_partial" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="allow_partial' expects true or false"):
        config(ff_raw, tmp_path / "x", **{"dataset.options.allow_partial": "sometimes"})


def test_a_partial_dataset_allowed_is_counted_and_named(first_run):
    _, out, summary = first_run
    index = read_index(out / "demo.json")
    assert (index.videos_listed, index.videos_found) == (12, 10)
    assert index.label == "demo (partial: 10 of 12 listed videos)"
    manifest = json.loads((out / "demo.manifest.json").read_text())
    assert manifest["summary"]["videos_listed"] == 12 and manifest["summary"]["videos_found"] == 10
    (reason,) = [
        p["reason"] for p in manifest["layout_problems"] if "2 of 12 videos" in p["reason"]
    ]
    assert "allow_partial is true" in reason and "needs" not in reason  # issue 40, item 8


def test_a_truncated_video_is_a_warning_in_the_manifest(tmp_path, caplog):
    """A video whose header promises more frames than it holds keeps what it has, and the
    manifest records a warning (not only an INFO line in the log)."""
    import av

    raw = make_ff_tree(tmp_path / "raw")
    path = raw / "original_sequences" / "youtube" / "c23" / "videos" / "000.mp4"
    with av.open(str(path), "w", options={"movflags": "faststart"}) as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        for frame in face_frames(8):
            frame = cv2.resize(frame, (320, 240))
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * 0.7)])  # the header (at the front) still says 8
    cfg = config(raw, tmp_path / "out", **{"sampling.num_frames": 8})
    with caplog.at_level("WARNING"):
        summary = run_preprocess(cfg, workers=1, progress=False)
    manifest = json.loads((tmp_path / "out" / "demo.manifest.json").read_text())
    (warning,) = [w for w in manifest["warnings"] if w["id"] == "000"]
    assert "past the real end" in warning["warning"] and "header says 8" in warning["warning"]
    assert "past the real end" in caplog.text and summary.warnings >= 1
    # a resumed run lists it again (kept in the video's completion record)
    run_preprocess(cfg, workers=1, progress=False)
    manifest = json.loads((tmp_path / "out" / "demo.manifest.json").read_text())
    assert any(w["id"] == "000" for w in manifest["warnings"])


def test_the_index_records_its_crop_and_the_mesonet_preset_crops_so(first_run, ff_raw, tmp_path):
    """Issue 29 item 3: the index says how its faces were cropped; ``--config crop/mesonet``
    (align.method mesonet) crops every frame the MesoNet authors' way."""
    from fairforensics.configs.crop import CropSpec
    from fairforensics.preprocessing.align import face_span
    from fairforensics.preprocessing.pipeline import list_items
    from fairforensics.preprocessing.worker import process_item

    _, out, _ = first_run
    assert read_index(out / "demo.json").crop == CropSpec("template", 1.3, 64)
    demo = Path(__file__).resolve().parents[1] / "configs" / "preprocess" / "demo.yaml"
    preset = load_preprocess_config(demo, "crop/mesonet")
    assert preset.align.crop == CropSpec("mesonet", 2.86, 256)
    assert preset.output.root == "datasets/mesonet_crop"
    cfg = config(ff_raw, tmp_path, **{"align.method": "mesonet", "align.scale": 2.86})
    assert cfg.fingerprint() != config(ff_raw, tmp_path).fingerprint()
    item = next(it for it in list_items(cfg).items if it.id == "000")
    result = process_item(item, cfg, tmp_path / "000")
    assert result.reason is None and result.record["frames"]
    for rel in result.record["landmarks"]:
        lm = np.load(tmp_path / "000" / rel)
        assert 64 / face_span(lm) == pytest.approx(2.86, rel=1e-4)
