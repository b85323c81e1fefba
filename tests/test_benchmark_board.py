"""Issue 38: a sweep with two detectors and two seeds writes leaderboards with intervals, tie
marks, the seed spread, fairness columns of the test set's attribute, baseline rows, cost
columns and the HTML page; runs go through submitit's local executor too.

The runs are the sweep test's fixture (tests/test_benchmark_sweep.py): a runner that leaves an
evaluation folder of synthetic predictions instead of training, so the leaderboard half runs
for real on every output while the test takes seconds."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

import numpy as np
import pytest

from fairforensics.benchmarks import sweep as sw
from fairforensics.benchmarks.fairness_board import pareto_front
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.evaluation.results import evaluate_prediction_files
from fairforensics.evaluation.settings import load_test_config

REPO = Path(__file__).resolve().parents[1]
#: per detector: how well it separates the classes, and how much worse it does on women
SKILL = {"meso4": (2.0, 0.0), "meso_inception4": (1.6, 1.2)}


def demo_predictions(detector: str, seed: int) -> Predictions:
    """24 videos (6 per gender and class) of 3 frames; scores from the detector's skill, a
    seed-dependent noise (two seeds: two trainings)."""
    rng = np.random.default_rng([zlib.crc32(detector.encode()), seed])  # not hash(): salted
    skill, bias = SKILL[detector]
    rows = []
    for v in range(24):
        label, gender = v % 2, ("female", "male")[(v // 2) % 2]
        look = rng.normal()
        for f in range(3):
            shift = skill * label - (bias * label if gender == "female" else 0.0)
            rows.append((v, f, label, gender, 1 / (1 + np.exp(-(shift - skill / 2 + look)))))
    return Predictions(
        dataset=["demo"] * len(rows), video_id=[f"{r[0]:03d}" for r in rows],
        frame=[r[1] for r in rows], label=[r[2] for r in rows],
        score=[r[4] for r in rows], method=["real" if r[2] == 0 else "DF" for r in rows],
        attributes={"gender": [r[3] for r in rows]},
    )  # fmt: skip


def fake_runner(cmd: list[str]) -> None:
    """``fairforensics test``: an evaluation folder; training: nothing."""
    if "--out" not in cmd:
        return
    out = Path(cmd[cmd.index("--out") + 1])  # <sweep>/<detector>/seed<k>/eval
    detector, seed = out.parent.parent.name, int(out.parent.name.removeprefix("seed"))
    src = out.parent / "demo.csv"
    write_predictions(src, demo_predictions(detector, seed))
    cfg = load_test_config(overrides=["n_boot=0", "plots=false"])
    evaluate_prediction_files({"demo": src}, out, cfg, detector, "demo")


def metadata_baseline(path: Path) -> Path:
    """A predictions file as ``fairforensics audit`` writes it: one score per video."""
    pred = demo_predictions("meso4", 0)
    first = pred.frame == 0
    one = pred.subset(first)
    one.score = np.where(one.label == 1, 0.7, 0.4)  # a shortcut that gives the label away
    write_predictions(path, one)
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[Path, list[list[str]]]:
    out = tmp_path_factory.mktemp("sweep")
    calls: list[list[str]] = []

    def runner(cmd: list[str]) -> None:
        calls.append(cmd)
        fake_runner(cmd)

    s = sw.Sweep(
        ["meso4", "meso_inception4"], out, train_data=["demo"], test_data=["demo"],
        seeds=[0, 1], baselines={"metadata": metadata_baseline(out / "audit.csv")},
    )  # fmt: skip
    sw.run_sweep(s, runner)
    return out, calls


def _rows(path: Path) -> dict[str, dict]:
    return {r["Detector"]: r for r in json.loads(path.read_text())["rows"]}


def test_seeds_train_once_each_and_resume(swept) -> None:
    out, calls = swept
    trains = [c for c in calls if "train" in c]
    assert sorted(c[c.index("--output-dir") + 1] for c in trains) == sorted(
        str(out / d / f"seed{k}") for d in SKILL for k in (0, 1)
    )
    assert {c[-1] for c in trains} == {"train.seed=0", "train.seed=1"}
    again: list[list[str]] = []
    s = sw.Sweep(list(SKILL), out, train_data=["demo"], seeds=[0, 1])
    assert not any(sw.run_one(s, d, again.append, k) for d, k in s.jobs(list(SKILL)))
    assert again == []  # every run finished: nothing redone


def test_leaderboards_intervals_ties_spread_and_baselines(swept) -> None:
    out, _ = swept
    for level in ("frame", "video"):
        rows = _rows(out / "leaderboard" / f"leaderboard_{level}_auc.json")
        assert set(rows) == {*SKILL, "constant", "random", "metadata"}
        for name in ("constant", "random", "metadata"):
            assert rows[name]["Type"] == "Baseline" and rows[name]["demo sd"] is None
        assert rows["constant"]["demo"] == 0.5
        for name in SKILL:
            r = rows[name]
            assert r["demo low"] < r["demo"] < r["demo high"], (level, r)
            assert r["demo sd"] > 0  # two seeds, two AUCs
        # the metadata shortcut is perfect: the best (or tied with it), the rest compared with
        # the best, which has no p-value
        assert rows["metadata"]["demo"] == 1.0 and rows["metadata"]["demo tied"]
        (best,) = [n for n, r in rows.items() if r["demo p"] is None]
        assert rows[best]["demo"] == max(r["demo"] for r in rows.values())
        for name, r in rows.items():
            if name != best:
                assert r["demo tied"] == (r["demo p"] >= 0.05), name
                assert r["Cross Tied"] == int(r["demo tied"])
        assert not rows["constant"]["demo tied"] and not rows["random"]["demo tied"]
        assert rows["constant"]["Cross Top3"] == 0
    md = (out / "leaderboard" / "leaderboard_frame_auc.md").read_text()
    assert "Cross Tied" in md and "±" in md  # seed spread beside the mean
    csv_head = (out / "leaderboard" / "leaderboard_video_eer.csv").read_text().splitlines()[0]
    assert "demo low,demo high,demo sd" in csv_head  # every metric carries its interval


def test_fairness_columns_sorted_by_auc_with_baselines(swept) -> None:
    """Issue 38, item 4: no fairness column alone can put a trivial predictor first without
    its AUC column showing it. The constant predictor has zero gaps at any threshold (it wins
    every gap column), but the table is sorted by AUC and shows its 0.5 beside them."""
    out, _ = swept
    data = json.loads((out / "leaderboard" / "fairness" / "fairness_demo_gender.json").read_text())
    cols, rows = data["columns"], data["rows"]
    assert cols[:4] == ["Type", "Detector", "threshold", "AUC"]
    for c in ("AUC gap", "FPR gap", "FNR gap", "F_FPR", "F_OAE", "F_DP", "F_MEO"):
        assert c in cols
    for pair in ("female>female", "female>male", "male>female", "male>male"):
        assert f"xAUC {pair}" in cols
    aucs = [r["AUC"] for r in rows]
    assert aucs == sorted(aucs, reverse=True)
    gaps = ("FPR gap", "FNR gap", "F_FPR", "F_OAE", "F_DP", "F_MEO")
    constant = next(r for r in rows if r["Detector"] == "constant")
    assert all(constant[c] == 0 for c in gaps)  # it "wins" every threshold gap column ...
    assert constant["AUC"] == 0.5 and constant["Type"] == "Baseline"  # ... and shows its AUC
    for c in gaps:  # whoever has the smallest gap, a baseline or not, its AUC is beside it
        winner = min(rows, key=lambda r: abs(r[c]) if r[c] is not None else math.inf)
        if winner["Type"] == "Baseline" and winner["Detector"] != "metadata":
            assert winner["AUC"] <= 0.6 and rows.index(winner) > rows.index(_row(rows, "meso4"))
    meso = _row(rows, "meso4")
    assert meso["F_DP low"] <= meso["F_DP"] <= meso["F_DP high"]  # intervals (6 videos/cell)
    biased = _row(rows, "meso_inception4")
    assert biased["xAUC female>male"] < biased["xAUC male>female"]  # women's fakes score low
    assert (out / "leaderboard" / "fairness" / "pareto_demo_gender.png").is_file()


def _row(rows: list[dict], name: str) -> dict:
    return next(r for r in rows if r["Detector"] == name)


def test_pareto_front() -> None:
    # (AUC, gap): b dominates c; a (constant: AUC 0.5, gap 0) and b are both non-dominated
    assert pareto_front([0.5, 0.9, 0.8, np.nan], [0.0, 0.1, 0.2, 0.0]) == [0, 1]
    assert pareto_front([0.9, 0.9], [0.1, 0.1]) == [0, 1]  # equal points dominate neither


def test_costs_and_html_page(swept) -> None:
    out, _ = swept
    costs = json.loads((out / "leaderboard" / "costs.json").read_text())
    assert costs["machine"] and {r["detector"] for r in costs["rows"]} == set(SKILL)
    meso4 = next(r for r in costs["rows"] if r["detector"] == "meso4")
    assert meso4["params"] == 27898  # MesoNet paper, Table 1: 27,977 (ours has no bias in BN)
    assert meso4["macs_per_frame"] > 1e7 and meso4["cpu_ms_per_frame"] > 0
    page = (out / "leaderboard" / "index.html").read_text()
    assert "function sortBy" in page and "<script src" not in page and "http" not in page
    assert page.count("class='baseline'") >= 3 * 2  # baseline rows of every leaderboard
    assert "≈" in page or "tied" in page
    assert "meso4/seed0/eval/report.html" in page and "pareto_demo_gender.png" in page
    for section in ("leaderboards", "robustness", "fairness", "cost"):
        assert f"id='{section}'" in page


def test_launcher_runs_jobs_through_submitit(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("submitit")
    from fairforensics.benchmarks.launch import SlurmOptions, make_executor, run_sweep_jobs

    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the job imports this module
    s = sw.Sweep(["meso4"], tmp_path, train_data=["demo"], seeds=[3], costs=False)
    board = run_sweep_jobs(s, "local", runner=fake_runner)
    assert (tmp_path / "meso4" / "seed3" / sw.DONE).is_file()
    assert "meso4" in _rows(board / "leaderboard_frame_auc.json")
    assert list((tmp_path / "jobs").glob("*_result.pkl"))  # it ran as a submitit job
    # the Slurm executor's options (its constructor looks for srun, which this machine lacks)
    import submitit

    monkeypatch.setattr(submitit.SlurmExecutor, "affinity", classmethod(lambda cls: 1))
    options = SlurmOptions(partition="gpu", gpus_per_job=4, extra=("account=abc",))
    slurm = make_executor("slurm", tmp_path / "j", options)
    assert slurm._executor.parameters["partition"] == "gpu"
    assert slurm._executor.parameters["gpus_per_node"] == 4
    assert slurm._executor.parameters["additional_parameters"] == {"account": "abc"}


def test_cli_argument_errors_are_one_line(capsys) -> None:
    from fairforensics.cli.benchmark import main

    for args, message in (
        (["--launcher", "local", "--partition", "gpu"], "need --launcher slurm"),
        (["--seeds", "1", "1"], "must be distinct"),
        (["--baseline", "metadata"], "expected NAME=PREDICTIONS.csv"),
        (["--baseline", "constant=x.csv"], "built-in baseline"),
        (["--baseline", "metadata=nope.csv"], "no such predictions file"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["--detectors", "meso4", "--out", "x", *args])
        assert exit_.value.code == 2 and message in capsys.readouterr().err, args


def test_cli_protocol_with_seeds_goes_to_one_slurm_array(tmp_path: Path, monkeypatch) -> None:
    """``--protocol`` with ``--seeds`` and ``--launcher slurm``: the protocol's sweeps carry the
    seeds and are launched together through :func:`benchmarks.launch.run_sweeps_jobs` with the
    job options of the command line (the protocol itself and submitit stand in)."""
    from fairforensics.benchmarks import launch, protocols
    from fairforensics.cli.benchmark import main

    seen: dict = {}

    def fake_protocol(proto, *, detectors, data_root, out, sweep, launch):
        seen.update(proto=proto, sweep=sweep)
        launch([sweep, sweep])
        return out / "tables"

    def fake_jobs(sweeps, kind, options):
        seen.update(sweeps=sweeps, kind=kind, options=options)
        return [s.out for s in sweeps]

    monkeypatch.setattr(protocols, "run_protocol", fake_protocol)
    monkeypatch.setattr(launch, "run_sweeps_jobs", fake_jobs)
    argv = ["--protocol", "df40-p4", "--detectors", "meso4", "--data-root", str(tmp_path)]
    argv += ["--seeds", "0", "1", "--launcher", "slurm", "--partition", "gpu"]
    argv += ["--gpus-per-job", "2", "--out", str(tmp_path / "p4")]
    assert main(argv) == 0
    assert seen["proto"].train.per_method and seen["sweep"].seeds == [0, 1]  # df40-p4
    assert seen["kind"] == "slurm" and len(seen["sweeps"]) == 2
    assert (seen["options"].partition, seen["options"].gpus_per_job) == ("gpu", 2)
