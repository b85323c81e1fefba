"""Figures (ROC/PR, histograms, radar, heat maps, training curves) and the HTML report."""

from __future__ import annotations

import logging
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from fairforensics.evaluation import plots
from fairforensics.evaluation.report import Section, write_report
from fairforensics.evaluation.tables import Table

PNG = b"\x89PNG\r\n\x1a\n"


def _check(paths: list[Path]) -> None:
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert paths[0].read_bytes()[:8] == PNG and paths[1].read_bytes()[:4] == b"%PDF"
    assert mpimg.imread(paths[0]).shape[2] in (3, 4)
    assert not list(paths[0].parent.glob(".*"))  # no temp files left


@pytest.fixture
def scores():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    return y, np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)


def test_roc_pr_and_histogram(tmp_path: Path, scores, caplog) -> None:
    y, s = scores
    _check(plots.roc_pr_figure({"A": (y, s), "B": (y, 1 - s)}, tmp_path / "f" / "roc", title="t"))
    _check(plots.score_histogram(y, s, tmp_path / "hist", title="h"))
    with caplog.at_level(logging.WARNING):
        _check(
            plots.roc_pr_figure({"one": (np.ones(5), np.linspace(0, 1, 5))}, tmp_path / "single")
        )
    assert "only one class" in caplog.text


def test_radar_and_heatmaps(tmp_path: Path) -> None:
    values = {"a": {"X": 0.9, "Y": 0.7, "Z": 0.8}, "b": {"X": 0.6, "Y": 0.75, "Z": 0.5}}
    _check(plots.radar_chart(values, tmp_path / "radar", limits=(0.4, 1.0)))
    with pytest.raises(ValueError, match="at least 3"):
        plots.radar_chart({"a": {"X": 1, "Y": 1}}, tmp_path / "r2")
    mats = {
        d: Table(
            ["train \\ test", "FF-DF", "FF-NT"], [["FF-DF", 0.9, v], ["FF-NT", 0.7, float("nan")]]
        )
        for d, v in (("x", 0.5), ("y", 0.6), ("z", 0.55))
    }
    _check(plots.heatmaps(mats, tmp_path / "heat", title="AUC"))
    with pytest.raises(ValueError):
        plots.heatmaps({}, tmp_path / "h2")


def test_training_curves_from_tensorboard(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "tb" / "val")) as w:
        for step in (30, 10, 20):
            w.add_scalar("FF-c23/auc", 0.5 + step / 100, step)
            w.add_scalar("FF-c23/eer", 0.5 - step / 100, step)
            w.add_scalar("lr", 1e-4, step)
    series = plots.read_scalars(tmp_path / "tb")
    assert set(series) == {"val/FF-c23/auc", "val/FF-c23/eer"}
    steps, vals = series["val/FF-c23/auc"]
    np.testing.assert_array_equal(steps, [10, 20, 30])
    np.testing.assert_allclose(vals, [0.6, 0.7, 0.8], rtol=1e-6)
    _check(plots.training_curves(tmp_path / "tb", tmp_path / "curves"))
    with pytest.raises(ValueError, match="no scalar"):
        plots.training_curves(tmp_path / "tb", tmp_path / "c2", pattern="nothing")
    with pytest.raises(FileNotFoundError):
        plots.read_scalars(tmp_path / "missing")


def test_report_with_extra_sections(tmp_path: Path, scores) -> None:
    y, s = scores
    fig = plots.score_histogram(y, s, tmp_path / "figs" / "hist")[0]
    other = plots.score_histogram(y, 1 - s, tmp_path / "fairness" / "fdr")[0]
    fragment = tmp_path / "fairness" / "table.html"
    fragment.write_text("<html><body><p id='fair'>ABF table</p></body></html>")
    table = Table(["a", "b"], [["x", 0.5]], title="metrics")
    path = write_report(
        tmp_path / "out" / "report.html",
        "Evaluation",
        [Section("Metrics", [table, fig], text="intro & more")],
        extra_sections=[("Fairness", [other, fragment]), ("Metamorphic", "<b>MR1 passed</b>")],
        meta={"detector": "meso4"},
    )
    html = path.read_text()
    assert "<caption>metrics</caption>" in html and "intro &amp; more" in html
    assert 'src="../figs/hist.png"' in html and 'src="../fairness/fdr.png"' in html
    assert "<p id='fair'>ABF table</p>" in html and "<body><p id='fair'>" not in html
    assert "<b>MR1 passed</b>" in html and html.index("Fairness") < html.index("Metamorphic")
    assert "meso4" in html
    with pytest.raises(FileNotFoundError, match="missing.png"):
        write_report(tmp_path / "r.html", "x", [("S", [tmp_path / "missing.png"])])
    with pytest.raises(ValueError, match="cannot embed"):
        write_report(tmp_path / "r.html", "x", [("S", [tmp_path / "data.csv"])])


def test_save_figure_with_an_image_suffix_writes_that_one_file(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from fairforensics.evaluation.plots import save_figure

    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [0, 1])
    assert save_figure(fig, tmp_path / "a.png") == [tmp_path / "a.png"]
    assert save_figure(fig, tmp_path / "DF-1.0", formats=("png",)) == [tmp_path / "DF-1.0.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DF-1.0.png", "a.png"]


def test_saved_figures_carry_no_date(tmp_path, monkeypatch) -> None:
    """A figure's PDF/SVG holds no creation date (and SVG ids a fixed salt): one figure, the
    same bytes in every run, with or without SOURCE_DATE_EPOCH."""
    from matplotlib.figure import Figure

    from fairforensics.evaluation.plots import save_figure

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    saved = []
    for name in ("a", "b"):
        fig = Figure()
        fig.subplots().plot([0, 1], [1, 0])
        saved.append(save_figure(fig, tmp_path / name, formats=("pdf", "svg", "png")))
    for one, other in zip(*saved, strict=True):
        data = one.read_bytes()
        assert b"CreationDate" not in data and b"<dc:date>" not in data, one.name
        assert data == other.read_bytes(), one.name


def test_report_date_is_source_date_epoch_when_set(tmp_path, monkeypatch) -> None:
    from fairforensics.configs import ConfigError

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    write_report(tmp_path / "r.html", "T", [Section("S", [], text="x")])
    assert "1970-01-01 00:00 UTC" in (tmp_path / "r.html").read_text()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(ConfigError, match="SOURCE_DATE_EPOCH='yesterday' is not a whole number"):
        write_report(tmp_path / "r.html", "T", [Section("S", [], text="x")])


def test_a_long_curve_is_drawn_thinned_with_its_ends_and_its_ap(tmp_path, monkeypatch):
    x, y = np.linspace(0, 1, 12_001), np.linspace(1, 0, 12_001) ** 2
    thin_x, thin_y = plots._drawn(x, y, points=100)
    assert len(thin_x) == 100 and (thin_x[0], thin_x[-1], thin_y[-1]) == (0.0, 1.0, 0.0)
    assert np.array_equal(np.interp(thin_x, x, y), thin_y)  # points of the curve itself
    short = x[:50]
    assert plots._drawn(short, y[:50], points=100)[0] is short
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 3000)
    scores = np.round(np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1), 3)
    monkeypatch.setattr(plots, "DRAWN_POINTS", 200)
    lines = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, stem: lines.extend(fig.axes[1].lines))
    plots.roc_pr_figure({"a": (labels, scores)}, tmp_path / "rp")
    ap = plots.skm.average_precision_score(labels, scores)
    assert lines[0].get_label() == f"a (AP {ap:.3f})" and len(lines[0].get_xdata()) <= 200
