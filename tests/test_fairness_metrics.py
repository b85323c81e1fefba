"""Fairness metrics on hand-built score sets with known answers (paper 001 eqs. 1-6, paper 000,
Lin et al. CVPR 2024, ISO/IEC 30107-3)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

from fairforensics.evaluation.metrics import SingleClassError, eer
from fairforensics.fairness import abf
from fairforensics.fairness.iso import (
    apcer,
    apcer_per_species,
    bpcer,
    iso_metrics,
    threshold_at_apcer,
    threshold_at_apcer_species,
)
from fairforensics.fairness.metrics import (
    DEFAULT_XS,
    abf_curve,
    bias_factor,
    bias_factor_pair,
    curve_auc,
    fairness_curves,
    fdr_curve,
    group_metrics,
    lin_metrics,
    odta_curves,
)

# Two groups with a known discrepancy (worked by hand in the comments of the tests below).
A_ATK, A_BON = [0.1, 0.6, 0.7, 0.8, 0.9], [0.0, 0.2, 0.3, 0.65]
B_ATK, B_BON = [0.5, 0.55, 0.75, 0.85, 0.95], [0.05, 0.15, 0.52, 0.58]


def _two_groups():
    y = np.array([1] * 5 + [0] * 4 + [1] * 5 + [0] * 4)
    s = np.array(A_ATK + A_BON + B_ATK + B_BON)
    g = np.array(["a"] * 9 + ["b"] * 9, dtype=object)
    return y, s, g


def test_identical_groups_give_fdr_and_abf_one_at_every_tau():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    s = np.clip(0.4 * y + rng.normal(0.3, 0.2, 200), 0, 1)
    yy, ss = np.concatenate([y, y]), np.concatenate([s, s])
    g = np.array(["f"] * 200 + ["m"] * 200)
    np.testing.assert_allclose(fdr_curve(yy, ss, g, DEFAULT_XS), 1.0)
    np.testing.assert_allclose(abf_curve(yy, ss, g, DEFAULT_XS), 1.0)
    assert curve_auc(DEFAULT_XS, abf_curve(yy, ss, g, DEFAULT_XS)) == pytest.approx(1.0)


def test_known_discrepancy_hand_computed():
    y, s, g = _two_groups()
    c = fairness_curves(y, s, g, xs=[0.1, 0.2, 0.3], alpha=0.5)
    # pooled attacks sorted: .1 .5 .55 .6 .7 .75 .8 .85 .9 .95 -> tau = .5, .55, .6
    np.testing.assert_allclose(c.tau, [0.5, 0.55, 0.6])
    # tau=.5: APCER a=1/5, b=0; BPCER a=1/4 (.65), b=2/4 (.52,.58)
    # tau=.55: APCER .2/.2, BPCER .25/.25; tau=.6: APCER .2/.4, BPCER .25/0
    np.testing.assert_allclose(c.apcer["a"], [0.2, 0.2, 0.2])
    np.testing.assert_allclose(c.apcer["b"], [0.0, 0.2, 0.4])
    np.testing.assert_allclose(c.bpcer["a"], [0.25, 0.25, 0.25])
    np.testing.assert_allclose(c.bpcer["b"], [0.5, 0.25, 0.0])
    np.testing.assert_allclose(c.a_fdr, [0.2, 0.0, 0.2])
    np.testing.assert_allclose(c.b_fdr, [0.25, 0.0, 0.25])
    np.testing.assert_allclose(c.fdr, [0.775, 1.0, 0.775])
    # ABF: A = .2/(1-.2), B = .25/(1-.5) -> 1 - (.125 + .25); then 1; then A=.2/.6, B=.25/.75
    np.testing.assert_allclose(c.a_abf, [0.25, 0.0, 1 / 3])
    np.testing.assert_allclose(c.b_abf, [0.5, 0.0, 1 / 3])
    np.testing.assert_allclose(c.abf, [0.625, 1.0, 2 / 3])
    np.testing.assert_allclose(fdr_curve(y, s, g, [0.1, 0.2, 0.3]), c.fdr)
    np.testing.assert_allclose(abf_curve(y, s, g, [0.1, 0.2, 0.3]), c.abf)
    # trapezoid: 0.1 * (0.8875 + 0.8875) / 0.2
    assert curve_auc([0.1, 0.2, 0.3], c.fdr) == pytest.approx(0.8875)


def test_alpha_weights_the_apcer_term():
    y, s, g = _two_groups()
    np.testing.assert_allclose(fdr_curve(y, s, g, [0.1], alpha=1.0), [0.8])
    np.testing.assert_allclose(fdr_curve(y, s, g, [0.1], alpha=0.0), [0.75])
    np.testing.assert_allclose(abf_curve(y, s, g, [0.1], alpha=0.0), [0.5])


def test_threshold_from_a_named_group_differs_from_pooled():
    y, s, g = _two_groups()
    # group a's attacks .1 .6 .7 .8 .9: APCER_0.2 -> tau = .6 (pooled gives .55)
    ca = fairness_curves(y, s, g, [0.2], threshold_group="a")
    cb = fairness_curves(y, s, g, [0.2], threshold_group="b")
    pooled = fairness_curves(y, s, g, [0.2])
    assert ca.tau[0] == 0.6 and cb.tau[0] == 0.55 and pooled.tau[0] == 0.55
    np.testing.assert_allclose(ca.fdr, [0.775])
    np.testing.assert_allclose(pooled.fdr, [1.0])
    assert ca.threshold_group == "a" and pooled.threshold_group == "fused"
    odta = odta_curves(y, s, g, [0.2])
    assert set(odta) == {"fused", "a", "b"}
    np.testing.assert_allclose(odta["a"]["a"], [0.75])
    np.testing.assert_allclose(odta["a"]["b"], [1.0])
    np.testing.assert_allclose(odta["fused"]["b"], [0.75])


def test_edge_cases_documented():
    y, s, g = _two_groups()
    g3 = np.concatenate([g, ["c", "c"]])
    y3 = np.concatenate([y, [0, 0]])  # group c: bona fide only -> no APCER, takes part in B only
    s3 = np.concatenate([s, [0.99, 0.99]])
    c = fairness_curves(y3, s3, g3, [0.1])
    assert np.isnan(c.apcer["c"][0]) and c.bpcer["c"][0] == 1.0
    assert c.a_fdr[0] == pytest.approx(0.2)  # a vs b only
    assert c.b_fdr[0] == pytest.approx(0.75)  # c (1.0) vs a (0.25)
    # worst BPCER is 1: denominator floored at min_denominator
    assert c.b_abf[0] == pytest.approx(0.75 / 1e-3)
    assert fairness_curves(y3, s3, g3, [0.1], min_denominator=0.5).b_abf[0] == pytest.approx(1.5)
    # rows without a group value are left out
    g_missing = g.copy()
    g_missing[0] = ""
    assert fairness_curves(y, s, g_missing, [0.1]).apcer["a"][0] == 0.0
    with pytest.raises(SingleClassError, match="threshold group 'c' has no attack"):
        fairness_curves(y3, s3, g3, [0.1], threshold_group="c")
    with pytest.raises(ValueError, match="not a group"):
        fairness_curves(y, s, g, [0.1], threshold_group="zzz")
    with pytest.raises(ValueError, match="at least two groups"):
        fdr_curve(y, s, np.array(["a"] * len(y)), [0.1])
    with pytest.raises(ValueError, match="alpha"):
        fdr_curve(y, s, g, [0.1], alpha=1.5)
    with pytest.raises(ValueError, match="one entry per sample"):
        fdr_curve(y, s, g[:-1], [0.1])
    with pytest.raises(ValueError, match="APCER operating point"):
        fdr_curve(y, s, g, [1.0])


def test_curve_auc_normalised_and_bad_input():
    xs = np.array([0.005, 0.05, 0.2])
    assert curve_auc(xs, [0.7, 0.7, 0.7]) == pytest.approx(0.7)
    assert curve_auc([0, 1], [0, 1]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="increasing"):
        curve_auc([0.2, 0.1], [1, 1])
    with pytest.raises(ValueError, match="at least two"):
        curve_auc([0.1], [1])
    with pytest.raises(ValueError, match="NaN"):
        curve_auc([0.1, 0.2], [1, np.nan])
    assert DEFAULT_XS[0] == 0.005 and DEFAULT_XS[-1] == 0.2 and len(DEFAULT_XS) == 40


def test_threshold_at_apcer_and_iso_metrics():
    atk = [0.9, 0.1, 0.5, 0.7]
    assert threshold_at_apcer(atk, 0.0) == 0.1
    assert threshold_at_apcer(atk, 0.25) == 0.5  # one of four below
    assert threshold_at_apcer(atk, 0.49) == 0.5
    assert apcer(atk, threshold_at_apcer(atk, 0.5)) == 0.5
    assert threshold_at_apcer(list(np.linspace(0, 1, 100)), 0.29) == pytest.approx(29 / 99)
    assert apcer([0.2, 0.6], 0.6) == 0.5 and bpcer([0.2, 0.6], 0.6) == 0.5
    y = np.array([1, 1, 1, 1, 0, 0, 0])
    s = np.array([0.2, 0.8, 0.6, 0.7, 0.1, 0.3, 0.65])
    species = np.array(["print", "print", "replay", "replay", "", "", ""], dtype=object)
    per = apcer_per_species(y, s, 0.5, species)
    assert per == {"print": 0.5, "replay": 0.0}
    m = iso_metrics(y, s, 0.5, species, species_rule="worst")
    assert m["apcer"] == 0.5  # the maximum over species
    assert m["species_rule"] == "worst"
    # worst species: APCER_max - BPCER goes -1/6 -> +1/6 between t = .3 and .6 -> EER .5 at .45
    assert (m["eer"], m["eer_threshold"]) == pytest.approx((0.5, 0.45))
    pooled = iso_metrics(y, s, 0.5, species)
    assert pooled["species_rule"] == "pooled" and pooled["apcer"] == 0.25
    assert pooled["apcer_per_species"] == per
    assert pooled["eer"] == pytest.approx(eer(y, s)[0])
    assert m["bpcer"] == pytest.approx(1 / 3)
    assert m["acer"] == pytest.approx((0.5 + 1 / 3) / 2)
    # APCER_max <= 0: print needs tau <= .2, replay tau <= .6 -> .2; BPCER(.2) = 2/3
    assert threshold_at_apcer_species(y, s, 0.0, species) == 0.2
    assert m["bpcer_at_apcer"]["0.5%"] == pytest.approx(2 / 3)
    assert m["bpcer_at_apcer"]["20%"] == pytest.approx(2 / 3)
    assert 0 <= m["eer"] <= 1
    with pytest.raises(SingleClassError):
        iso_metrics([1, 1], [0.2, 0.3])
    with pytest.raises(SingleClassError):
        threshold_at_apcer([], 0.1)
    with pytest.raises(ValueError, match="0 \\(real/bona fide\\) and 1 \\(fake/attack\\)"):
        iso_metrics([0, 2], [0.1, 0.2])


# Hand table for the bias factor and Lin et al.: g1 preds at 0.5 = [0,1,1,0], g2 = [0,0,1,1,1,1]
LIN_Y = [0, 0, 1, 1, 0, 0, 0, 1, 1, 1]
LIN_S = [0.2, 0.7, 0.8, 0.4, 0.1, 0.2, 0.9, 0.6, 0.7, 0.8]
LIN_G = ["g1"] * 4 + ["g2"] * 6


def test_bias_factor_hand_computed():
    pred = (np.array(LIN_S) >= 0.5).astype(int)
    # ACC g1 = 2/4, ACC g2 = 5/6
    assert bias_factor(LIN_Y, pred, LIN_G) == pytest.approx(1 / 3)
    assert bias_factor_pair(LIN_Y, pred, LIN_G) == (pytest.approx(1 / 3), "g1", "g2")
    y3 = LIN_Y + [1, 0]
    p3 = list(pred) + [1, 0]
    g3 = LIN_G + ["g3", "g3"]  # ACC 1.0: largest pair is g1 vs g3
    assert bias_factor_pair(y3, p3, g3) == (pytest.approx(0.5), "g1", "g3")
    with pytest.raises(ValueError, match="hard decisions"):
        bias_factor(LIN_Y, LIN_S, LIN_G)
    with pytest.raises(ValueError, match="two groups"):
        bias_factor(LIN_Y, pred, ["g1"] * 10)


def test_lin_metrics_hand_computed():
    m = lin_metrics(LIN_Y, LIN_S, LIN_G)
    # FPR g1 = 1/2, g2 = 1/3, overall 2/5; TPR g1 = 1/2, g2 = 1
    assert m["F_FPR"] == pytest.approx(abs(0.5 - 0.4) + abs(1 / 3 - 0.4))
    assert m["F_OAE"] == pytest.approx(5 / 6 - 1 / 2)
    assert m["F_DP"] == pytest.approx(4 / 6 - 2 / 4)
    assert m["F_MEO"] == pytest.approx(0.5)
    assert m["gap_fpr"] == pytest.approx(1 / 6)
    assert m["gap_auc"] == pytest.approx(3 / 4 - 2 / 3)
    # error rate 1 - (TPR + TNR)/2: g1 = .5, g2 = 1 - (1 + 2/3)/2
    assert m["gap_error_rate"] == pytest.approx(0.5 - 1 / 6)


def test_group_metrics_match_sklearn():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, 300), 0, 1)
    g = rng.choice(["f", "m", ""], 300)
    out = group_metrics(y, s, g, threshold=0.5)
    assert set(out) == {"f", "m"}
    for name, m in out.items():
        rows = g == name
        p = (s[rows] >= 0.5).astype(int)
        assert m["auc"] == pytest.approx(roc_auc_score(y[rows], s[rows]))
        assert m["precision"] == pytest.approx(precision_score(y[rows], p))
        assert m["recall"] == pytest.approx(recall_score(y[rows], p))
        assert m["f1"] == pytest.approx(f1_score(y[rows], p))
        assert m["tn"] + m["fp"] + m["fn"] + m["tp"] == rows.sum() == m["n"]
        assert m["fnr"] == pytest.approx(1 - m["recall"])


def test_group_with_one_class_logs_and_gives_nan(caplog):
    with caplog.at_level(logging.WARNING):
        out = group_metrics([0, 0, 0, 1], [0.1, 0.2, 0.3, 0.9], ["a", "a", "b", "b"])
    assert np.isnan(out["a"]["auc"]) and np.isnan(out["a"]["eer"])
    assert out["b"]["auc"] == 1.0
    assert "holds only class 0" in caplog.text


def test_abf_module_is_importable_as_fairness_abf():
    assert abf.fdr_curve is fdr_curve and abf.curve_auc is curve_auc


@pytest.mark.parametrize("rule", ["pooled", "worst"])
def test_one_species_rule_for_iso_tables_fdr_abf_and_odta(rule):
    """Two attack species of different difficulty: the ISO table's threshold at APCER = x, the
    FDR/ABF tau and the ODTA tau agree (fused and per group) under either rule."""
    rng = np.random.default_rng(11)
    n = 400
    y = rng.integers(0, 2, n)
    species = np.where(y == 1, rng.choice(["print", "replay"], n), "bona fide")
    s = np.clip(np.where(species == "print", 0.75, np.where(y == 1, 0.55, 0.3)), 0, 1)
    s = np.clip(s + rng.normal(0, 0.12, n), 0, 1)
    g = rng.choice(["female", "male"], n)
    xs = np.array([0.01, 0.05, 0.2])
    curves = abf.fairness_curves(y, s, g, xs, species=species, species_rule=rule)
    table = iso_metrics(y, s, 0.5, species, xs, species_rule=rule)
    taus = [table["threshold_at_apcer"][f"{100 * x:g}%"] for x in xs]
    assert curves.tau.tolist() == taus
    female = g == "female"
    by_female = abf.fairness_curves(
        y, s, g, xs, threshold_group="female", species=species, species_rule=rule
    )
    table_f = iso_metrics(y[female], s[female], 0.5, species[female], xs, species_rule=rule)
    assert by_female.tau.tolist() == [table_f["threshold_at_apcer"][f"{100 * x:g}%"] for x in xs]
    # the per-group APCER of FDR's A term is the ISO APCER of that group at the same tau
    for k, t in enumerate(curves.tau):
        iso_f = iso_metrics(y[female], s[female], t, species[female], xs, species_rule=rule)
        assert curves.apcer["female"][k] == pytest.approx(iso_f["apcer"])
        assert curves.bpcer["female"][k] == pytest.approx(iso_f["bpcer"])
    odta = abf.odta_curves(y, s, g, xs, ["fused"], species=species, species_rule=rule)
    assert odta["fused"]["male"] == pytest.approx(1.0 - curves.bpcer["male"])
    pooled_tau = abf.fairness_curves(y, s, g, xs, species=species).tau
    if rule == "worst":  # the harder species (replay) sets a lower threshold
        assert np.all(curves.tau <= pooled_tau) and np.any(curves.tau < pooled_tau)
    with pytest.raises(ValueError, match="species rule must be one of"):
        abf.fairness_curves(y, s, g, xs, species=species, species_rule="mean")


def test_threshold_group_accepts_integer_group_labels():
    y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    s = np.array([0.9, 0.4, 0.2, 0.6, 0.8, 0.7, 0.1, 0.3])
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    by_int = abf.fairness_curves(y, s, g, [0.1, 0.2], threshold_group=0)
    by_str = abf.fairness_curves(y, s, g, [0.1, 0.2], threshold_group="0")
    assert by_int.tau.tolist() == by_str.tau.tolist() == [0.4, 0.4]
    assert by_int.threshold_group == "0"
    assert abf.odta_curves(y, s, g, [0.1], [1]).keys() == {"1"}
    with pytest.raises(ValueError, match="is not a group"):
        abf.fairness_curves(y, s, g, [0.1], threshold_group=2)


def test_binary_rates_refuses_scores_and_other_labels():
    """Issue 23: scores passed as labels were accepted and label 2 silently dropped."""
    from fairforensics.fairness.metrics import binary_rates

    r = binary_rates([0, 0, 1, 1, 1], [0, 1, 1, 0, 1])
    assert (r["tn"], r["fp"], r["fn"], r["tp"]) == (1, 1, 1, 2) and r["acc"] == pytest.approx(0.6)
    assert binary_rates(np.array([0, 1]), np.array([False, True]))["acc"] == 1.0
    with pytest.raises(ValueError, match=r"y_true must hold 0 and 1 only .* got \[2\]"):
        binary_rates([0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match="y_pred .* scores\\? threshold them first"):
        binary_rates([0, 1, 1], [0.2, 0.7, 0.9])
    with pytest.raises(ValueError, match="y_true must hold 0 and 1"):
        binary_rates([0.1, 0.9], [0, 1])
    with pytest.raises(ValueError, match="equal length"):
        binary_rates([0, 1], [0])


def test_fdr_and_abf_undefined_instead_of_perfect():
    """0/0 (every bona fide flagged) and a term with fewer than two groups are NaN with the
    reason, not a perfect 1 (issue 23)."""
    y = np.tile([0, 1], 20)
    g = np.repeat(["a", "b"], 20)
    s = np.where(y == 0, 0.99, np.linspace(0.6, 1.0, 40))  # every bona fide presentation flagged
    c = fairness_curves(y, s, g, DEFAULT_XS)
    assert np.all(c.b_fdr == 0) and np.isfinite(c.fdr).all()  # equal BPCER 1: no gap, defined
    assert np.isnan(c.b_abf).all() and np.isnan(c.abf).all()
    assert "every group's BPCER is 1" in c.undefined["abf"]
    areas, notes = abf.curve_areas(c)
    assert (
        np.isfinite(areas["fdr_auc"]) and np.isnan(areas["abf_auc"]) and "0/0" in notes["abf_auc"]
    )
    # alpha = 1 weighs only A: ABF is defined again
    assert np.isfinite(abf_curve(y, s, g, DEFAULT_XS, alpha=1.0)).all()
    one_class = fairness_curves(np.repeat([0, 1], 20), s, g, DEFAULT_XS)
    assert np.isnan(one_class.fdr).all() and "fewer than two groups" in one_class.undefined["fdr"]
