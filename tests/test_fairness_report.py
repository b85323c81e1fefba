"""Fairness reports from predictions files, and scripts/fairness.py."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from fairforensics.configs import ConfigError
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.fairness.metrics import bias_factor, group_metrics
from fairforensics.fairness.report import (
    ReportConfig,
    attribute_arrays,
    fairness_report,
    format_summary,
    html_section,
    load_report_config,
    report_sections,
    summary_rows,
    write_report,
)
from fairforensics.fairness.tables import to_markdown

REPO = Path(__file__).resolve().parents[1]


def _predictions(n_videos: int = 60, frames: int = 3, seed: int = 0) -> Predictions:
    rng = np.random.default_rng(seed)
    vy = rng.integers(0, 2, n_videos)
    gender = np.where(np.arange(n_videos) % 2 == 0, "female", "male")
    lighting = rng.choice(["dark", "bright", ""], n_videos)
    y = np.repeat(vy, frames)
    g = np.repeat(gender, frames)
    shift = np.where(g == "female", 0.08, 0.0)  # females are harder: scores pulled to the middle
    s = np.clip(
        0.5 * y + 0.25 + rng.normal(0, 0.15, len(y)) + np.where(y == 1, -shift, shift), 0, 1
    )
    return Predictions(
        dataset=["demo"] * len(y),
        video_id=np.repeat([f"{i:03d}" for i in range(n_videos)], frames),
        frame=np.tile(np.arange(frames), n_videos),
        label=y,
        score=s,
        method=np.where(y == 1, "SelfBlended", "real"),
        attributes={"gender": g, "lighting": np.repeat(lighting, frames)},
    )


def _load_script():
    spec = importlib.util.spec_from_file_location(
        "fairness_script", REPO / "scripts" / "fairness.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_prints_per_group_summary_and_writes_tables(tmp_path, capsys):
    pred = _predictions()
    path = tmp_path / "pred.csv"
    write_predictions(path, pred)
    out = tmp_path / "fair"
    rc = _load_script().main(
        [
            "--predictions",
            str(path),
            "--attributes",
            "gender",
            "lighting",
            "--out",
            str(out),
            "--set",
            "bootstrap=50",
            "--set",
            "permutations=50",
            "--set",
            "curve_bootstrap=20",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    per = group_metrics(pred.label, pred.score, pred.attributes["gender"])
    bf = bias_factor(pred.label, (pred.score >= 0.5).astype(int), pred.attributes["gender"])
    assert "== gender (frame level) ==" in text and "== lighting (frame level) ==" in text
    female_line = next(line for line in text.splitlines() if line.startswith("female"))
    n, acc_pct, fpr_pct, fnr_pct, auc_pct, eer_pct = female_line.split()[1:]
    assert float(fpr_pct) == pytest.approx(100 * per["female"]["fpr"], abs=0.01)
    assert float(fnr_pct) == pytest.approx(100 * per["female"]["fnr"], abs=0.01)
    assert int(n) == per["female"]["n"]
    assert float(acc_pct) == pytest.approx(100 * per["female"]["acc"], abs=0.01)
    assert float(auc_pct) == pytest.approx(100 * per["female"]["auc"], abs=0.01)
    assert float(eer_pct) == pytest.approx(100 * per["female"]["eer"], abs=0.01)
    assert f"bias factor: {100 * bf:.2f}% (female vs male, male favoured)" in text
    assert "ACC female - male = " in text and "class ratio: " in text
    for stem in ("summary", "group_metrics", "fdr_abf_auc", "curves", "odta", "gaps"):
        for suffix in (".csv", ".md", ".json"):
            assert (out / f"{stem}{suffix}").is_file(), stem + suffix
    for attr in ("gender", "lighting"):
        for kind in ("roc", "accuracy", "fdr_abf", "odta"):
            assert (out / "figures" / f"{attr}_{kind}.png").stat().st_size > 1000
    with (out / "group_metrics.csv").open(newline="") as fh:
        rows = {(r["attribute"], r["group"]): r for r in csv.DictReader(fh)}
    assert float(rows[("gender", "male")]["acc"]) == pytest.approx(per["male"]["acc"])
    assert "bpcer@apcer=5%" in rows[("gender", "male")]
    male = rows[("gender", "male")]
    assert float(male["apcer"]) == float(male["apcer[SelfBlended]"])  # one species: max = it
    summary = json.loads((out / "summary.json").read_text())
    assert summary[0]["attribute"] == "gender" and summary[0]["bias_factor"] == pytest.approx(bf)
    assert summary[0]["acc_diff_low"] <= summary[0]["acc_diff"] <= summary[0]["acc_diff_high"]
    assert summary[0]["acc_diff"] == pytest.approx(-bf) and summary[0]["favoured"] == "male"
    assert 0 < summary[0]["acc_p_value"] <= 1
    # the summary's adjusted ACC p is gaps.csv's (Holm over every gap test of the report)
    gaps = json.loads((out / "gaps.json").read_text())
    for row in summary:
        (acc_gap,) = [g for g in gaps if (g["attribute"], g["metric"]) == (row["attribute"], "acc")]
        assert row["acc_p_adjusted"] == acc_gap["p_adjusted"] >= row["acc_p_value"]
    assert len(gaps) > 2 and any(g["p_adjusted"] > g["p_value"] for g in gaps)
    assert summary[0]["fdr_auc_low"] <= summary[0]["fdr_auc"] <= summary[0]["fdr_auc_high"]
    assert float(male["acc_low"]) <= float(male["acc"]) <= float(male["acc_high"])
    assert "<table>" in (out / "section.html").read_text()
    sections = report_sections(
        fairness_report(
            pred, ["gender"], ReportConfig(bootstrap=0, permutations=0, curve_bootstrap=0)
        ),
        out / "figures",
    )
    assert sections[0][1][1:] == [
        out / "figures" / f"gender_{k}.png" for k in ("accuracy", "roc", "fdr_abf", "odta")
    ]
    from fairforensics.evaluation.report import write_report as write_html

    page = write_html(
        tmp_path / "html" / "report.html", "eval", [], extra_sections=sections
    ).read_text()
    assert "bias_factor" in page and "gender_fdr_abf.png" in page
    full = json.loads((out / "fairness.json").read_text())
    assert set(full["gender"]["fdr_abf_auc"]) == {"fused", "female", "male"}
    assert len(full["gender"]["curves"]["fused"]["fdr"]) == 40


def test_video_level_and_missing_values(caplog):
    pred = _predictions()
    cfg = ReportConfig(level="video", bootstrap=0, permutations=0, curve_bootstrap=0)
    reports = fairness_report(pred, ["gender", "lighting"], cfg)
    assert reports["gender"].groups["female"]["n"] == 30  # videos, not frames
    assert np.isnan(reports["gender"].gaps.gaps["acc"].low)
    n_known = int(np.sum(pred.attributes["lighting"][::3] != ""))
    assert sum(m["n"] for m in reports["lighting"].groups.values()) == n_known
    assert "rows have no value" in caplog.text
    y, s, g, ids = attribute_arrays(pred, "gender", "video")
    assert len(ids) == 60 and set(ids) == set(pred.video_key) and len(y) == len(s) == len(g) == 60
    text = format_summary(reports)
    assert "(video level)" in text and "FDR-AUC" in text
    assert "<table>" in html_section(reports) and "bias_factor" in html_section(reports)
    assert report_sections(reports) == [("Fairness", [html_section(reports)])]


def test_report_bad_inputs(tmp_path, capsys):
    pred = _predictions()
    with pytest.raises(KeyError, match="unknown attribute age "):
        fairness_report(pred, ["age"])
    bare = Predictions(
        dataset=pred.dataset,
        video_id=pred.video_id,
        frame=pred.frame,
        label=pred.label,
        score=pred.score,
        method=pred.method,
    )
    with pytest.raises(ValueError, match="no attribute columns"):
        fairness_report(bare)
    mixed = _predictions()
    gender = mixed.attributes["gender"].copy()  # columns are read-only: assign a new one
    gender[1] = "male" if gender[0] == "female" else "female"
    mixed.attributes["gender"] = gender
    with pytest.raises(ValueError, match="frames with different 'gender' values"):
        attribute_arrays(mixed, "gender", "video")
    single = _predictions()
    single.attributes["gender"] = np.full(len(single), "female", dtype=object)
    assert (
        fairness_report(
            single, ["gender"], ReportConfig(bootstrap=0, permutations=0, curve_bootstrap=0)
        )
        == {}
    )
    path = tmp_path / "pred.csv"
    write_predictions(path, pred)
    script = _load_script()
    assert (
        script.main(
            ["--predictions", str(path), "--attributes", "age", "--out", str(tmp_path / "o")]
        )
        == 2
    )
    assert "age" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="none.csv: predictions file not found"):
        script.main(["--predictions", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit):
        script.main(
            ["--protocol", str(REPO / "configs" / "fairness" / "demo.yaml"), "--out", str(tmp_path)]
        )
    assert "--protocol needs --data-root and --dataset" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("alpah: 0.3\n")
    with pytest.raises(ConfigError, match="alpah"):
        load_report_config(bad)
    with pytest.raises(ConfigError, match="alpha"):
        load_report_config(overrides=["alpha=2"])
    assert load_report_config(REPO / "configs" / "fairness" / "report.yaml").bootstrap == 1000


def test_write_report_without_figures(tmp_path):
    reports = fairness_report(
        _predictions(),
        ["gender"],
        ReportConfig(bootstrap=0, permutations=0, curve_bootstrap=0, xs=[0.05, 0.1]),
    )
    write_report(reports, tmp_path, figures=False)
    assert not (tmp_path / "figures").exists()
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert {r["threshold_group"] for r in curves} == {"fused", "female", "male"}
    assert len(curves) == 6


def test_gaps_table_has_holm_adjusted_p_values(tmp_path):
    cfg = ReportConfig(bootstrap=0, permutations=200, curve_bootstrap=0, xs=[0.05, 0.1])
    write_report(fairness_report(_predictions(), ["gender"], cfg), tmp_path, figures=False)
    gaps = json.loads((tmp_path / "gaps.json").read_text())
    p = np.array([r["p_value"] for r in gaps])
    adjusted = np.array([r["p_adjusted"] for r in gaps])
    order = np.argsort(p, kind="stable")
    expected = np.minimum(1, np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))))
    assert len(gaps) == 6 and np.allclose(adjusted[order], expected)
    assert list(gaps[0]).index("p_adjusted") == list(gaps[0]).index("p_value") + 1


def test_intersectional_groups_and_minimum_group_size(tmp_path, capsys):
    pred = _predictions(n_videos=80)
    rng = np.random.default_rng(1)
    race = np.repeat(rng.choice(["Asian", "White", "Black"], 80, p=[0.45, 0.5, 0.05]), 3)
    race[:3] = ""  # one video without a race label: left out of the intersection
    pred.attributes["race"] = race
    cfg = ReportConfig(bootstrap=20, permutations=20, curve_bootstrap=0, min_group_size=30)
    rep = fairness_report(pred, ["gender,race"], cfg)["gender,race"]
    gender, known = pred.attributes["gender"], race != ""
    expected = {f"{g}/{r}" for g, r in zip(gender[known], race[known], strict=True)}
    assert set(rep.groups) == expected
    assert sum(m["n"] for m in rep.groups.values()) == int(known.sum())
    small = {g for g, m in rep.groups.items() if m["n"] < 30}
    assert small and all(not rep.groups[g]["ranked"] for g in small)
    assert set(rep.ranked) == expected - small
    assert set(rep.bias_pair) <= set(rep.ranked)
    acc = rep.gaps.gaps["acc"]
    assert {acc.group_a, acc.group_b} <= set(rep.ranked)
    ranked_acc = [rep.groups[g]["acc"] for g in rep.ranked]
    assert rep.bias_factor == pytest.approx(max(ranked_acc) - min(ranked_acc))
    assert set(rep.curves["fused"].apcer) == set(rep.ranked)
    # the script: --attributes gender,race and --min-group-size
    path = tmp_path / "pred.csv"
    write_predictions(path, pred)
    args = ["--predictions", str(path), "--attributes", "gender,race", "--out", str(tmp_path)]
    fast = ["--set", "bootstrap=0", "--set", "permutations=0", "--set", "curve_bootstrap=0"]
    assert _load_script().main([*args, *fast, "--min-group-size", "30", "--no-figures"]) == 0
    text = capsys.readouterr().out
    assert "== gender,race (frame level) ==" in text and "(too small: not ranked)" in text
    with pytest.raises(KeyError, match="unknown attribute religion "):
        fairness_report(pred, ["gender,religion"], cfg)


def test_species_rule_reaches_every_table():
    pred = _predictions()
    method = pred.method.copy()  # columns are read-only: assign a new one
    method[(pred.label == 1) & (np.arange(len(pred.label)) % 2 == 0)] = "FaceSwap"
    pred.method = method
    fast = {"bootstrap": 40, "permutations": 0, "curve_bootstrap": 0}
    pooled = fairness_report(pred, ["gender"], ReportConfig(**fast))["gender"]
    worst = fairness_report(pred, ["gender"], ReportConfig(species_rule="worst", **fast))["gender"]
    for g in ("female", "male"):
        iso_w, iso_p = worst.groups[g]["iso"], pooled.groups[g]["iso"]
        assert iso_w["species_rule"] == "worst" and iso_p["species_rule"] == "pooled"
        assert iso_w["apcer"] == max(iso_w["apcer_per_species"].values()) >= iso_p["apcer"]
        ci_w, ci_p = worst.groups[g]["ci"], pooled.groups[g]["ci"]
        assert ci_w["iso_apcer"][0] <= iso_w["apcer"] <= ci_w["iso_apcer"][1]
        assert ci_w["iso_eer"][0] <= iso_w["eer"] <= ci_w["iso_eer"][1]
        assert ci_p["iso_apcer"] == ci_p["fnr"] and ci_p["iso_bpcer"] == ci_p["fpr"]
    assert np.all(worst.curves["fused"].tau <= pooled.curves["fused"].tau)
    with pytest.raises(ValueError, match="species_rule must be one of"):
        ReportConfig(species_rule="mean")


def test_alpha_precedence_flag_then_protocol_then_report(tmp_path, monkeypatch):
    from fairforensics.fairness import protocols as protocols

    seen = []
    monkeypatch.setattr(
        protocols, "run_protocol", lambda *a, report_cfg, **k: seen.append(report_cfg.alpha) or {}
    )
    proto = tmp_path / "p.yaml"
    text = (REPO / "configs" / "fairness" / "demo.yaml").read_text()
    proto.write_text(text.replace("alpha: 0.5", "alpha: 0.3"))
    base = ["--protocol", str(proto), "--data-root", "x", "--dataset", "d", "--out", str(tmp_path)]
    script = _load_script()
    assert script.main(base) == 0  # the protocol's alpha beats the report's default 0.5
    assert script.main([*base, "--alpha", "0.8"]) == 0
    assert script.main([*base, "--set", "alpha=0.1"]) == 0
    assert seen == [0.3, 0.8, 0.1]


def _one_row_per_video(y, s, g) -> Predictions:
    n = len(y)
    return Predictions(
        dataset=["d"] * n,
        video_id=[f"{i:03d}" for i in range(n)],
        frame=[0] * n,
        label=y,
        score=s,
        method=np.where(np.asarray(y) == 1, "DF", "real"),
        attributes={"gender": g},
    )


def test_undefined_values_print_as_undefined_with_the_reason():
    """Issue 23: 0/0 in FDR/ABF printed `1.000 [1.000, 1.000]`; now `undefined` and why."""
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 40)
    g = np.repeat(["female", "male"], 40)
    flagged = np.where(y == 0, 0.99, rng.uniform(0.6, 1.0, 80))  # every real face flagged
    cfg = ReportConfig(bootstrap=100, permutations=100, curve_bootstrap=20, figures=False)
    rep = fairness_report(_one_row_per_video(y, flagged, g), ["gender"], cfg)["gender"]
    text = format_summary({"gender": rep})
    assert np.isnan(rep.curve_aucs["fused"]["abf_auc"]) and np.isfinite(
        rep.curve_aucs["fused"]["fdr_auc"]
    )
    assert (
        "ABF-AUC undefined (ABF's B is 0/0 at 40 of 40 operating points: every group's BPCER is 1"
        in text
    )
    assert "1.000 [1.000, 1.000]" not in text
    # each group holds one class: no discrepancy can be measured
    split = _one_row_per_video(np.repeat([0, 1], 40), rng.random(80), g)
    rep = fairness_report(split, ["gender"], cfg)["gender"]
    text = format_summary({"gender": rep})
    assert (
        "FDR-AUC undefined (FDR's A undefined: fewer than two groups have attack presentations"
        in text
    )
    assert "AUC gap undefined" in text and "FPR gap undefined" in text
    rows = summary_rows({"gender": rep})
    assert np.isnan(rows[0]["fdr_auc"]) and "fewer than two groups" in rows[0]["notes"]
    table = to_markdown(rows)
    assert "| undefined |" in table and "nan" not in table
