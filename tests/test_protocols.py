"""DF40 and Celeb-DF++ protocols: index building, tables, and end-to-end runs on tiny data."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.benchmarks import protocols as pr
from fairforensics.benchmarks.sweep import Sweep
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.protocol_tables import auc_interval, family_table
from fairforensics.preprocessing.datasets.df40 import method_info
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index, write_index

TINY = ["train.epochs=1", "train.batch_size=4", "train.resolution=32", "train.frame_num=1",
        "train.test_frame_num=1", "data.num_workers=0"]  # fmt: skip


def tiny_index(root: Path, name: str, videos: list[tuple[str, int, str, dict]], seed: int) -> None:
    """``<root>/<name>.json``: per (method, label, split, attributes) one 2-frame video of
    32x32 noise, the fakes with a bright square."""
    rng = np.random.default_rng(seed)
    entries = []
    for k, (method, label, split, attrs) in enumerate(videos):
        vid = f"{split}{k:03d}"
        frames = []
        for f in range(2):
            img = rng.integers(0, 120, (32, 32, 3), dtype=np.uint8)
            if label:
                img[8:24, 8:24] = 250
            rel = f"{name}/{method}/{vid}/frames/{f:03d}.png"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(root / rel), img)
            frames.append(rel)
        entries.append(VideoEntry(vid, label, method, split, frames, attributes=dict(attrs)))
    write_index(
        DatasetIndex(dataset=name, task="deepfake", videos=entries, root=root),
        root / f"{name}.json",
    )


def df40_data(root: Path, n: int = 3) -> None:
    """A DF40 index with two FF++-domain methods (FS simswap, FR fomm) and an FF++ real index."""
    fakes = [(m, 1, s, {**method_info(m), "domain": "ff"})
             for m in ("simswap", "fomm") for s in ("train", "val", "test") for _ in range(n)]  # fmt: skip
    tiny_index(root, "DF40", fakes, seed=1)
    tiny_index(
        root,
        "FF-c23",
        [("real", 0, s, {}) for s in ("train", "val", "test") for _ in range(2 * n)],
        2,
    )


def test_protocol_indexes_combine_each_method_with_the_real_test_videos(tmp_path):
    df40_data(tmp_path)
    proto = pr.load_protocol("df40-p1")
    trains, tests, family = pr.build_indexes(proto, tmp_path, tmp_path / "ix")
    assert trains == {"train": None} and tests == {"test-simswap": "simswap", "test-fomm": "fomm"}
    assert family == {"simswap": "FS", "fomm": "FR"}
    train = read_index(tmp_path / "ix" / "train.json")
    assert {(v.method, v.split) for v in train.videos} >= {("simswap", "train"), ("real", "val")}
    assert "fomm" not in {v.method for v in train.videos}  # FR is not trained on
    test = read_index(tmp_path / "ix" / "test-fomm.json")
    assert {(v.method, v.split) for v in test.videos} == {("fomm", "test"), ("real", "test")}
    assert sum(v.label == 0 for v in test.videos) == 6
    with pytest.raises(pr.SweepError, match="test needs either parts or datasets"):
        pr.load_protocol("df40-p1", ["test.datasets=[FF-c23]"])


def _predictions(method: str, auc_shift: float, n: int = 8) -> Predictions:
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], n * 2)  # n videos per class, 2 frames each
    scores = rng.random(labels.size) + auc_shift * labels
    return Predictions(
        dataset=np.array(["t"] * labels.size), video_id=np.repeat([f"v{i}" for i in range(2 * n)], 2),
        frame=np.tile([0, 1], 2 * n), label=labels, score=scores,
        method=np.where(labels == 1, method, "real"),
    )  # fmt: skip


def test_family_table_and_intervals(tmp_path):
    cells = {m: auc_interval(_predictions(m, s)) for m, s in
             (("simswap", 0.6), ("inswap", 0.2), ("fomm", 0.9))}  # fmt: skip
    table = family_table(cells, {"simswap": "FS", "inswap": "FS", "fomm": "FR"})
    rows = table.rows
    assert [r[:2] for r in rows] == [["FS", "simswap"], ["FS", "inswap"], ["FS", "mean"],
                                     ["FR", "fomm"], ["FR", "mean"], ["all", "mean"]]  # fmt: skip
    assert rows[2][2] == pytest.approx((cells["simswap"].value + cells["inswap"].value) / 2)
    assert all(r[3] <= r[2] <= r[4] for r in rows if r[1] != "mean")
    few = auc_interval(_predictions("x", 0.5, n=3))
    assert math.isnan(few.low) and "fewer than 5" in few.note


def test_interval_coverage_of_the_clustered_auc():
    """Null: the interval covers the true AUC in 95 % of replicates. Frames of a video share a
    video effect; true AUC of the video-level scores = P(fake > real) = Phi(d / sqrt(2))."""
    from scipy import stats

    rng = np.random.default_rng(7)
    d, n, reps, hits = 1.0, 30, 300, 0
    truth = stats.norm.cdf(d / math.sqrt(2 * (1 + 0.5)))  # video effect var 1, frame noise 0.5
    for _ in range(reps):
        labels = np.repeat([0, 1], n)
        effect = rng.normal(size=2 * n) + d * labels
        frames = 4
        score = np.repeat(effect, frames) + rng.normal(scale=math.sqrt(0.5), size=2 * n * frames)
        pred = Predictions(
            dataset=np.array(["t"] * score.size), video_id=np.repeat(np.arange(2 * n).astype(str), frames),
            frame=np.tile(np.arange(frames), 2 * n), label=np.repeat(labels, frames), score=score,
            method=np.repeat(np.where(labels == 1, "f", "real"), frames),
        )  # fmt: skip
        c = auc_interval(pred)
        hits += c.low <= truth <= c.high
    low, high = stats.binomtest(hits, reps).proportion_ci(0.99)
    assert low <= 0.95 <= high + 0.02, hits / reps


@pytest.mark.slow
def test_df40_one_vs_all_runs_end_to_end_and_draws_the_heatmap(tmp_path):
    df40_data(tmp_path / "data")
    proto = pr.load_protocol("df40-p4")
    out = tmp_path / "p4"
    sweep = Sweep(["meso4"], out, overrides=TINY, costs=False)
    tables = pr.run_protocol(
        proto, detectors=["meso4"], data_root=tmp_path / "data", out=out, sweep=sweep
    )
    with (tables / "meso4_one_vs_all.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["train \\ test", "simswap", "fomm"]
    assert [r[0] for r in rows[1:]] == ["simswap", "fomm"]
    assert all(0 <= float(x) <= 1 for r in rows[1:] for x in r[1:])
    assert (tables / "meso4_one_vs_all.png").stat().st_size > 1000
    table = json.loads((tables / "meso4_train-simswap.json").read_text())
    assert [r["method"] for r in table["rows"]] == ["simswap", "mean", "fomm", "mean", "mean"]


def protocol_runner(cmd: list[str]) -> None:
    """Stands in for ``fairforensics test`` of a protocol's sweep (training: nothing): every
    test index scored, fakes above reals by a margin that depends on the seed (two seeds: two
    trainings), then evaluated for real."""
    from fairforensics.evaluation.predictions import write_predictions
    from fairforensics.evaluation.results import evaluate_prediction_files, slug
    from fairforensics.evaluation.settings import load_test_config

    if "test" not in cmd[:4]:
        return
    out = Path(cmd[cmd.index("--out") + 1])  # <runs>/<train>/<detector>/seed<k>/eval
    seed = int(out.parent.name.removeprefix("seed"))
    root = Path(cmd[cmd.index("--data-root") + 1])
    tests = cmd[cmd.index("--test-data") + 1 : cmd.index("--data-root")]
    files = {}
    for name in tests:
        videos = read_index(root / f"{name}.json").videos
        rng = np.random.default_rng([seed, len(name)])
        label = np.array([v.label for v in videos for _ in v.frames])
        score = 1 / (1 + np.exp(-(label * (1 + seed) + rng.normal(size=len(label)))))
        pred = Predictions(
            dataset=[name] * len(label),
            video_id=[v.id for v in videos for _ in v.frames],
            frame=[f for v in videos for f in range(len(v.frames))],
            label=label, score=score,
            method=[v.method for v in videos for _ in v.frames],
        )  # fmt: skip
        files[name] = out.parent / f"{slug(name)}.csv"
        write_predictions(files[name], pred)
    cfg = load_test_config(overrides=["n_boot=0", "plots=false", "report=false"])
    evaluate_prediction_files(files, out, cfg, "meso4", out.parents[2].name)


def test_df40_one_vs_all_with_seeds_as_one_job_array(tmp_path, monkeypatch):
    """DF40 protocol 4 with two seeds, every (training method, seed) run a job of one submitit
    array (its local executor): the one-vs-all matrix and its heat map, each cell the mean of
    the seeds' AUCs."""
    pytest.importorskip("submitit")
    from fairforensics.benchmarks.launch import run_sweeps_jobs
    from fairforensics.evaluation.predictions import read_predictions

    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))  # the jobs' import
    df40_data(tmp_path / "data")
    out = tmp_path / "p4"
    sweep = Sweep(["meso4"], out, overrides=TINY, seeds=[0, 1], costs=False)
    tables = pr.run_protocol(
        pr.load_protocol("df40-p4"), detectors=["meso4"], data_root=tmp_path / "data", out=out,
        sweep=sweep, launch=lambda sweeps: run_sweeps_jobs(sweeps, "local", runner=protocol_runner),
    )  # fmt: skip
    assert len(list((out / "runs" / "train-simswap" / "jobs").glob("*_result.pkl"))) == 4
    with (tables / "meso4_one_vs_all.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["train \\ test", "simswap", "fomm"]
    assert [r[0] for r in rows[1:]] == ["simswap", "fomm"]
    from sklearn.metrics import roc_auc_score

    seeds = [out / "runs" / "train-fomm" / "meso4" / f"seed{k}" / "eval" / "predictions"
             for k in (0, 1)]  # fmt: skip
    aucs = [roc_auc_score(p.label, p.score) for p in
            (read_predictions(d / "test-simswap.csv") for d in seeds)]  # fmt: skip
    assert aucs[0] != aucs[1]
    assert float(rows[2][1]) == pytest.approx(np.mean(aucs), abs=1e-12)
    assert (tables / "meso4_one_vs_all.png").stat().st_size > 1000
    table = json.loads((tables / "meso4_train-simswap.json").read_text())
    assert [r["method"] for r in table["rows"]] == ["simswap", "mean", "fomm", "mean", "mean"]
    assert (out / "runs" / "train-fomm" / "leaderboard" / "index.html").is_file()


def test_seed_cells_average_the_seeds_auc_and_one_seed_is_the_plain_cell():
    one = _predictions("x", 0.8, n=12)
    other = _predictions("x", 0.8, n=12)
    other.score = other.score + np.random.default_rng(1).normal(0, 0.3, other.score.size)
    single, pair = auc_interval(one), auc_interval([one, one])
    assert (pair.value, pair.low, pair.high) == pytest.approx(
        (single.value, single.low, single.high)
    )
    mixed = auc_interval([one, other])
    from sklearn.metrics import roc_auc_score

    want = np.mean([roc_auc_score(p.label, p.score) for p in (one, other)])
    assert mixed.value == pytest.approx(want) and mixed.low < mixed.value < mixed.high


@pytest.mark.slow
def test_celebdfpp_gf_eval_runs_end_to_end(tmp_path):
    data = tmp_path / "data"
    fakes = [(m, 1, "test", {"scenario": sc, "family": fam})
             for m, sc, fam in (("SimSwap", "FaceSwap", "FS"), ("SadTalker", "TalkingFace", "TF"))
             for _ in range(5)]  # fmt: skip
    tiny_index(data, "Celeb-DF-pp", fakes + [("real", 0, "test", {})] * 5, seed=3)
    tiny_index(data, "FF-c23", [(m, int(m != "real"), s, {}) for m in ("real", "Deepfakes")
                                for s in ("train", "val", "test") for _ in range(3)], seed=4)  # fmt: skip
    out = tmp_path / "gf"
    sweep = Sweep(["meso4"], out, overrides=TINY, costs=False)
    tables = pr.run_protocol(pr.load_protocol("cdfpp-gf"), detectors=["meso4"], data_root=data,
                             out=out, sweep=sweep)  # fmt: skip
    rows = json.loads((tables / "meso4_FF-c23.json").read_text())["rows"]
    assert [(r["family"], r["method"]) for r in rows] == [
        ("FS", "SimSwap"),
        ("FS", "mean"),
        ("TF", "SadTalker"),
        ("TF", "mean"),
        ("all", "mean"),
    ]


def test_combine_cli_takes_a_filter_per_index(tmp_path, capsys):
    from fairforensics.cli.combine import main

    df40_data(tmp_path)
    out = tmp_path / "FR-ff.json"
    parts = [f"{tmp_path}/DF40.json::family=FR,domain=ff,split=test",
             f"{tmp_path}/FF-c23.json::method=real,split=test"]  # fmt: skip
    assert main([*parts, "--name", "FR-ff", "--out", str(out)]) == 0
    index = read_index(out)
    assert {(v.method, v.split) for v in index.videos} == {("fomm", "test"), ("real", "test")}
    assert len(index.videos) == 3 + 6
    with pytest.raises(SystemExit):
        main([f"{tmp_path}/DF40.json::family", "--name", "x", "--out", str(out)])
    assert "is not key=value" in capsys.readouterr().err


def test_one_vs_all_matrix_and_its_heatmap_mark_the_diagonal(tmp_path):
    from fairforensics.evaluation.plots import heatmaps
    from fairforensics.evaluation.protocol_tables import one_vs_all, one_vs_all_heatmap

    cells = {(tr, te): auc_interval(_predictions(te, 0.9 if tr == te else 0.1))
             for tr in ("simswap", "fomm") for te in ("simswap", "fomm", "e4s") if (tr, te) != ("fomm", "e4s")}  # fmt: skip
    grid, long = one_vs_all(cells, ["simswap", "fomm", "e4s"])
    assert grid.columns == ["train \\ test", "simswap", "fomm", "e4s"]
    assert [r[0] for r in grid.rows] == ["simswap", "fomm"] and math.isnan(grid.rows[1][3])
    assert grid.rows[0][1] > grid.rows[0][2] and len(long.rows) == 5
    marked = one_vs_all_heatmap(grid, tmp_path / "marked", title="t")[0]
    plain = heatmaps({"t": grid}, tmp_path / "plain")[0]
    assert marked.read_bytes() != plain.read_bytes()


def test_df40_protocol3_tests_each_unknown_method_with_its_own_reals(tmp_path):
    own = [(m if label else "real", label, "test", {**method_info(m), "domain": "CelebA"})
           for m in ("stargan", "e4e") for label in (0, 1) for _ in range(2)]  # fmt: skip
    known = [
        ("simswap", 1, s, {**method_info("simswap"), "domain": "ff"}) for s in ("train", "val")
    ]
    tiny_index(tmp_path, "DF40", own + known, seed=5)
    tiny_index(tmp_path, "FF-c23", [("real", 0, s, {}) for s in ("train", "val", "test")], seed=6)
    _, tests, family = pr.build_indexes(pr.load_protocol("df40-p3"), tmp_path, tmp_path / "ix")
    assert tests == {"test-stargan": "stargan", "test-e4e": "e4e"} and family["e4e"] == "FE"
    index = read_index(tmp_path / "ix" / "test-e4e.json")
    assert sorted((v.method, v.attributes["df40_method"]) for v in index.videos) == [
        ("e4e", "e4e"),
        ("e4e", "e4e"),
        ("real", "e4e"),
        ("real", "e4e"),
    ]
