"""Issue 46: what the leaderboard's tables say. Within/Cross from the runs' training data,
baselines set apart and never ranked, the LaTeX tables, Pareto labels that do not overlap."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fairforensics.benchmarks.fairness_board import label_box, place_labels
from fairforensics.evaluation import leaderboard as lb
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.evaluation.results import evaluate_prediction_files
from fairforensics.evaluation.settings import load_test_config
from fairforensics.evaluation.tables import Result, leaderboard, within_domain


def _results(train: str, values: dict[str, dict[str, float]]) -> list[Result]:
    return [Result(d, train, t, {"auc": v}) for d, row in values.items() for t, v in row.items()]


def test_within_is_the_training_data_not_the_name() -> None:
    """Trained and tested on ``demo``: within; FaceForensics++'s methods are within when trained
    on FF-c23 (paper 002, Table 3), cross when trained on ``demo``; ``within`` overrides."""
    demo = _results("demo", {"meso4": {"demo": 0.8, "FF-DF": 0.6}})
    table = leaderboard(demo)
    assert table.columns[2:] == ["demo", "Within Avg.", "Within Top3",
                                 "FF-DF", "Cross Avg.", "Cross Top3"]  # fmt: skip
    ff = _results("FF-c23", {"meso4": {"FF-DF": 0.9, "CDFv2": 0.6, "FF-c23": 0.95}})
    assert within_domain(ff) == {"FF-DF", "FF-c23"}
    assert within_domain(_results("FF-c23+DFDC", {"x": {"DFDC": 0.7, "UADFV": 0.6}})) == {"DFDC"}
    forced = leaderboard(demo, within=["FF-DF"])
    assert forced.columns[2:5] == ["FF-DF", "Within Avg.", "Within Top3"]
    partial = _results("demo", {"x": {"demo (partial: 3 of 7 listed videos)": 0.7}})
    assert within_domain(partial) == {"demo (partial: 3 of 7 listed videos)"}


def test_a_baseline_is_never_best_nor_top3() -> None:
    """The baseline beats every detector on both sets, yet: no Top-3 count, no best cell, and
    the three detectors each keep their Top-3 counts (it pushes none of them out)."""
    values = {
        "meso4": {"demo": 0.7, "CDFv2": 0.6},
        "xception": {"demo": 0.8, "CDFv2": 0.65},
        "f3net": {"demo": 0.75, "CDFv2": 0.55},
        "metadata": {"demo": 1.0, "CDFv2": 0.99},
    }
    table = leaderboard(_results("demo", values), baselines={"metadata"})
    rows = {r["Detector"]: r for r in table.records()}
    assert rows["metadata"]["Type"] == "Baseline" and rows["metadata"]["Within Top3"] is None
    assert rows["metadata"]["Cross Top3"] is None
    assert all(
        rows[d]["Within Top3"] == 1 and rows[d]["Cross Top3"] == 1
        for d in values
        if d != "metadata"
    )
    base = [i for i, r in enumerate(table.rows) if r[1] == "metadata"]
    assert table.baseline_rows == set(base)
    assert not {i for i, _ in table.highlight} & set(base)
    best = {table.columns[j]: table.rows[i][1] for i, j in table.highlight}
    assert best["demo"] == "xception" and best["CDFv2"] == "xception"
    html = table.to_html()
    assert "class='baseline'" in html and "class='sep'" in html
    assert html.index("class='sep'") < html.index("metadata")


def test_compare_passes_baselines_as_never_best(monkeypatch) -> None:
    """The baselines go to the tie test as ``baselines`` (never best nor reference); a column
    with fewer than two detectors that are not baselines is not compared."""
    seen = {}

    def spy(preds, *, level, reduce, alpha, shown, baselines=()):
        seen["call"] = (sorted(preds), set(baselines))
        return {}

    preds = dict.fromkeys(["a", "b", "metadata"])
    shown = {"a": 0.7, "b": 0.6, "metadata": 1.0}
    monkeypatch.setattr(lb, "compare_with_best", spy)
    lb._compare(preds, {"metadata"}, level="frame", reduce="mean", alpha=0.05, shown=shown)
    assert seen.pop("call") == (["a", "b", "metadata"], {"metadata"})
    one = {"a": None, "metadata": None}
    assert (
        lb._compare(one, {"metadata"}, level="frame", reduce="mean", alpha=0.05, shown=shown) == {}
    )
    assert "call" not in seen


def _preds(skill: float, seed: int, n: int = 24) -> Predictions:
    rng = np.random.default_rng(seed)
    label = np.repeat(np.arange(n) % 2, 2)
    score = 1 / (1 + np.exp(-(skill * label - skill / 2 + rng.normal(0, 1, 2 * n))))
    return Predictions(
        dataset=["demo"] * 2 * n, video_id=[f"{v:03d}" for v in np.repeat(np.arange(n), 2)],
        frame=np.tile([0, 1], n), label=label, score=score,
        method=np.where(label == 1, "DF", "real"),
    )  # fmt: skip


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> Path:
    """Two detectors (one with two seeds) and a baseline on ``demo``, as evaluation folders."""
    root = tmp_path_factory.mktemp("latex")
    cfg = load_test_config(overrides=["n_boot=0", "plots=false", "report=false"])
    dirs = []
    for name, skill, seeds in (("meso4", 2.0, (0, 1)), ("xception", 2.0, (2,)),
                               ("random", 0.0, (3,))):  # fmt: skip
        for seed in seeds:
            folder = root / f"{name}{seed}"
            src = root / f"{name}{seed}.csv"
            write_predictions(src, _preds(skill, seed))
            meta = {"baseline": True} if name == "random" else {}
            evaluate_prediction_files({"demo": src}, folder, cfg, name, "demo", meta=meta)
            dirs.append(folder)
    out = root / "board"
    lb.build_leaderboard(dirs, out, ("auc", "acc"), ("frame",), n_boot=50, latex=True)
    return out


def _parse_latex(text: str) -> tuple[list[str], list[list[str]]]:
    """Checks a booktabs tabular (balanced braces, one cell per column on every line) and
    returns its column spec and its lines split into cells."""
    plain = re.sub(r"\\[{}&%$#_]", "", text)  # escaped characters are no braces or cells
    depth = 0
    for c in plain:
        depth += {"{": 1, "}": -1}.get(c, 0)
        assert depth >= 0, "a closing brace without its opening one"
    assert depth == 0, "unbalanced braces"
    spec = re.search(r"\\begin\{tabular\}\{([lr]+)\}", text).group(1)
    assert text.count(r"\toprule") == text.count(r"\bottomrule") == 1
    body = plain[plain.index(r"\toprule") + 8 : plain.index(r"\bottomrule")]
    lines = [x.strip() for x in body.split(r"\\") if x.strip().replace(r"\midrule", "")]
    cells = []
    for line in lines:
        line = line.replace(r"\midrule", "").strip()
        if line.startswith(r"\multicolumn"):
            assert re.match(rf"\\multicolumn\{{{len(spec)}\}}", line), line
            continue
        cells.append(line.split("&"))
        assert len(cells[-1]) == len(spec), line
    return list(spec), cells


def test_latex_tables_parse_and_carry_intervals_ties_seeds_and_videos(board: Path) -> None:
    text = (board / "leaderboard_frame_auc.tex").read_text()
    spec, cells = _parse_latex(text)
    assert r"\begin{table}" in text and r"\caption{" in text and r"\midrule" in text
    header, notes = cells[0], cells[1]
    assert [h.strip() for h in header[:3]] == ["Type", "Detector", "demo"]
    assert notes[2].strip() == "n = 24 videos"  # the test videos of the set
    assert "Seeds" in [h.strip() for h in header]
    rows = {r[1].strip(): r for r in cells[2:]}
    seeds = [h.strip() for h in header].index("Seeds")
    assert rows["meso4"][seeds].strip() == "2" and rows["xception"][seeds].strip() == "1"
    assert re.search(r"\[0\.\d{3}, [01]\.\d{3}\]", rows["xception"][2])  # its interval
    assert r"$\pm$" in rows["meso4"][2]  # the spread across seeds
    assert rows["meso4"][2].strip().startswith(r"\textbf{")  # the best
    assert rows["xception"][2].strip().endswith(r"$\approx$")  # tied with it
    assert r"\multicolumn{" in text and "Baselines" in text  # the baseline set apart
    assert text.index("Baselines") < text.index("random")
    _parse_latex((board / "leaderboard_frame_acc.tex").read_text())


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex on this machine")
def test_latex_table_compiles(board: Path, tmp_path: Path) -> None:
    doc = tmp_path / "doc.tex"
    table = (board / "leaderboard_frame_auc.tex").read_text()
    doc.write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\usepackage[T1]{fontenc}"
        f"\\begin{{document}}{table}\\end{{document}}\n"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]


def test_auc_label_and_row_columns(board: Path) -> None:
    """Issue 46, items 1 and 4: the AUC table says what a seeded cell is (the mean of the
    seeds' AUCs) and each row's seeds, threshold and how it was chosen."""
    data = json.loads((board / "leaderboard_frame_auc.json").read_text())
    assert "AUC of each seed, mean over seeds" in data["title"]
    assert data["columns"][-3:] == ["Seeds", "Threshold", "Chosen by"]
    row = next(r for r in data["rows"] if r["Detector"] == "xception")
    assert row["Threshold"] == 0.5 and row["Chosen by"].startswith("default 0.5")


def test_pareto_labels_do_not_overlap() -> None:
    fig = Figure(figsize=(5.5, 4.5))
    ax = fig.add_subplot()
    points = [(0.70, 0.05), (0.701, 0.051), (0.702, 0.049), (0.5, 0.0), (0.5, 0.0), (0.9, 0.2)]
    labels = ["meso4", "meso_inception4", "xception", "constant (baseline)",
              "random (baseline)", "f3net"]  # fmt: skip
    for x, y in points:
        ax.scatter(x, y)
    texts = place_labels(ax, points, labels)
    renderer = FigureCanvasAgg(fig).get_renderer()
    boxes = [label_box(t, renderer) for t in texts]
    assert sorted(t.get_text() for t in texts) == sorted(labels)
    overlaps = [(a, b) for a in range(len(boxes)) for b in range(a) if boxes[a].overlaps(boxes[b])]
    assert overlaps == []
