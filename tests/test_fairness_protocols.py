"""Fairness protocols: YAML parsing, attribute subsets, derived attributes, gender-balanced
re-splitting (paper 000) and a protocol run on tiny real-face data producing every table."""

from __future__ import annotations

import csv
import functools
import json
import os
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from fairforensics.configs import ConfigError
from fairforensics.evaluation.predictions import Predictions, read_predictions
from fairforensics.fairness.fairswap import FairSwap, fairswap_transforms
from fairforensics.fairness.protocols import (
    load_protocol,
    prepare_index,
    run_protocol,
    train_and_predict,
)
from fairforensics.fairness.report import ReportConfig
from fairforensics.fairness.splits import (
    derive_any,
    filter_train,
    gender_balanced_split,
    save_index,
)
from fairforensics.preprocessing.index import (
    DatasetIndex,
    DatasetIndexError,
    VideoEntry,
    read_index,
    rebase_index,
    write_index,
)
from tests.testdata import CELEBRITIES

REPO = Path(__file__).resolve().parents[1]
CELEB = CELEBRITIES
SPLIT_OF = {
    "idA": "train",
    "idB": "train",
    "idD": "train",
    "idE": "train",
    "idF": "train",
    "idK": "train",
    "idC": "val",
    "idG": "val",
}  # the others: test


def _print_attack(rgb: np.ndarray) -> np.ndarray:
    """A crude print-attack look (low resolution, blur, washed-out colours) for test data."""
    small = cv2.resize(rgb, None, fx=0.3, fy=0.3, interpolation=cv2.INTER_AREA)
    up = cv2.GaussianBlur(
        cv2.resize(small, rgb.shape[1::-1], interpolation=cv2.INTER_LINEAR), (5, 5), 0
    )
    return np.clip(0.7 * up + 60, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def celeb_index(tmp_path_factory) -> Path:
    """Index of the celebrity photos in tests/data (bona fide) and a print-attack version of each."""
    root = tmp_path_factory.mktemp("celeb")
    (root / "attacks").mkdir()
    with (CELEB / "attributes.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    videos = []
    for r in rows:
        attrs = {"gender": r["gender"], "beard": r["beard"], "eyeglasses": r["eyeglasses"]}
        split = SPLIT_OF.get(r["identity"], "test")
        stem = Path(r["file"]).stem
        rel = Path(os.path.relpath(CELEB / r["file"], root)).as_posix()
        videos.append(
            VideoEntry(
                id=stem,
                label=0,
                method="real",
                split=split,
                frames=[rel],
                attributes=attrs,
                identity=r["identity"],
            )
        )
        rgb = _read_small(str((CELEB / r["file"]).resolve()))
        cv2.imwrite(
            str(root / "attacks" / f"{stem}.png"),
            cv2.cvtColor(_print_attack(rgb), cv2.COLOR_RGB2BGR),
        )
        videos.append(
            VideoEntry(
                id=stem,
                label=1,
                method="print",
                split=split,
                frames=[f"attacks/{stem}.png"],
                attributes=attrs,
                identity=r["identity"],
            )
        )
    write_index(
        DatasetIndex(dataset="celeb", task="pad", videos=videos, root=root), root / "celeb.json"
    )
    return root


def _load(index: DatasetIndex, video: VideoEntry) -> np.ndarray:
    return _read_small(str(index.resolve(video.frames[0]).resolve()))


@functools.cache
def _read_small(path: str) -> np.ndarray:
    bgr = cv2.imread(path)
    assert bgr is not None, path
    return cv2.resize(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), (64, 64), interpolation=cv2.INTER_AREA)


def _features(images: np.ndarray) -> np.ndarray:
    """Sharpness (Laplacian variance) and mean saturation of uint8 RGB images."""
    out = []
    for rgb in images:
        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        sat = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)[..., 1]
        out.append([np.log1p(cv2.Laplacian(gray, cv2.CV_64F).var()), sat.mean() / 255.0])
    return np.array(out)


