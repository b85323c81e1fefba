"""Relations YAML, the runner, the per-case per-gender tables and the report files."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from math import comb
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)

from fairforensics.configs import ConfigError
from fairforensics.detectors import build_detector
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.evaluation.thresholds import DecisionThreshold
from fairforensics.fairness.metamorphic import (
    BENCHMARK,
    FaceSample,
    Skipped,
    case_table,
    detector_scorer,
    load_relations,
    register_transform,
    relation_holds,
    run_metamorphic,
)
from fairforensics.fairness.metamorphic.report import report_section, write_report
from fairforensics.fairness.metamorphic.tables import COLUMNS, table_csv
from tests.test_metamorphic_faces import aligned_faces

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "metamorphic" / "makeup.yaml"


def brighten(params: Mapping[str, Any]):
    """A user-defined transform factory, named in YAML as 'tests.test_metamorphic_runner:brighten'."""
    amount = int(params.get("amount", 40))

    def apply(image: np.ndarray, landmarks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        out = np.clip(image.astype(int) + amount, 0, 255).astype(np.uint8)
        return out, np.ones(image.shape[:2], np.float32)

    apply.needs_landmarks = False
    return apply


def _samples(labels=(1, 0, 0, 1)) -> list[FaceSample]:
    """The four real faces, as fake/real test samples with their gender."""
    return [
        FaceSample(
            key=name,
            image=face,
            label=label,
            attributes={"gender": gender},
            landmarks=lm,
            dataset="celeb",
            video_id=name,
            method="fake" if label else "real",
        )
        for (name, face, lm, gender), label in zip(aligned_faces(), labels, strict=True)
    ]


def _red_scorer(images: list[np.ndarray]) -> np.ndarray:
    """A deterministic 'detector': the mean red level of the lower half of the face."""
    return np.array([img[img.shape[0] // 2 :, :, 0].mean() / 255.0 for img in images])


def _write_yaml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_paper_relations_file() -> None:
    cfg, transforms = load_relations(CONFIG)
    assert [r.id for r in cfg.relations] == ["MR1", "MR2", "MR3"]
    assert [c.id for c in cfg.cases] == [f"TC{i}" for i in range(1, 8)]
    assert all(r.oracle == "same_decision" for r in cfg.relations)
    assert (cfg.group_key, cfg.groups) == ("gender", ["female", "male"])
    t = {k: v.cfg for k, v in transforms.items()}
    all4 = ["eyeliner", "eyeshadow", "blush", "lipstick"]
    assert t["TC1"].colour == "adaptive" and t["TC1"].components == all4
    assert [t[c].intensity for c in ("TC2", "TC3", "TC4")] == ["light", "medium", "heavy"]
    assert all(t[c].components == all4 and t[c].colour == "fixed" for c in ("TC2", "TC3", "TC4"))
    assert t["TC5"].components == ["eyeliner", "eyeshadow"]
    assert t["TC6"].components == ["blush"]
    assert t["TC7"].components == ["lipstick"]
    assert all(t[c].intensity == "light" for c in ("TC5", "TC6", "TC7"))
    assert load_relations(None)[0] == cfg  # the default file
    assert load_relations(CONFIG, ["max_yaw=45"])[0].max_yaw == 45
    # the decision threshold is the command's (the run's validation threshold by default)
    with pytest.raises(ConfigError, match="not a relations key.*--threshold"):
        load_relations(CONFIG, ["threshold=0.3"])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("relations: []", "at least one relation"),
        ("relations: [{id: R, cases: [{id: T, transform: makeup}]}]\nbogus: 1", "bogus"),
        (
            "relations: [{id: R, cases: [{id: T, transform: glitter}]}]",
            "unknown transform 'glitter'",
        ),
        (
            "relations: [{id: R, cases: [{id: T, transform: 'no.such.module:f'}]}]",
            "cannot be imported",
        ),
        (
            "relations: [{id: R, cases: [{id: T, transform: makeup, params: {intensity: 2.0}}]}]",
            r"\[0, 1\]",
        ),
        (
            "relations: [{id: R, oracle: kinda_same, cases: [{id: T, transform: makeup}]}]",
            "kinda_same",
        ),
        (
            "relations: [{id: R, cases: [{id: T, transform: makeup}, {id: T, transform: identity}]}]",
            "twice",
        ),
        ("relations: [{id: R, cases: [{id: T, transform: makeup, source: TX}]}]", "source 'TX'"),
        ("relations: [{id: R, cases: []}]", "no test cases"),
        ("relations: [{id: R, cases: [{id: benchmark, transform: identity}]}]", "reserved"),
    ],
)
def test_bad_relations_files_name_file_and_key(tmp_path: Path, text: str, match: str) -> None:
    path = _write_yaml(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError, match=match) as err:
        load_relations(path)
    assert "bad.yaml" in str(err.value)


def test_user_defined_relations(tmp_path: Path) -> None:
    @register_transform("test_darken")
    def _darken(params: Mapping[str, Any]):
        return brighten({"amount": -int(params.get("amount", 40))})

    path = _write_yaml(
        tmp_path / "mine.yaml",
        "groups: []\nrelations:\n"
        "  - id: B\n    oracle: score_not_lower\n    tolerance: 0.0\n    cases:\n"
        "      - {id: bright, transform: 'tests.test_metamorphic_runner:brighten', params: {amount: 30}}\n"
        "      - {id: dark, transform: test_darken, source: bright}\n",
    )
    cfg, transforms = load_relations(path)
    result = run_metamorphic(_samples(), cfg, transforms, _red_scorer, progress=False)
    s = result.scores
    assert np.all(s["bright"] > s[BENCHMARK]) and np.all(s["dark"] < s["bright"])
    rows = {(r["case"], r["group"]): r for r in case_table(result)}
    # groups found in the data when none are configured
    assert {g for _, g in rows} == {"female", "male", "all"}
    assert rows[("bright", "all")]["violation_rate"] == 0.0  # brighter -> redder -> not lower
    assert rows[("dark", "all")]["violation_rate"] == 1.0  # compared with 'bright': always lower


def test_relation_oracles_by_hand() -> None:
    src = np.array([0.2, 0.6, 0.5, 0.9])
    fol = np.array([0.4, 0.4, 0.49, 0.95])
    np.testing.assert_array_equal(relation_holds("same_decision", src, fol, 0.5), [1, 0, 0, 1])
    np.testing.assert_array_equal(relation_holds("score_within", src, fol, 0.5, 0.1), [0, 0, 1, 1])
    np.testing.assert_array_equal(relation_holds("score_not_lower", src, fol, 0.5), [1, 0, 0, 1])
    np.testing.assert_array_equal(
        relation_holds("score_not_higher", src, fol, 0.5, 0.02), [0, 1, 1, 0]
    )
    with pytest.raises(ConfigError, match="unknown oracle"):
        relation_holds("nope", src, fol, 0.5)


def test_table_matches_hand_computed_metrics() -> None:
    cfg, transforms = load_relations(CONFIG)
    samples = _samples()
    result = run_metamorphic(samples, cfg, transforms, _red_scorer, progress=False)
    # red lipstick raises the red-level score of face 0: put the threshold in between
    assert result.scores["TC4"][0] > result.scores[BENCHMARK][0]
    threshold = float(result.scores["TC4"][0] + result.scores[BENCHMARK][0]) / 2
    result.threshold = DecisionThreshold(threshold, "test")
    rows = case_table(result)
    assert len(rows) == 8 * 3 and list(rows[0]) == list(COLUMNS)
    y = np.array([s.label for s in samples])
    gender = np.array([s.attributes["gender"] for s in samples])
    for row in rows:
        sel = np.ones(4, bool) if row["group"] == "all" else gender == row["group"]
        pred = (result.scores[row["case"]] >= threshold).astype(int)
        base = (result.scores[BENCHMARK] >= threshold).astype(int)
        tn, fp, fn, tp = confusion_matrix(y[sel], pred[sel], labels=[0, 1]).ravel()
        assert (row["tn"], row["fp"], row["fn"], row["tp"]) == (tn, fp, fn, tp)
        assert row["accuracy"] == pytest.approx(accuracy_score(y[sel], pred[sel]))
        if tp + fp:
            assert row["precision"] == pytest.approx(precision_score(y[sel], pred[sel]))
        else:
            assert np.isnan(row["precision"])
        assert row["recall"] == pytest.approx(recall_score(y[sel], pred[sel]))
        assert row["f1"] == pytest.approx(f1_score(y[sel], pred[sel], zero_division=0.0))
        acc = {g: accuracy_score(y[gender == g], pred[gender == g]) for g in ("female", "male")}
        assert row["bias_factor"] == pytest.approx(abs(acc["female"] - acc["male"]))
        acc_base = accuracy_score(y[sel], base[sel])
        assert row["accuracy_change"] == pytest.approx(row["accuracy"] - acc_base)
        n = sel.sum()
        assert row["violation_rate"] == pytest.approx((pred[sel] != base[sel]).sum() / n)
        assert row["fake_to_real"] == pytest.approx(((base == 1) & (pred == 0))[sel].sum() / n)
        assert row["real_to_fake"] == pytest.approx(((base == 0) & (pred == 1))[sel].sum() / n)
        assert row["violation_rate"] == pytest.approx(row["fake_to_real"] + row["real_to_fake"])
        assert row["bias_diff"] == pytest.approx(acc["female"] - acc["male"])  # signed
        if row["case"] != BENCHMARK:
            assert 0 < row["changed_pixels"] < 0.5
            right = base == y
            worse = int((right & (pred != y))[sel].sum())
            better = int((~right & (pred == y))[sel].sum())
            assert (row["n_worse"], row["n_better"]) == (worse, better)
            k, m = min(worse, better), worse + better  # exact two-sided binomial, by hand
            p = min(1.0, 2 * sum(comb(m, i) for i in range(k + 1)) / 2**m) if m else 1.0
            assert row["mcnemar_p"] == pytest.approx(p)
            assert row["mcnemar_p"] <= row["mcnemar_p_adjusted"]
            assert np.isnan(row["violation_low"])  # 2 or 4 videos: the small-group rule
    tc4 = next(r for r in rows if r["case"] == "TC4" and r["group"] == "all")
    assert tc4["violation_rate"] > 0 and tc4["real_to_fake"] > 0
    # Holm over the table's McNemar tests (not the benchmark's) and over the cases' bias tests
    tested = [r for r in rows if r["case"] != BENCHMARK]
    smallest = min(tested, key=lambda r: r["mcnemar_p"])
    assert smallest["mcnemar_p_adjusted"] == pytest.approx(
        min(1.0, len(tested) * smallest["mcnemar_p"])
    )
    bias = {r["case"]: (r["bias_p"], r["bias_p_adjusted"]) for r in rows}
    low = min(bias.values())
    assert low[1] == pytest.approx(min(1.0, len(bias) * low[0]))


def test_missing_group_attribute_is_an_error_naming_it() -> None:
    cfg, transforms = load_relations(CONFIG)
    samples = _samples()
    for sample in samples:
        sample.attributes = {"race": "white", "age": "young"}
    with pytest.raises(ValueError, match=r"group attribute 'gender'.*\['age', 'race'\]"):
        run_metamorphic(samples, cfg, transforms, _red_scorer, progress=False)
    for sample in samples:
        sample.attributes = {"gender": "F"}
    with pytest.raises(ValueError, match=r"values \['F'\] hold none of the groups"):
        run_metamorphic(samples, cfg, transforms, _red_scorer, progress=False)


def test_tiny_detector_gives_complete_table_and_identity_never_violates(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    detector = build_detector("meso4", input_size=64)
    path = _write_yaml(
        tmp_path / "rel.yaml",
        CONFIG.read_text(encoding="utf-8")
        + "  - id: MR0\n    description: control\n    cases:\n"
        + "      - {id: TC0, transform: identity}\n",
    )
    cfg, transforms = load_relations(path)
    result = run_metamorphic(
        _samples(),
        cfg,
        transforms,
        detector_scorer(detector, batch_size=2),
        chunk_size=3,
        progress=False,
    )
    result.threshold = DecisionThreshold(float(np.median(result.scores[BENCHMARK])), "median")
    rows = case_table(result)
    assert [(r["case"], r["group"]) for r in rows] == [
        (c, g)
        for c in [BENCHMARK, *(f"TC{i}" for i in range(1, 8)), "TC0"]
        for g in ("female", "male", "all")
    ]
    for row in rows:
        assert set(row) == set(COLUMNS)
        assert row["n"] == (4 if row["group"] == "all" else 2)
        for k in (
            "accuracy",
            "recall",
            "f1",
            "bias_factor",
            "violation_rate",
            "fake_to_real",
            "real_to_fake",
        ):
            assert 0.0 <= row[k] <= 1.0, (row["case"], row["group"], k)
    identity = [r for r in rows if r["case"] == "TC0"]
    assert all(r["violation_rate"] == 0 and r["accuracy_change"] == 0 for r in identity)
    np.testing.assert_array_equal(result.scores["TC0"], result.scores[BENCHMARK])
    assert "TC0" in table_csv(rows)


def test_faces_without_landmarks_are_reported_not_crashed_on(tmp_path: Path) -> None:
    cfg, transforms = load_relations(CONFIG)
    samples = _samples()
    samples[1].landmarks = None
    samples[2].landmarks = np.zeros((5, 2))
    bad_label = FaceSample(
        key="celeb/bad_label", image=samples[0].image, label=2, landmarks=samples[0].landmarks
    )
    items = [*samples, bad_label, Skipped("celeb/unreadable", "unreadable image x.png")]
    result = run_metamorphic(items, cfg, transforms, _red_scorer, progress=False, n_examples=2)
    assert [r.key for r in result.rows] == [samples[0].key, samples[3].key]
    reasons = {s.key: s.reason for s in result.skipped}
    assert "no landmarks" in reasons[samples[1].key]
    assert "(5, 2)" in reasons[samples[2].key]
    assert reasons["celeb/unreadable"] == "unreadable image x.png"
    assert "label must be 0" in reasons["celeb/bad_label"]
    files = write_report(result, tmp_path / "out")
    manifest = json.loads(files["manifest"].read_text())
    assert len(manifest["skipped"]) == 4
    # a control that needs no landmarks still tests those faces
    id_cfg, id_tf = load_relations(
        _write_yaml(
            tmp_path / "id.yaml", "relations: [{id: R, cases: [{id: I, transform: identity}]}]"
        )
    )
    assert len(run_metamorphic(samples, id_cfg, id_tf, _red_scorer, progress=False).rows) == 4
    with pytest.raises(ValueError, match="no face could be tested"):
        run_metamorphic(samples[1:3], cfg, transforms, _red_scorer, progress=False)


def test_scorer_contract_is_checked() -> None:
    cfg, transforms = load_relations(CONFIG)
    with pytest.raises(ValueError, match="returned 1 scores for 4"):
        run_metamorphic(_samples(), cfg, transforms, lambda imgs: np.zeros(1), progress=False)
    with pytest.raises(ValueError, match="NaN"):
        run_metamorphic(
            _samples(), cfg, transforms, lambda imgs: np.full(len(imgs), np.nan), progress=False
        )


def test_report_files(tmp_path: Path) -> None:
    cfg, transforms = load_relations(CONFIG)
    result = run_metamorphic(_samples(), cfg, transforms, _red_scorer, progress=False, n_examples=2)
    files = write_report(result, tmp_path)
    header = files["csv"].read_text().splitlines()[0].split(",")
    assert header == list(COLUMNS)
    assert len(files["csv"].read_text().splitlines()) == 1 + 8 * 3
    summary = json.loads(files["json"].read_text())  # strict JSON: NaN written as null
    assert summary["n_faces"] == 4 and len(summary["rows"]) == 24
    assert summary["config"]["relations"][0]["id"] == "MR1"
    md = files["markdown"].read_text()
    # one table per test case, a column per group: narrow enough for a terminal
    heads = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line]
    cases = [BENCHMARK, *(f"TC{i}" for i in range(1, 8))]
    assert [h for h in heads if h.endswith("| female | male | all |")] == [
        f"| {c} | female | male | all |" for c in cases
    ]
    assert md.count("\nBias factor: ") == 8
    assert max(len(line) for line in md.splitlines() if line.startswith("|")) < 100
    rows = case_table(result)
    for row in rows:  # 2 or 4 videos per column: no interval (fewer than 5)
        assert np.isnan(row["accuracy_low"]) and np.isnan(row["accuracy_high"]), row
    for case in [BENCHMARK, *(f"TC{i}" for i in range(1, 8))]:
        pred = read_predictions(files[f"predictions:{case}"])
        assert len(pred) == 4 and set(pred.attributes) == {"gender"}
        np.testing.assert_allclose(pred.score, result.scores[case])
    for key in ("figure", "examples"):
        img = cv2.imread(str(files[key]))
        assert img is not None and img.shape[0] > 100 and img.std() > 5
    assert "TC7" in files["html"].read_text()
    title, items = report_section(tmp_path)
    assert title.startswith("Metamorphic") and [p.name for p in items] == [
        "metamorphic.html",
        "accuracy.png",
        "examples.png",
    ]
    assert report_section(tmp_path / "predictions") is None
    from fairforensics.evaluation.report import write_report as write_html

    page = write_html(
        tmp_path / "report" / "index.html", "eval", [], extra_sections=[(title, items)]
    )
    text = page.read_text()
    assert "../accuracy.png" in text and "<table>" in text and "TC7" in text


def test_accuracy_plot_has_intervals_and_no_label_on_a_bar() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.container import BarContainer, ErrorbarContainer
    from matplotlib.text import Text

    from fairforensics.fairness.metamorphic.report import accuracy_figure

    cfg, transforms = load_relations(CONFIG)
    samples = [  # 6 videos per group: intervals are shown
        dataclasses.replace(face, video_id=f"{face.video_id}_{copy}")
        for copy in range(3)
        for face in _samples()
    ]
    result = run_metamorphic(samples, cfg, transforms, _red_scorer, progress=False)
    result.threshold = DecisionThreshold(0.45, "test")  # some right, some wrong
    rows = [r for r in case_table(result, n_boot=200, n_perm=0) if r["group"] != "all"]
    fig = accuracy_figure(rows, ["female", "male"])
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    bars = [b for c in ax.containers if isinstance(c, BarContainer) for b in c]
    assert len(bars) == 16
    errorbars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(errorbars) == 2  # one per group, drawn from accuracy_low / accuracy_high
    segments = errorbars[0].lines[2][0].get_segments()
    female = [r for r in rows if r["group"] == "female"]
    for (lo, hi), row in zip((s[:, 1] for s in segments), female, strict=True):
        assert (lo, hi) == pytest.approx((100 * row["accuracy_low"], 100 * row["accuracy_high"]))
    assert any(hi > lo for lo, hi in (s[:, 1] for s in segments))
    labels = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert any("BF" in t.get_text() for t in labels)
    for text in labels:
        box = text.get_window_extent(renderer)
        for bar in bars:
            assert not box.overlaps(bar.get_window_extent(renderer)), text.get_text()


def test_example_sheet_spans_groups_labels_and_people() -> None:
    """A stream whose first faces are all one person still gives a sheet of several people,
    both groups and both labels."""
    cfg, transforms = load_relations(CONFIG)
    base = _samples()
    same_person = [
        FaceSample(
            key=f"celeb/img1/{i}",
            image=base[0].image,
            label=1,
            attributes={"gender": "female"},
            landmarks=base[0].landmarks,
            dataset="celeb",
            video_id=f"img1_{i}",
            identity="img1",
        )
        for i in range(6)
    ]
    result = run_metamorphic(
        [*same_person, *base], cfg, transforms, _red_scorer, progress=False, n_examples=4
    )
    chosen = [(e.group, e.label, e.person) for e in result.examples]
    assert len(chosen) == 4 and len({p for _, _, p in chosen}) == 4
    assert {g for g, _, _ in chosen} == {"female", "male"} and {lb for _, lb, _ in chosen} == {0, 1}
    assert set(result.examples[0].images) == {BENCHMARK, *(f"TC{i}" for i in range(1, 8))}


def test_intervals_are_wilson_and_hidden_under_five_videos() -> None:
    """Issue 29, item 7: 30 faces all right is not ``100.0 [100.0, 100.0]``; a group of fewer
    than 5 videos shows no interval (one rule, evaluation.confidence.too_few_units)."""
    from scipy import stats

    from fairforensics.fairness.metamorphic.runner import FaceMeta, MetamorphicResult

    cfg, _ = load_relations(CONFIG)
    genders = ["female"] * 30 + ["male"] * 4
    rows = [
        FaceMeta(f"f{i}", i % 2, {"gender": g}, "d", f"v{i}", 0, "m") for i, g in enumerate(genders)
    ]
    labels = np.array([r.label for r in rows])
    right = np.where(labels == 1, 0.9, 0.1)  # every decision right at 0.5
    flipped = right.copy()
    flipped[:3] = 1 - flipped[:3]  # TC1 flips three female faces
    scores = {BENCHMARK: right, **{c.id: right for c in cfg.cases}, "TC1": flipped}
    result = MetamorphicResult(cfg, rows, scores, {c.id: np.zeros(34) for c in cfg.cases})
    table = {(r["case"], r["group"]): r for r in case_table(result, n_perm=0)}
    z2 = stats.norm.ppf(0.975) ** 2
    female = table[(BENCHMARK, "female")]
    assert female["accuracy"] == 1.0
    assert (female["accuracy_low"], female["accuracy_high"]) == pytest.approx((30 / (30 + z2), 1))
    ref = stats.binomtest(3, 30).proportion_ci(0.95, method="wilson")
    tc1 = table[("TC1", "female")]
    assert (tc1["violation_low"], tc1["violation_high"]) == pytest.approx((ref.low, ref.high))
    male = table[(BENCHMARK, "male")]  # 4 videos
    assert male["accuracy"] == 1.0 and np.isnan(male["accuracy_low"])
    assert table[(BENCHMARK, "all")]["accuracy_low"] == pytest.approx(34 / (34 + z2))


def _hand_result(labels, scores_of_case, groups=None):
    """A MetamorphicResult of faces with given labels and scores (one video per face)."""
    from fairforensics.fairness.metamorphic.runner import FaceMeta, MetamorphicResult

    cfg, _ = load_relations(CONFIG)
    n = len(labels)
    groups = groups or ["female", "male"] * (n // 2)
    rows = [
        FaceMeta(f"f{i}", int(lb), {"gender": g}, "d", f"v{i}", 0, "m")
        for i, (lb, g) in enumerate(zip(labels, groups, strict=True))
    ]
    scores = {BENCHMARK: np.asarray(scores_of_case[BENCHMARK], float)}
    scores |= {
        c.id: np.asarray(scores_of_case.get(c.id, scores[BENCHMARK]), float) for c in cfg.cases
    }
    return MetamorphicResult(cfg, rows, scores, {c.id: np.zeros(n) for c in cfg.cases})


def test_all_real_faces_give_undefined_precision_with_the_reason() -> None:
    """Issue 31, item 7: on faces without fakes precision, recall and F1 are undefined, not
    0.0, and the table says why; flips read as decisions; percentages have one decimal."""
    from fairforensics.fairness.metamorphic.tables import table_markdown

    labels = np.zeros(12, int)
    scores = {BENCHMARK: np.linspace(0.1, 0.9, 12), "TC1": np.linspace(0.6, 0.95, 12)}
    result = _hand_result(labels, scores)
    rows = case_table(result, n_perm=0)
    female = next(r for r in rows if r["case"] == BENCHMARK and r["group"] == "female")
    assert (
        female["fp"] > 0 and np.isnan([female["precision"], female["recall"], female["f1"]]).all()
    )
    assert female["notes"] == "precision, recall, F1 undefined: no fake faces"
    md = table_markdown(rows, result)
    assert "| precision | undefined | undefined | undefined |" in md
    assert "Notes: female: precision, recall, F1 undefined: no fake faces; male: " in md
    assert "| decision flipped real->fake | " in md and "| fake->real |" not in md
    assert not re.search(r"\d\.\d\d\b", md.split("## benchmark")[1].split("Bias factor")[0])


def test_example_sheet_shows_scores_and_flipped_faces_first(tmp_path: Path, monkeypatch) -> None:
    """Issue 31, item 7: each face's score and decision per case, flipped decisions first and
    marked, row labels inside the image."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from fairforensics.fairness.metamorphic import report
    from fairforensics.fairness.metamorphic.examples import Example, ExamplePicker

    face = np.zeros((8, 8, 3), np.uint8)

    def example(i: int, group: str, label: int, tc1: float) -> Example:
        scores = {BENCHMARK: 0.2 if label == 0 else 0.8, "TC1": tc1}
        flipped = (tc1 >= 0.5) != (scores[BENCHMARK] >= 0.5)
        images = {BENCHMARK: face, "TC1": face}
        return Example(
            f"celeb/a_long_video_name/k{i}", group, label, f"p{i}", images, scores, flipped
        )

    picker = ExamplePicker(2, ["female", "male"])
    for ex in (example(0, "female", 0, 0.1), example(1, "female", 0, 0.3)):
        picker.offer(ex)
    picker.offer(example(2, "male", 1, 0.9))
    picker.offer(example(3, "female", 0, 0.7))  # the full bucket swaps a plain face for it
    chosen = picker.chosen()
    assert [e.key[-2:] for e in chosen] == ["k3", "k2"]  # flipped first
    figures = []
    monkeypatch.setattr(report, "save_figure", lambda fig, path, dpi: figures.append(fig))
    report.example_sheet(chosen, tmp_path / "examples.png", 0.5)
    (fig,) = figures
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    labels = {ax.get_xlabel(): ax.xaxis.label.get_color() for ax in fig.axes}
    assert labels["0.70 fake (flip)"] == "tab:red" and labels["0.20 real"] == "black"
    box = fig.bbox
    for ax in fig.axes[::2]:  # every row's label lies inside the image
        extent = ax.yaxis.label.get_window_extent(renderer)
        assert ax.get_ylabel().startswith(("female, real", "male, fake"))
        assert extent.x0 >= box.x0 and extent.y0 >= box.y0 and extent.y1 <= box.y1
