"""Submissions to a shared leaderboard (issue 49): bundles, manifests, benchmark definitions,
the checks that admit or refuse a bundle, and ``fairforensics submit`` / ``board``."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from fairforensics.benchmarks.submissions.build import check_bundles
from fairforensics.benchmarks.submissions.bundle import SubmitSettings, make_bundle, read_bundle
from fairforensics.benchmarks.submissions.checks import BundleRefused, admit
from fairforensics.benchmarks.submissions.definition import (
    definition_from_indexes,
    load_definition,
    parse_definition,
    shipped_definitions,
    write_definition,
)
from fairforensics.benchmarks.submissions.manifest import (
    manifest_mismatch,
    manifest_sha256,
    write_manifest,
)
from fairforensics.cli import main as fairforensics_main
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.evaluation.provenance import file_sha256, write_provenance
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index

FRAMES = 6  # frames of each video in the index
FRAME_NUM = 4  # frames a video scores
VIDEOS = [("real", "000"), ("real", "001"), ("real", "002"), ("Deepfakes", "000_001"),
          ("Deepfakes", "001_002"), ("Deepfakes", "002_000")]  # fmt: skip


def make_index(root: Path, name: str = "tiny") -> Path:
    """A tiny index of 6 test videos (3 real, 3 fake) and one train video."""
    videos = [
        VideoEntry(vid, int(m != "real"), m, "test", [f"{m}/{vid}/{i:03d}.png" for i in range(FRAMES)],
                   None, None, {"gender": "female" if k % 2 else "male"})
        for k, (m, vid) in enumerate(VIDEOS)
    ]  # fmt: skip
    videos.append(VideoEntry("009", 0, "real", "train", ["real/009/000.png"], None, None, {}))
    path = root / f"{name}.json"
    write_index(DatasetIndex(name, "deepfake", videos, root=root), path)
    return path


def make_eval(
    folder: Path,
    index: Path,
    *,
    detector: str = "xception",
    drop: int | None = None,
    rows: int = FRAME_NUM,
    index_sha256: str | None = "from index",
    seed: int = 0,
) -> Path:
    """An evaluation folder of ``fairforensics test`` on ``index`` (``rows`` frames a video;
    ``drop``: leave that video out), with the predictions writer and its provenance."""
    keep = [v for k, v in enumerate(VIDEOS) if k != drop]
    n = len(keep) * rows
    rng = np.random.default_rng(seed)
    pred = Predictions(
        dataset=["tiny"] * n,
        video_id=[vid for _, vid in keep for _ in range(rows)],
        frame=[f for _ in keep for f in range(rows)],
        label=[int(m != "real") for m, _ in keep for _ in range(rows)],
        score=rng.uniform(size=n),
        method=[m for m, _ in keep for _ in range(rows)],
        attributes={"gender": ["male"] * n},
    )
    target = folder / "predictions" / "tiny.csv"
    target.parent.mkdir(parents=True)
    write_predictions(target, pred)
    sha = file_sha256(index) if index_sha256 == "from index" else index_sha256
    write_provenance(target, {"detector": detector, "weights_sha256": "ab" * 32,
                              "index": str(index), "index_sha256": sha,
                              "settings": {"split": "test", "frame_num": FRAME_NUM}})  # fmt: skip
    info = {"detector": detector, "train_data": "demo", "test_data": ["tiny"], "threshold": 0.5}
    (folder / "eval.json").write_text(json.dumps(info), encoding="utf-8")
    return folder


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A tiny index, its definition and a bundle maker."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    data = tmp_path / "data"
    data.mkdir()
    index = make_index(data)
    definition = parse_definition(
        definition_from_indexes(["tiny"], data, name="tiny-bench", frame_num=FRAME_NUM)
    )

    def bundle(name: str, **kw) -> Path:
        ev = make_eval(tmp_path / "evals" / name, index, **kw)
        return make_bundle([ev], tmp_path / "bundles" / name)

    return index, definition, bundle


def refusal(bundle: Path, definition) -> str:
    with pytest.raises(BundleRefused) as info:
        admit(bundle, definition)
    line = str(info.value)
    assert "\n" not in line
    return line


def test_manifest_round_trip_and_tamper(tmp_path: Path) -> None:
    """Break checked: hashing only the sizes (or skipping the comparison) fails the tamper."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.csv").write_text("1,2\n")
    (tmp_path / "y.json").write_text("{}")
    sha = write_manifest(tmp_path)
    assert sha == manifest_sha256(tmp_path) and manifest_mismatch(tmp_path) is None
    files = json.loads((tmp_path / "manifest.json").read_text())["files"]
    assert list(files) == ["a/b/x.csv", "y.json"]
    (tmp_path / "a" / "b" / "x.csv").write_text("1,3\n")  # same size, other bytes
    assert manifest_mismatch(tmp_path) == (
        "a/b/x.csv: SHA-256 differs from the manifest (changed after submission)"
    )
    (tmp_path / "a" / "b" / "x.csv").write_text("1,2\n")
    (tmp_path / "extra.txt").write_text("")
    assert manifest_mismatch(tmp_path) == "extra.txt: present, not in the manifest"
    (tmp_path / "extra.txt").unlink()
    (tmp_path / "y.json").unlink()
    assert manifest_mismatch(tmp_path) == "y.json: in the manifest, absent"


