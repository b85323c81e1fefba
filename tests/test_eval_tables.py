"""Tables (Table 3 leaderboard, Top-3 counts, cross-manipulation) and the evaluation folders they
are built from, using hand-computed fake runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fairforensics.evaluation.leaderboard import build_leaderboard, collect_results
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.evaluation.results import evaluate_prediction_files
from fairforensics.evaluation.settings import load_test_config
from fairforensics.evaluation.tables import (
    Result,
    Table,
    cross_manipulation,
    leaderboard,
    top_k_counts,
)

# AUC in quarters: one real video (score 0.5) and four fake videos, k of them above it.
AUCS = {
    "meso4": {"FF-c23": 0.50, "FF-DF": 0.75, "CDFv2": 0.50, "DFD": 0.25, "UADFV": 0.75},
    "xception": {"FF-c23": 1.00, "FF-DF": 1.00, "CDFv2": 0.75, "DFD": 0.50, "UADFV": 1.00},
    "ucf": {"FF-c23": 1.00, "FF-DF": 0.75, "CDFv2": 1.00, "DFD": 0.75, "UADFV": 1.00},
    "f3net": {"FF-c23": 0.75, "FF-DF": 0.50, "CDFv2": 0.75, "DFD": 0.50, "UADFV": 0.50},
}
# hand-computed Table 3 rows: within (FF-c23, FF-DF, avg, top3),
# cross (CDFv2, DFD, UADFV, avg, top3)
EXPECTED = [
    ["Naive", "meso4", 0.50, 0.75, 0.625, 1, 0.50, 0.25, 0.75, 0.5, 1],
    ["Naive", "xception", 1.00, 1.00, 1.0, 2, 0.75, 0.50, 1.00, 0.75, 3],
    ["Spatial", "ucf", 1.00, 0.75, 0.875, 2, 1.00, 0.75, 1.00, 2.75 / 3, 3],
    ["Frequency", "f3net", 0.75, 0.50, 0.625, 1, 0.75, 0.50, 0.50, 1.75 / 3, 2],
]


def predictions_with_auc(auc: float, dataset: str) -> Predictions:
    """Two frames per video; 1 real video at 0.5, 4 fakes of which 4 * auc score above it."""
    k = int(round(auc * 4))
    video_scores = [0.5] + [0.8] * k + [0.2] * (4 - k)
    labels = [0, 1, 1, 1, 1]
    rows = [(v, f) for v in range(5) for f in range(2)]
    return Predictions(
        dataset=[dataset] * 10,
        video_id=[f"{v:03d}" for v, _ in rows],
        frame=[f for _, f in rows],
        label=[labels[v] for v, _ in rows],
        score=[video_scores[v] + (0.01 if f else -0.01) for v, f in rows],
        method=["real" if labels[v] == 0 else "DF" for v, _ in rows],
    )


def make_eval_dir(
    root: Path, detector: str, train: str, aucs: dict[str, float], n_boot: int = 0
) -> Path:
    files = {}
    for name, value in aucs.items():
        path = root / "src" / detector / train / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_predictions(path, predictions_with_auc(value, name))
        files[name] = path
    cfg = load_test_config(overrides=[f"n_boot={n_boot}", "plots=false", "report=false"])
    out = root / "evals" / f"{detector}_{train}"
    evaluate_prediction_files(files, out, cfg, detector, train)
    assert sorted(p.name for p in (out / "predictions").iterdir()) == sorted(
        f"{n}.csv" for n in aucs
    )
    return out


def test_top_k_counts_with_ties_and_lower_is_better() -> None:
    v = np.array([[0.9, 0.1], [0.9, 0.2], [0.8, 0.3], [0.7, np.nan]])
    np.testing.assert_array_equal(
        top_k_counts(v, k=2), [1, 2, 1, 0]
    )  # column 0: two tied at the top
    np.testing.assert_array_equal(top_k_counts(v, k=2, higher_is_better=False), [1, 1, 1, 1])
    np.testing.assert_array_equal(top_k_counts(v, k=1), [1, 1, 1, 0])
    with pytest.raises(ValueError):
        top_k_counts(np.zeros(3))


def test_leaderboard_from_fake_runs_matches_hand_computed(tmp_path: Path) -> None:
    dirs = [make_eval_dir(tmp_path, det, "FF-c23", aucs) for det, aucs in AUCS.items()]
    out = build_leaderboard(dirs, tmp_path / "board", metrics=("auc", "eer"))
    data = json.loads((out / "leaderboard_frame_auc.json").read_text())
    assert data["columns"] == [
        "Type", "Detector", "FF-c23", "FF-DF", "Within Avg.", "Within Top3", "Within Tied",
        "CDFv2", "DFD", "UADFV", "Cross Avg.", "Cross Top3", "Cross Tied",
        "Seeds", "Threshold", "Chosen by",
    ]  # fmt: skip
    # one real video: no paired test can be made, so only equal AUCs count as ties
    assert [r["Within Tied"] for r in data["rows"]] == [0, 2, 1, 0]
    got = [[row[c] for c in data["columns"][:-3] if "Tied" not in c] for row in data["rows"]]
    for g, e in zip(got, EXPECTED, strict=True):
        assert g[:2] == e[:2]
        assert g[2:] == pytest.approx(e[2:])
    md = (out / "leaderboard_frame_auc.md").read_text()
    assert "| Naive | meso4 | 0.5000 | 0.7500 | 0.6250 | 1 | 0 |" in md
    # best per column in bold (ties too), Top3 columns never; ≈ marks a tie with the best
    assert "| Naive | xception | **1.0000** | **1.0000** | **1.0000** | 2 | 2 |" in md
    assert "| Spatial | ucf | **1.0000 ≈** | 0.7500 | 0.8750 | 2 | 1 | **1.0000** |" in md
    assert "|---|---|---:|" in md
    table = Table(["Detector", "demo"], [["a", 0.8]], details={(0, 1): {"low": 0.7, "high": 0.9}})
    assert "0.8000 [0.7000, 0.9000]" not in table.to_markdown()
    table.show_intervals = True  # on request
    assert "| a | 0.8000 [0.7000, 0.9000] |" in table.to_markdown()
    assert table.to_csv().splitlines() == ["Detector,demo,demo low,demo high", "a,0.8,0.7,0.9"]
    csv_lines = (out / "leaderboard_frame_auc.csv").read_text().splitlines()
    assert csv_lines[0].startswith("Type,Detector,FF-c23") and len(csv_lines) == 5
    assert (out / "leaderboard_frame_eer.json").is_file()
    assert (out / "radar_frame_auc.png").is_file() and (out / "radar_frame_auc.pdf").is_file()
    html = (out / "report.html").read_text()
    assert "meso4" in html and "radar_frame_auc.png" in html


def test_leaderboard_missing_cell_and_options() -> None:
    results = [
        Result("xception", "FF-c23", "FF-c23", {"auc": 0.9}),
        Result("xception", "FF-c23", "CDFv2", {"auc": 0.7}),
        Result("mine", "FF-c23", "FF-c23", {"auc": 0.8}),
        Result("other", "FF-c40", "FF-c23", {"auc": 0.1}),
    ]
    table = leaderboard(results, "auc", train_data="FF-c23")
    rows = {r["Detector"]: r for r in table.records()}
    assert set(rows) == {"xception", "mine"}
    # not evaluated on CDFv2: "-" (None), unlike an undefined value (NaN: "undefined")
    assert rows["mine"]["Type"] == "Other" and rows["mine"]["Cross Avg."] is None
    markdown = table.to_markdown()
    assert (
        rows["mine"]["CDFv2"] is None and "| mine | 0.8000 | 0.8000 | 1 | - | - | 0 |" in markdown
    )
    undefined = leaderboard([*results[:2], Result("mine", "FF-c23", "FF-c23", {"auc": math.nan})])
    assert "| Other | mine | undefined | undefined |" in undefined.to_markdown()
    assert rows["mine"]["Cross Top3"] == 0 and rows["xception"]["Cross Top3"] == 1
    table = leaderboard(results[:3], "auc", within=["FF-c23", "CDFv2"])
    assert "Cross Avg." not in table.columns and table.records()[0]["Within Avg."] == pytest.approx(
        0.8
    )
    assert '"Cross Avg.": null' in leaderboard(results[:3], "auc").to_json()
    with pytest.raises(KeyError, match="ap"):
        leaderboard(results, "ap")
    with pytest.raises(ValueError, match="no results"):
        leaderboard(results, "auc", train_data="CDFv2")


def test_cross_manipulation_matrix_and_heatmap(tmp_path: Path) -> None:
    methods = ("FF-DF", "FF-F2F")
    grid = {
        ("FF-DF", "FF-DF"): 1.0,
        ("FF-DF", "FF-F2F"): 0.5,
        ("FF-F2F", "FF-DF"): 0.75,
        ("FF-F2F", "FF-F2F"): 1.0,
    }
    dirs = []
    for det in ("xception", "spsl"):
        for train in methods:
            dirs.append(make_eval_dir(tmp_path, det, train, {t: grid[(train, t)] for t in methods}))
    results = collect_results(dirs)
    mats = cross_manipulation(results, "auc")
    assert set(mats) == {"xception", "spsl"}
    t = mats["xception"]
    assert t.columns == ["train \\ test", "FF-DF", "FF-F2F"]
    assert t.rows == [["FF-DF", 1.0, 0.5], ["FF-F2F", 0.75, 1.0]]
    out = build_leaderboard(dirs, tmp_path / "board", metrics=("auc",))
    assert (out / "cross_manipulation_auc.png").is_file()
    assert (
        json.loads((out / "cross_manipulation_spsl_auc.json").read_text())["rows"][0]["FF-F2F"]
        == 0.5
    )


def test_evaluation_folder_contents(tmp_path: Path) -> None:
    files = {}
    for name, auc in (("FF-c23", 0.75), ("CDFv2", 0.5)):
        files[name] = tmp_path / f"{name}.csv"
        write_predictions(files[name], predictions_with_auc(auc, name))
    bad = tmp_path / "bad.csv"
    bad.write_text("nonsense\n")
    files["DFD"] = bad
    cfg = load_test_config(overrides=["n_boot=20"])
    per_set = evaluate_prediction_files(
        files, tmp_path / "eval", cfg, "meso4", "FF-c23", meta={"run": "r1"}
    )
    assert set(per_set) == {"FF-c23", "CDFv2"}
    ev = tmp_path / "eval"
    manifest = json.loads((ev / "manifest.json").read_text())
    assert (
        manifest["skipped"][0]["test_data"] == "DFD"
        and "header" in manifest["skipped"][0]["reason"]
    )
    metrics = json.loads((ev / "metrics" / "FF-c23.json").read_text())
    assert metrics["frame"]["metrics"]["auc"] == 0.75 and metrics["video"]["metrics"]["auc"] == 0.75
    # 1 real video: no interval, and the JSON and the summary table say why (not 0.75 [x, x])
    assert metrics["video"]["ci"]["auc"] == [None, None]
    assert metrics["video"]["ci_notes"]["auc"].startswith("fewer than 5 real videos (1)")
    assert (
        "| auc, ap, eer interval: fewer than 5 real videos (1)"
        in (ev / "tables" / "video_summary.md").read_text()
    )
    assert "undefined" in (ev / "tables" / "video_summary.md").read_text()
    for level in ("frame", "video"):
        for metric in ("auc", "ap", "eer", "acc", "summary"):
            for suffix in ("csv", "md", "json"):
                assert (ev / "tables" / f"{level}_{metric}.{suffix}").is_file()
        assert (ev / "figures" / f"roc_pr_{level}.png").is_file()
        assert (ev / "figures" / f"roc_pr_{level}.pdf").is_file()
        assert (ev / "figures" / f"hist_{level}_CDFv2.png").is_file()
    summary = json.loads((ev / "tables" / "video_summary.json").read_text())
    assert summary["rows"][0]["test_data"] == "FF-c23" and summary["rows"][0]["n_fake"] == 4
    report = (ev / "report.html").read_text()
    assert "figures/roc_pr_frame.png" in report and "Evaluation of meso4" in report
    info = json.loads((ev / "eval.json").read_text())
    assert info["run"] == "r1" and info["train_data"] == "FF-c23"
    with pytest.raises(ValueError, match="no test set"):
        evaluate_prediction_files({"DFD": bad}, tmp_path / "e2", cfg, "meso4")


def test_table_formats(tmp_path: Path) -> None:
    t = Table(["a", "b"], [["x<y", 0.123456], ["z", float("nan")]], title="T")
    assert "| x<y | 0.1235 |" in t.to_markdown() and "| z | undefined |" in t.to_markdown()
    assert "x&lt;y" in t.to_html()
    t.highlight = {(0, 1)}
    assert "**0.1235**" in t.to_markdown() and "<b style='color:#c00'>0.1235</b>" in t.to_html()
    assert t.to_csv() == "a,b\nx<y,0.123456\nz,\n"
    paths = t.write(tmp_path / "sub" / "t")
    assert [p.suffix for p in paths] == [".csv", ".md", ".json"]
    assert json.loads(paths[2].read_text())["rows"][1]["b"] is None


def test_table_writer_options() -> None:
    from fairforensics.evaluation.table_writer import (
        csv_text,
        format_number,
        markdown_text,
        table_paths,
    )

    # one display everywhere: NaN (computed, undefined) vs None (not computed)
    assert [format_number(v, 2) for v in (0.125, float("nan"), None, 3, True)] == [
        "0.12",
        "undefined",
        "-",
        "3",
        "True",
    ]
    assert format_number(None, missing="n/a", none=None) == "n/a"
    assert format_number(0.1234, percent=True) == "12.34"
    rows = [["a", 0.5, float("nan")], ["b", None, 1.0]]
    assert csv_text(["k", "x", "y"], rows) == "k,x,y\na,0.5,\nb,,1.0\n"
    md = markdown_text(["k", "x", "y"], rows, right_align_numbers=True, bold={(1, 2)})
    assert md == (
        "| k | x | y |\n|---|---:|---:|\n| a | 0.5000 | undefined |\n| b | - | **1.0000** |\n"
    )
    assert [p.name for p in table_paths("out/p1.5_eer")] == [
        "p1.5_eer.csv",
        "p1.5_eer.md",
        "p1.5_eer.json",
    ]


def test_table_writer_html() -> None:
    from fairforensics.evaluation.table_writer import html_text

    rows = [["a<b", 0.5], ["c", float("nan")]]
    assert html_text(["k", "x"], rows, bold={(0, 1)}, caption="T") == (
        "<table><caption>T</caption><thead><tr><th>k</th><th>x</th></tr></thead><tbody>"
        "<tr><td>a&lt;b</td><td><b>0.5000</b></td></tr><tr><td>c</td><td>undefined</td></tr>"
        "</tbody></table>"
    )
    assert html_text(["k"], [["a"]], sections=False, row_sep="\n") == (
        "<table><tr><th>k</th></tr>\n<tr><td>a</td></tr>\n</table>"
    )
