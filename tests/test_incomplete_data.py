"""Incomplete data cannot pass as complete (issue 46, item 5): an interrupted preprocessing run
leaves an index marked incomplete, which train, test, benchmark, fairness and robustness refuse
unless --allow-partial (then the tables name it partial); the rerun resumes to the same index;
CSV-listed datasets follow the missing-files rule of every layout."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import yaml

from fairforensics.cli import main as cli_main
from fairforensics.preprocessing import pipeline
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.preprocessing.index import (
    DatasetIndex,
    IncompleteIndexError,
    VideoEntry,
    check_complete,
    read_index,
    write_index,
)
from tests.testdata import CELEBRITIES

FACES = sorted(CELEBRITIES.glob("img*.jpg"))[:7]


def _generic_tree(root: Path) -> Path:
    """7 real photographs as a generic dataset: 3 in real/, 4 in fake/ (the labels are made up)."""
    for n, face in enumerate(FACES):
        folder = root / ("real" if n < 3 else "fake")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(face, folder / face.name)
    return root


def _config(raw: Path, out: Path, *extra: str):
    sets = [f"dataset.root={raw}", f"output.root={out}", "dataset.name=seven"]
    sets += ["sampling.num_frames=1", "align.size=64", "max_failed_share=1", *extra]
    return load_preprocess_config("generic", overrides=sets)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A clean run, and a run stopped by Ctrl-C after 3 of the 7 items, then resumed."""
    raw = _generic_tree(tmp_path_factory.mktemp("raw"))
    clean = tmp_path_factory.mktemp("clean")
    pipeline.run_preprocess(_config(raw, clean), workers=1, progress=False)
    stopped = tmp_path_factory.mktemp("stopped")
    real = pipeline.process_item
    calls = []

    def stop_after_three(item, cfg, folder):
        if len(calls) == 3:
            raise pipeline.StopRequested(signal.SIGINT)
        calls.append(item.key)
        return real(item, cfg, folder)

    mp = pytest.MonkeyPatch()
    mp.setattr(pipeline, "process_item", stop_after_three)
    try:
        with pytest.raises(pipeline.PreprocessInterrupted) as info:
            pipeline.run_preprocess(_config(raw, stopped), workers=1, progress=False)
    finally:
        mp.undo()
    interrupted = json.loads((stopped / "seven.json").read_text())
    return raw, clean, stopped, interrupted, str(info.value)


def test_an_interrupted_run_leaves_an_index_marked_incomplete(runs) -> None:
    raw, _, stopped, data, message = runs
    assert len(data["videos"]) == 3
    assert data["videos_pending"] == 4  # the true count of what is not done
    assert data["videos_listed"] == data["videos_found"] == 7  # what the disk holds
    assert data["source_root"] == raw.resolve().as_posix()
    assert "seven.json is marked incomplete" in message and "--allow-partial" in message
    index = read_index(stopped / "seven.json")
    assert index.incomplete == "3 videos preprocessed, 4 not yet (interrupted run)"
    assert index.label == "seven (partial: 3 videos preprocessed, 4 not yet (interrupted run))"
    with pytest.raises(IncompleteIndexError, match="seven.json: incomplete dataset index"):
        check_complete(stopped / "seven.json")
    with pytest.raises(IncompleteIndexError):
        check_complete(index)
    lacks = check_complete(stopped / "seven.json", allow_partial=True)
    assert lacks == index.incomplete


def test_the_rerun_resumes_to_the_same_complete_index(runs) -> None:
    raw, clean, stopped, _, _ = runs
    pipeline.run_preprocess(_config(raw, stopped), workers=1, progress=False)
    resumed = (stopped / "seven.json").read_text()
    assert resumed == (clean / "seven.json").read_text()
    assert "videos_pending" not in json.loads(resumed)
    check_complete(stopped / "seven.json")  # complete: no error
    assert json.loads(resumed)["schema_version"] == 4  # source_root