def test_submit_packs_and_a_board_admits(board, tmp_path: Path, capsys) -> None:
    """Break checked: copying no provenance into the bundle refuses it (missing provenance)."""
    index, definition, _ = board
    evals = [make_eval(tmp_path / f"seed{s}", index, seed=s) for s in (1, 2)]
    card = tmp_path / "card.md"
    card.write_text("# xception\n")
    out = tmp_path / "bundle"
    with pytest.raises(SystemExit) as info:
        fairforensics_main(["submit", *map(str, evals), "--out", str(out), "--card", str(card),
                            "--package", "hf:lab/xception@0123abc"])  # fmt: skip
    assert info.value.code == 0, capsys.readouterr().err
    meta = read_bundle(out)
    assert meta["submitted"] == "2023-11-14T22:13:20Z"  # SOURCE_DATE_EPOCH
    assert meta["package"] == {"ref": "hf:lab/xception@0123abc"} and meta["card"] == "card.md"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "bundle.json", "card.md",
        "evals/1/eval.json", "evals/1/predictions/tiny.csv",
        "evals/1/predictions/tiny.provenance.json",
        "evals/2/eval.json", "evals/2/predictions/tiny.csv",
        "evals/2/predictions/tiny.provenance.json",
        "manifest.json",
    ]  # fmt: skip
    admitted = admit(out, definition)
    assert admitted.detector == "xception" and admitted.track == "benchmark"
    assert admitted.eval_dirs == (out / "evals" / "1", out / "evals" / "2")
    assert admitted.added == "2023-11-14T22:13:20Z" and admitted.card == out / "card.md"
    assert admitted.sha256 == file_sha256(out / "manifest.json")
    assert admitted.code_version.startswith("fairforensics ")
    assert admitted.package == "hf:lab/xception@0123abc" and admitted.notes == ()


def test_archives_are_reproducible_and_unpacked_once(board, tmp_path: Path) -> None:
    """Break checked: the gzip header's mtime left to the clock makes the two archives differ."""
    index, definition, _ = board
    ev = make_eval(tmp_path / "ev", index)
    a = make_bundle([ev], tmp_path / "a" / "x", SubmitSettings(archive=True))
    time.sleep(1.1)  # another second on the clock: nothing of it may reach the archive
    b = make_bundle([ev], tmp_path / "b" / "x.tar.gz", SubmitSettings(archive=True))
    assert a.name == "x.tar.gz" and a.read_bytes() == b.read_bytes()
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(a, subs / "lab1.tar.gz")
    (subs / "lab2.tar.gz").write_bytes(a.read_bytes()[:100])  # a broken download
    got = check_bundles(subs, definition, tmp_path / "cache")
    assert [x.detector for x in got.admitted] == ["xception"]
    assert got.admitted[0].path.parent == tmp_path / "cache" / "bundles"
    assert [n for n, _ in got.refused] == ["lab2.tar.gz"]
    assert got.refused[0][1].startswith("unreadable archive (")


def test_mixed_detectors_refused(board, tmp_path: Path, capsys) -> None:
    """Break checked: without the detector check, the bundle is written."""
    index, _, _ = board
    a = make_eval(tmp_path / "a", index, detector="xception")
    b = make_eval(tmp_path / "b", index, detector="meso4")
    with pytest.raises(SystemExit) as info:
        fairforensics_main(["submit", str(a), str(b), "--out", str(tmp_path / "bundle")])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1
    assert "one detector per bundle" in err[0] and "meso4, xception" in err[0]
    assert not (tmp_path / "bundle" / "manifest.json").exists()