class TinyTrainer:
    """A real (tiny) PAD model standing in for the trainer: logistic regression on two image
    features, trained on the index the runner wrote, with FairSWAP applied when asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, bool]] = []

    def __call__(
        self, detector, data_root, dataset, fairswap, out_dir, run_name, train_configs, overrides
    ):
        self.calls.append((detector, dataset, fairswap))
        index = read_index(Path(data_root) / f"{dataset}.json", check_files=True)
        train = index.split("train")
        images = np.stack([_load(index, v) for v in train])
        labels = np.array([v.label for v in train])
        if fairswap:
            batch = {
                "image": torch.from_numpy(images).permute(0, 3, 1, 2).float(),
                "label": torch.from_numpy(labels),
                "attributes": {"gender": [v.attributes["gender"] for v in train]},
            }
            swapped = FairSwap(patch=16, seed=0)(batch)["image"]
            images = swapped.permute(0, 2, 3, 1).numpy().astype(np.uint8)
        clf = LogisticRegression().fit(_features(images), labels)
        test = index.split("test")
        scores = clf.predict_proba(_features(np.stack([_load(index, v) for v in test])))[:, 1]
        names = sorted({k for v in test for k in v.attributes})
        return Predictions(
            dataset=[index.dataset] * len(test),
            video_id=[v.id for v in test],
            frame=[0] * len(test),
            label=[v.label for v in test],
            score=scores,
            method=[v.method for v in test],
            attributes={k: [v.attributes.get(k, "") for v in test] for k in names},
        )


def test_protocol_yaml_files_parse_and_errors_name_the_key(tmp_path):
    p1 = load_protocol(REPO / "configs" / "fairness" / "protocol_1.yaml")
    assert [s.id for s in p1.subprotocols] == ["1.1", "1.2", "1.3"]
    assert p1.subprotocols[0].train_groups is None and p1.subprotocols[1].train_groups == ["female"]
    assert p1.fairswap == [False, True] and p1.alpha == 0.5
    p2 = load_protocol(REPO / "configs" / "fairness" / "protocol_2.yaml")
    assert p2.derive[0].any_of == ["beard", "eyeglasses", "bangs"]
    p3 = load_protocol(REPO / "configs" / "fairness" / "protocol_3.yaml")
    assert len(p3.test_attributes) == 6 and len(p3.subprotocols) == 1
    assert load_protocol(
        REPO / "configs" / "fairness" / "protocol_gender_balanced.yaml"
    ).balance.enabled
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ntest_attributes: [gender]\ndetectors: [meso4]\nsubprotocols: [{id: a, trian_groups: [f]}]\n"
    )
    with pytest.raises(ConfigError, match="trian_groups"):
        load_protocol(bad)
    bad.write_text(
        "name: x\ntest_attributes: [gender]\ndetectors: [meso4]\nsubprotocols: [{id: a, train_groups: [f]}]\n"
    )
    with pytest.raises(ConfigError, match="train_attribute"):
        load_protocol(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_protocol(tmp_path / "missing.yaml")


def test_filter_and_derive(celeb_index):
    index = read_index(celeb_index / "celeb.json")
    female = filter_train(index, "gender", ["female"])
    assert {v.attributes["gender"] for v in female.split("train", "val")} == {"female"}
    assert len(female.split("test")) == len(index.split("test"))  # test set untouched
    assert len(filter_train(index, "gender", None).videos) == len(index.videos)
    with pytest.raises(DatasetIndexError, match="no train video has gender in \\['other'\\]"):
        filter_train(index, "gender", ["other"])
    occ = derive_any(index, "occlusion", ["beard", "eyeglasses", "bangs"], ("O", "w/o O"))
    counts = Counter(v.attributes["occlusion"] for v in occ.videos if v.label == 0)
    assert counts == {"O": 6, "w/o O": 32}  # idE 3 beards, idM 1 beard, idI 2 eyeglasses


def test_gender_balanced_split(celeb_index):
    index = read_index(celeb_index / "celeb.json")
    out = gender_balanced_split(index, "gender", (3, 2), 0.1, seed=0)
    for split in ("train", "val", "test"):
        for label in (0, 1):
            c = Counter(
                v.attributes["gender"] for v in out.videos if v.label == label and v.split == split
            )
            assert c["female"] == c["male"] > 0, (split, label)  # balanced at each stage
    subjects = {}
    for v in out.videos:
        assert subjects.setdefault(v.identity, v.split) == v.split  # subject-disjoint splits
    per = Counter((v.attributes["gender"], s) for v, s in ((v, v.split) for v in out.videos))
    for g in ("female", "male"):
        ids = {
            s: {v.identity for v in out.videos if v.split == s and v.attributes["gender"] == g}
            for s in ("train", "val", "test")
        }
        n = sum(len(x) for x in ids.values())
        assert len(ids["train"]) + len(ids["val"]) == round(n * 3 / 5)
        assert len(ids["val"]) >= 1 and per[(g, "test")] > 0
    assert "gender-balanced 3:2" in out.split_info["train"]
    assert gender_balanced_split(index, seed=0).videos == out.videos  # reproducible
    with pytest.raises(DatasetIndexError, match="two groups"):
        gender_balanced_split(index, "eyeglasses_missing")
    with pytest.raises(ValueError, match="train_test"):
        gender_balanced_split(index, train_test=(3, 0))


def test_rebase_keeps_files_reachable(celeb_index, tmp_path):
    index = read_index(celeb_index / "celeb.json")
    save_index(index, tmp_path / "deep" / "er" / "copy.json", dataset="copy")
    copy = read_index(tmp_path / "deep" / "er" / "copy.json", check_files=True)
    assert copy.dataset == "copy" and len(copy.videos) == len(index.videos)
    assert rebase_index(index, celeb_index).videos[0].frames == index.videos[0].frames


def test_protocol_run_on_tiny_data_produces_every_table(celeb_index, tmp_path):
    protocol = load_protocol(
        REPO / "configs" / "fairness" / "protocol_1.yaml", overrides=["xs=[0.05, 0.1, 0.2]"]
    )
    trainer = TinyTrainer()
    dets = ["lbp_mlp", "deeppixbis"]
    paths = run_protocol(
        protocol, celeb_index, "celeb", tmp_path / "p1", detectors=dets, train_fn=trainer
    )
    assert len(trainer.calls) == 2 * 2 * 3  # detectors x (B, FairSwap) x sub-protocols
    assert {c[1] for c in trainer.calls} == {"celeb_p1_1", "celeb_p1_2", "celeb_p1_3"}
    for stem in paths.values():
        for suffix in (".csv", ".md", ".json"):
            assert stem.with_suffix(suffix).is_file()
    eer_rows = json.loads(paths["eer"].with_suffix(".json").read_text())
    assert [(r["trained"], r["test"]) for r in eer_rows] == [
        ("Fused", "female"),
        ("Fused", "male"),
        ("F", "female"),
        ("F", "male"),
        ("M", "female"),
        ("M", "male"),
    ]
    for r in eer_rows:
        for d in dets:
            assert 0 <= r[f"{d} B"] <= 100 and 0 <= r[f"{d} FairSwap"] <= 100
            assert r[f"{d} Impro"] == pytest.approx(r[f"{d} FairSwap"] - r[f"{d} B"])
    fair = json.loads(paths["fdr_abf"].with_suffix(".json").read_text())
    assert [(r["metric"], r["trained"]) for r in fair] == [
        ("FDR", "Fused"),
        ("FDR", "F"),
        ("FDR", "M"),
        ("FDR", "Average"),
        ("ABF", "Fused"),
        ("ABF", "F"),
        ("ABF", "M"),
        ("ABF", "Average"),
    ]
    for r in fair:
        values = [r[c] for c in r if c not in ("metric", "trained", "notes")]
        assert all(-1e3 <= v <= 1 for v in values if v is not None)
        assert (None in values) == bool(r["notes"])  # undefined cells come with a reason
    avg = np.mean([r["lbp_mlp B"] for r in fair[:3]])
    assert fair[3]["lbp_mlp B"] == pytest.approx(avg)
    md = paths["fdr_abf"].with_suffix(".md").read_text()
    assert md.startswith("| metric | trained | lbp_mlp B | lbp_mlp FairSwap |")
    # ODTA (Figs. 6, 8, 10, 11) and the FDR/ABF curves (Figs. 7, 9), with their figures
    odta = json.loads(paths["odta"].with_suffix(".json").read_text())
    assert {(r["tau_from"], r["test"]) for r in odta} >= {("fused", "female"), ("male", "male")}
    assert {r["detector"] for r in odta} == set(dets) and "1-BPCER@APCER=20%" in odta[0]
    curves = json.loads(paths["curves"].with_suffix(".json").read_text())
    assert len(curves) == 2 * 2 * 3 * 3  # detectors x variants x subsets x xs
    settings = json.loads((tmp_path / "p1" / "protocol_1_settings.json").read_text())
    assert settings["species_rule"] == "pooled" and settings["alpha"] == 0.5
    figures = tmp_path / "p1" / "figures"
    assert (figures / "protocol_1_abf_lbp_mlp_gender.png").stat().st_size > 1000
    assert (figures / "protocol_1_odta_deeppixbis_FairSwap_gender.png").stat().st_size > 1000
    # a re-run resumes: finished runs are not trained again
    run_protocol(protocol, celeb_index, "celeb", tmp_path / "p1", detectors=dets, train_fn=trainer)
    assert len(trainer.calls) == 12


def test_protocol_2_derives_occlusion_and_3_tests_each_attribute(celeb_index, tmp_path):
    p2 = load_protocol(REPO / "configs" / "fairness" / "protocol_2.yaml")
    index = prepare_index(p2, celeb_index, "celeb")
    assert {v.attributes["occlusion"] for v in index.videos} == {"O", "w/o O"}
    p3 = load_protocol(
        REPO / "configs" / "fairness" / "protocol_3.yaml",
        overrides=["test_attributes=[beard, eyeglasses]", "fairswap=[false]", "xs=[0.1, 0.2]"],
    )
    trainer = TinyTrainer()
    paths = run_protocol(
        p3,
        celeb_index,
        "celeb",
        tmp_path / "p3",
        detectors=["lbp_mlp"],
        train_fn=trainer,
        report_cfg=ReportConfig(figures=False),
    )
    assert len(trainer.calls) == 1
    eer_rows = json.loads(paths["eer"].with_suffix(".json").read_text())
    assert [(r["attribute"], r["test"]) for r in eer_rows] == [
        ("beard", "no"),
        ("beard", "yes"),
        ("eyeglasses", "no"),
        ("eyeglasses", "yes"),
        ("Average", ""),
    ]
    assert eer_rows[-1]["lbp_mlp B"] == pytest.approx(
        np.nanmean([r["lbp_mlp B"] for r in eer_rows[:-1]])
    )
    assert "lbp_mlp Impro" not in eer_rows[0]
    fair = json.loads(paths["fdr_abf"].with_suffix(".json").read_text())
    assert [r["trained"] for r in fair] == ["Fused / beard", "Fused / eyeglasses", "Average"] * 2


def test_protocol_trains_through_the_real_trainer_with_fairswap(celeb_index, tmp_path):
    tiny = (
        "train={train: {epochs: 1, batch_size: 8, resolution: 64, frame_num: 1, test_frame_num: 1,"
        " augment: {enabled: false}}, data: {num_workers: 0}}"
    )
    protocol = load_protocol(
        REPO / "configs" / "fairness" / "protocol_1.yaml",
        overrides=[
            "subprotocols=[{id: '1.2', train_groups: [female]}]",
            "fairswap=[true]",
            "xs=[0.1, 0.2]",
            tiny,
        ],
    )
    from fairforensics.training.config import load_train_config
    from fairforensics.training.trainer import Trainer

    def train(detector, train_configs, overrides):
        cfg = load_train_config(detector, *train_configs, overrides=overrides)
        return Trainer(cfg, batch_transforms=fairswap_transforms(cfg.train)).fit()

    paths = run_protocol(
        protocol,
        celeb_index,
        "celeb",
        tmp_path,
        detectors=["meso4"],
        train_fn=functools.partial(train_and_predict, train),
    )
    config = (tmp_path / "runs" / "protocol_1_1_2_meso4_FairSwap" / "config.yaml").read_text()
    assert "enabled: true" in config and "celeb_p1_2" in config
    pred = read_predictions(tmp_path / "predictions" / "meso4" / "FairSwap" / "1.2.csv")
    assert len(pred) == len(read_index(celeb_index / "celeb.json").split("test"))
    assert set(pred.attributes["gender"]) == {"female", "male"}
    rows = json.loads(paths["eer"].with_suffix(".json").read_text())
    assert [r["test"] for r in rows] == ["female", "male"]
    assert all(0 <= r["meso4 FairSwap"] <= 100 for r in rows)


def test_protocol_tables_follow_the_species_rule(tmp_path):
    """Two attack species: under "worst" the EER, FDR/ABF and ODTA of the protocol tables equal
    the worst-species figures computed directly, and differ from "pooled"."""
    from fairforensics.fairness.abf import fairness_curves, odta_curves
    from fairforensics.fairness.iso import eer_species
    from fairforensics.fairness.protocols import write_protocol_tables

    rng = np.random.default_rng(0)
    n = 240
    y = np.tile([0, 1, 1], n // 3)
    method = np.where(y == 0, "real", np.where(np.arange(n) % 2, "print", "replay"))
    gender = np.where(np.arange(n) % 4 < 2, "female", "male")
    s = np.clip(0.25 + 0.5 * y - 0.3 * (method == "replay") + rng.normal(0, 0.12, n), 0, 1)
    pred = Predictions(
        dataset=["d"] * n,
        video_id=[f"v{i}" for i in range(n)],
        frame=[0] * n,
        label=y,
        score=s,
        method=method,
        attributes={"gender": gender},
    )
    protocol = load_protocol(
        REPO / "configs" / "fairness" / "protocol_1.yaml",
        overrides=["subprotocols=[{id: '1.1'}]", "fairswap=[false]"],
    )
    xs = np.array([0.05, 0.1, 0.2])
    results = {("lbp_mlp", False, "1.1"): pred}
    got = {}
    for rule in ("pooled", "worst"):
        paths = write_protocol_tables(
            protocol,
            results,
            ["lbp_mlp"],
            tmp_path / rule,
            xs,
            0.5,
            species_rule=rule,
            odta_xs=(0.05, 0.1),
            figures=False,
        )
        got[rule] = {k: json.loads(p.with_suffix(".json").read_text()) for k, p in paths.items()}
        female = gender == "female"
        eer = 100 * eer_species(y[female], s[female], method[female], rule)[0]
        assert got[rule]["eer"][0]["test"] == "female"
        assert got[rule]["eer"][0]["lbp_mlp B"] == pytest.approx(eer)
        c = fairness_curves(y, s, gender, xs, species=method, species_rule=rule)
        assert [r["abf"] for r in got[rule]["curves"]] == pytest.approx(c.abf.tolist())
        odta = odta_curves(y, s, gender, (0.05, 0.1), species=method, species_rule=rule)
        row = next(
            r for r in got[rule]["odta"] if r["tau_from"] == "male" and r["test"] == "female"
        )
        assert row["1-BPCER@APCER=10%"] == pytest.approx(100 * odta["male"]["female"][1])
    assert got["worst"]["eer"][0]["lbp_mlp B"] != pytest.approx(
        got["pooled"]["eer"][0]["lbp_mlp B"]
    )
    assert got["worst"]["fdr_abf"][0]["lbp_mlp B"] != got["pooled"]["fdr_abf"][0]["lbp_mlp B"]