def test_a_csv_listed_dataset_with_a_missing_file_stops_before_processing(tmp_path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for face in FACES[:2]:
        shutil.copy(face, raw / face.name)
    rows = [f"{FACES[0].name},0,train", f"{FACES[1].name},1,test", "gone.jpg,1,test"]
    (raw / "list.csv").write_text("path,label,split\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out"
    cfg = load_preprocess_config(
        "generic",
        overrides=[f"dataset.root={raw}", f"output.root={out}", "dataset.options.csv=list.csv"],
    )
    with pytest.raises(pipeline.PartialDataset, match="1 of the 3 videos the dataset lists"):
        pipeline.run_preprocess(cfg, workers=1, progress=False)
    assert not (out / "generic.json").exists()  # nothing processed, no index
    listing = pipeline.list_items(cfg)
    assert (listing.videos_listed, listing.videos_found) == (3, 2)
    assert listing.missing_paths == [str(raw / "gone.jpg")]


# ---------------------------------------------------------------- the commands


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """An index 'tiny' of 6 real faces (2 frames each) that an interrupted run left with 2
    videos pending, and a Meso4 run directory (the pattern of test_eval_script.py)."""
    root = tmp_path_factory.mktemp("incomplete")
    data = root / "data"
    videos = []
    for v, path in enumerate(sorted(CELEBRITIES.glob("img*.jpg"))[:6]):
        img = cv2.resize(cv2.imread(str(path)), (64, 64), interpolation=cv2.INTER_AREA)
        method = "DF" if v % 2 else "real"
        rel = [f"tiny/{method}/{v:03d}/frames/{f:03d}.png" for f in range(2)]
        for f, r in enumerate(rel):
            (data / r).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(data / r), np.roll(img, 3 * f, axis=1))
        videos.append(
            VideoEntry(f"{v:03d}", v % 2, method, "test", rel, attributes={"g": "ab"[v // 4]})
        )
    index = DatasetIndex("tiny", "deepfake", videos, root=data, videos_pending=2)
    write_index(index, data / "tiny.json")
    from fairforensics.detectors import build_detector, save_checkpoint

    torch.manual_seed(0)
    model = build_detector("meso4", input_size=64)
    run = root / "run"
    (run / "checkpoints").mkdir(parents=True)
    save_checkpoint(run / "checkpoints" / "best.pt", {"model": model.state_dict(), "meta": {}})
    cfg = {
        "detector": "meso4",
        "model": {"input_size": 64},
        "train": {"test_frame_num": 2},
        "data": {"data_root": str(data), "train_data": ["tiny"]},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    return root, data, run


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stop:
        cli_main(argv)
    return stop.value.code, capsys.readouterr().err


def _refused(code: int, err: str, data: Path) -> bool:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    return (
        code == 2
        and len(lines) == 1
        and f"{data / 'tiny.json'}: incomplete dataset index" in lines[0]
        and "--allow-partial" in lines[0]
    )


def test_test_refuses_an_incomplete_index_and_allows_it_named_partial(tiny, tmp_path, capsys):
    _, data, run = tiny
    args = ["test", "--run", str(run), "--test-data", "tiny", "--data-root", str(data)]
    args += ["--set", "n_boot=0", "--set", "plots=false", "--set", "levels=[video]"]
    code, err = _cli([*args, "--out", str(tmp_path / "refused")], capsys)
    assert _refused(code, err, data), err
    assert not (tmp_path / "refused" / "predictions").exists()  # nothing scored
    code, err = _cli([*args, "--out", str(tmp_path / "ev"), "--allow-partial"], capsys)
    assert code == 0, err
    label = "tiny (partial: 6 videos preprocessed, 2 not yet (interrupted run))"
    tables = list((tmp_path / "ev" / "tables").glob("*.md"))
    assert tables and all(label in t.read_text() for t in tables)
    assert label in (tmp_path / "ev" / "report.html").read_text()


def test_robustness_allowed_names_the_set_partial_in_its_tables(tiny, tmp_path, capsys):
    _, data, run = tiny
    out = tmp_path / "rob"
    argv = ["robustness", "--run", str(run), "--test-data", "tiny", "--data-root", str(data)]
    argv += ["--types", "GB", "--levels", "1", "--out", str(out), "--no-progress"]
    argv += ["--set", "n_boot=0", "--set", "plots=false", "--allow-partial"]
    code, err = _cli(argv, capsys)
    assert code == 0, err
    label = "tiny (partial: 6 videos preprocessed, 2 not yet (interrupted run))"
    assert label in (out / "robustness_table.md").read_text()
    assert label in (out / "robustness_fairness_table.md").read_text()


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--detector", "meso4", "--train-data", "tiny", "--output-dir", "{tmp}/runs"],
        ["robustness", "--run", "{run}", "--test-data", "tiny", "--out", "{tmp}/rob"],
        ["benchmark", "--detectors", "meso4", "--train-data", "tiny", "--out", "{tmp}/bench"],
        ["fairness", "--protocol", "protocol_1", "--dataset", "tiny", "--out", "{tmp}/fair"],
    ],
    ids=["train", "robustness", "benchmark", "fairness"],
)
def test_every_verb_that_reads_data_refuses_an_incomplete_index(tiny, tmp_path, capsys, argv):
    _, data, run = tiny
    argv = [a.format(tmp=tmp_path, run=run) for a in argv] + ["--data-root", str(data)]
    code, err = _cli(argv, capsys)
    assert _refused(code, err, data), err


def test_benchmark_passes_allow_partial_to_every_run(tmp_path) -> None:
    from fairforensics.benchmarks.sweep import (
        Sweep,
        eval_command,
        robustness_command,
        train_command,
    )

    sweep = Sweep(detectors=["meso4"], out=tmp_path, train_data=["tiny"], allow_partial=True)
    for command in (train_command, eval_command, robustness_command):
        assert "--allow-partial" in command(sweep, "meso4")
    assert "--allow-partial" not in train_command(Sweep(["meso4"], tmp_path), "meso4")


def test_a_combination_with_an_incomplete_part_stays_incomplete(tiny, tmp_path) -> None:
    from fairforensics.preprocessing.combine import combine_indexes

    _, data, _ = tiny
    part = read_index(data / "tiny.json")
    whole = DatasetIndex("whole", "deepfake", part.videos[:2], root=data)
    combined = combine_indexes([part, whole], "both", data)
    assert combined.videos_pending == 2 and combined.incomplete
    write_index(combined, data / "both.json")
    with pytest.raises(IncompleteIndexError, match="both.json"):
        check_complete(data / "both.json")
    assert combine_indexes([whole], "one", data).videos_pending is None