def test_subset_and_other_sampling_refused_with_the_line(board) -> None:
    """Break checked: ``np.isin`` of missing videos inverted admits the subset; rows not
    compared admits 2 frames a video."""
    _, definition, bundle = board
    line = refusal(bundle("subset", drop=4), definition)
    assert line == "tiny: scored on a subset: 1 of 6 test videos missing (deepfakes/001_002)"
    line = refusal(bundle("sampling", rows=2), definition)
    assert line.startswith("tiny: other frame sampling: 6 of 6 videos have other rows")
    assert "deepfakes/000_001: 2 rows, the benchmark 4" in line


def test_tampered_and_unprovenanced_bundles_refused(board) -> None:
    """Break checked: skipping the manifest check admits the tampered file; skipping the
    provenance read admits the bundle without it; skipping its detector check admits the
    relabelled one."""
    _, definition, bundle = board
    tampered = bundle("tampered")
    csv = tampered / "evals" / "1" / "predictions" / "tiny.csv"
    csv.write_text(csv.read_text().replace(",0.", ",1.", 1))  # one score changed
    assert refusal(tampered, definition) == (
        "manifest mismatch: evals/1/predictions/tiny.csv: SHA-256 differs from the manifest "
        "(changed after submission)"
    )
    bare = bundle("bare")
    (bare / "evals" / "1" / "predictions" / "tiny.provenance.json").unlink()
    write_manifest(bare)  # a consistent bundle, made without provenance
    assert refusal(bare, definition) == (
        "missing provenance: evals/1/predictions/tiny.provenance.json"
    )
    other = bundle("other")
    prov = other / "evals" / "1" / "predictions" / "tiny.provenance.json"
    prov.write_text(prov.read_text().replace('"xception"', '"meso4"'))
    write_manifest(other)  # predictions of another detector, relabelled in eval.json
    assert refusal(other, definition) == (
        "evals/1/predictions/tiny.provenance.json: provenance names detector 'meso4', "
        "the bundle 'xception'"
    )


def test_other_index_admitted_only_in_own_preprocessing_track(board) -> None:
    """Break checked: treating a differing index SHA-256 as the benchmark's puts the bundle in
    the benchmark track; comparing rows on that track refuses it."""
    _, definition, bundle = board
    own = admit(bundle("own", index_sha256="cd" * 32, rows=3), definition)
    assert own.track == "own preprocessing"
    assert own.notes == (
        f"tiny: index SHA-256 cdcdcdcdcdcd is not the benchmark's "
        f"{definition.test_sets['tiny'].index_sha256[:12]}: the same test videos from another "
        "preprocessing",
    )
    line = refusal(bundle("own-subset", index_sha256="cd" * 32, drop=0), definition)
    assert "scored on a subset" in line and "real/000" in line


def test_board_refuses_duplicates_and_caches_verdicts(board, tmp_path: Path) -> None:
    """Break checked: without the detector check two bundles of xception are admitted; without
    the cache the second pass reads the predictions again (the broken file below)."""
    _, definition, bundle = board
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(bundle("one"), subs / "a-lab")
    shutil.copytree(bundle("two", seed=5), subs / "b-lab")
    shutil.copytree(bundle("sub", detector="meso4", drop=1), subs / "c-lab")
    (subs / "notes.txt").write_text("")
    got = check_bundles(subs, definition, tmp_path / "cache")
    assert [b.detector for b in got.admitted] == ["xception"]
    assert [name for name, _ in got.refused] == ["b-lab", "c-lab", "notes.txt"]
    assert "already on the board from a-lab" in got.refused[0][1]
    assert got.refused[1][1].startswith("tiny: scored on a subset")
    assert len(list((tmp_path / "cache" / "checks").glob("*.json"))) == 3
    # a verdict is reused: the predictions file is not read again on a rebuild
    import fairforensics.benchmarks.submissions.checks as checks

    def boom(*a, **k):
        raise AssertionError("predictions read again")

    orig = checks.read_predictions
    checks.read_predictions = boom
    try:
        again = check_bundles(subs, definition, tmp_path / "cache")
    finally:
        checks.read_predictions = orig
    assert again.refused == got.refused and again.admitted == got.admitted


def test_define_from_indexes(board, tmp_path: Path, capsys) -> None:
    """Break checked: counting every frame (not the sampled ones) gives 6 frames a video."""
    index, _, _ = board
    out = tmp_path / "def.json"
    with pytest.raises(SystemExit) as info:
        fairforensics_main(["board", "define", "--test-data", "tiny", "--data-root",
                            str(index.parent), "--out", str(out), "--frame-num", "4"])  # fmt: skip
    assert info.value.code == 0, capsys.readouterr().err
    d = load_definition(out)
    assert d.name == "def" and list(d.test_sets) == ["tiny"]
    spec = d.test_sets["tiny"]
    assert spec.index_sha256 == file_sha256(index) and spec.frame_num == 4
    assert len(spec.items) == 6 and spec.items.frames.tolist() == [4] * 6  # the train video out
    assert sorted(zip(spec.items.method, spec.items.video_id, strict=True)) == sorted(VIDEOS)
    write_definition(json.loads(out.read_text()), tmp_path / "copy.json")
    assert (tmp_path / "copy.json").read_bytes() == out.read_bytes()


def test_shipped_definitions_are_the_scripts_output(tmp_path: Path) -> None:
    """The files in configs/benchmarks/ are what scripts/make_benchmark_definitions.py writes
    (none edited by hand). Break checked: one item removed from ffpp-c23.json by hand."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "scripts/make_benchmark_definitions.py", "--out", str(tmp_path)],
        cwd=repo, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    shipped = repo / "configs" / "benchmarks"
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(
        p.name for p in shipped.glob("*.json")
    )
    for path in tmp_path.glob("*.json"):
        assert path.read_bytes() == (shipped / path.name).read_bytes(), path.name


def test_shipped_definitions_load() -> None:
    """Break checked: a wrong pair expansion in the script (only ``a_b``) gives 70 fakes."""
    assert shipped_definitions() == [
        "cdfpp-gf", "cdfpp-gfd", "cdfpp-gfq", "df40-p1", "df40-p2", "df40-p3", "df40-p4",
        "ffpp-c23",
    ]  # fmt: skip
    ff = load_definition("ffpp-c23")
    assert list(ff.test_sets)[:5] == ["FF-c23", "FF-DF", "FF-F2F", "FF-FS", "FF-NT"]
    items = ff.test_sets["FF-c23"].items
    assert len(items) == 140 + 5 * 140 and (items.frames == -1).all()
    assert ff.test_sets["FF-c23"].index_sha256 is None and ff.test_sets["CDFv1"].items is None
    assert {"953", "974", "953_974", "974_953"} <= set(items.video_id.tolist())
    assert len(load_definition("df40-p1").test_sets) == 31
    assert len(load_definition("df40-p3").test_sets) == 9
    assert len(load_definition("cdfpp-gf").test_sets) == 22
    with pytest.raises(ValueError, match="shipped: cdfpp-gf"):
        load_definition("no-such-benchmark")


def test_board_build_writes_the_site_and_exits_1_on_refusals(board, tmp_path: Path, capsys):
    """Break checked: returning 0 with refused bundles fails the exit code."""
    pytest.importorskip(
        "fairforensics.benchmarks.site", reason="benchmarks.site (the site builder) not merged"
    )
    _, definition, bundle = board
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(bundle("good"), subs / "good")
    shutil.copytree(bundle("sub", detector="meso4", drop=1), subs / "subset")
    bench = tmp_path / "tiny-bench.json"
    data = definition_from_indexes(["tiny"], board[0].parent, name="tiny-bench", frame_num=4)
    write_definition(data, bench)
    site = tmp_path / "site"
    argv = ["board", "build", str(subs), "--benchmark", str(bench), "--out", str(site)]
    with pytest.raises(SystemExit) as info:
        fairforensics_main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 1 and "refused subset: tiny: scored on a subset" in err
    assert (site / "index.html").is_file()
    with pytest.raises(SystemExit) as info:
        fairforensics_main([*argv, "--allow-refused"])
    assert info.value.code == 0


def test_bundle_json_cannot_point_outside_the_bundle(board, tmp_path: Path) -> None:
    """Break checked: without :func:`checks.inside` the bundle reads (and admits) a folder
    beside it that no manifest covers."""
    _, definition, bundle = board
    folder = bundle("escape")
    shutil.copytree(folder / "evals" / "1", tmp_path / "bundles" / "outside")
    meta = json.loads((folder / "bundle.json").read_text())
    meta["evals"][0]["path"] = "../outside"
    (folder / "bundle.json").write_text(json.dumps(meta))
    write_manifest(folder)
    assert refusal(folder, definition) == (
        "bundle.json names '../outside', which is not inside the bundle"
    )


def test_a_manifest_that_is_not_an_object_is_refused_with_its_line(board) -> None:
    """A manifest.json holding a list (or another format) is a refusal, not a traceback (break
    checked: without the object check the list raised AttributeError out of ``admit``)."""
    _, definition, bundle = board
    folder = bundle("listed")
    (folder / "manifest.json").write_text("[]", encoding="utf-8")
    assert "manifest.json: not a fairforensics-manifest/1 file" in refusal(folder, definition)
