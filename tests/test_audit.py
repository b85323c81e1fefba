"""``fairforensics audit`` (issue 38, item 5): a shortcut planted in a tiny demo dataset (its fakes
re-encoded at another resolution) is found, the demo data itself shows none, a missing raw file
is counted, the JPEG quality estimate inverts the IJG scaling, and the out-of-fold scores are a
predictions file the evaluation reads."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from scipy import stats

from fairforensics.cli.audit import main as audit_main
from fairforensics.evaluation.audit import audit_dataset
from fairforensics.evaluation.audit.features import FeatureTable, jpeg_quality, media_features
from fairforensics.evaluation.audit.report import write_audit
from fairforensics.evaluation.audit.shortcut import run_audit
from fairforensics.evaluation.metrics import auc, video_scores
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.preprocessing.index import VideoEntry, read_index
from fairforensics.preprocessing.pipeline import run_preprocess
from fairforensics.preprocessing.video import MediaReadError, read_frames

DEMO_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "preprocess" / "demo.yaml"
# a small forest, 3 folds and few refits: seconds (p from 0.05)
FAST = {"n_estimators": 10, "n_perm": 19, "n_splits": 3}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Tiny demo data (make demo's generator: 10 real videos of 4 frames, their self-blended
    fakes), its index, and a copy of the raw files with every fake re-encoded at 128x128
    instead of 192x192 (the planted shortcut)."""
    from fairforensics.preprocessing.demo_dataset import make_demo_dataset

    root = tmp_path_factory.mktemp("audit")
    raw = make_demo_dataset(root / "raw", n_videos=10, n_frames=4, size=192)
    overrides = [
        f"dataset.root={raw}",
        f"dataset.attributes.csv={raw / 'attributes.csv'}",
        f"output.root={root / 'processed'}",
        "sampling.num_frames=4",
        "align.size=64",
    ]
    run_preprocess(
        load_preprocess_config(DEMO_CONFIG, overrides=overrides), workers=1, progress=False
    )
    planted = root / "planted"
    shutil.copytree(raw, planted)
    for path in sorted((planted / "manipulated_sequences").rglob("*.mp4")):
        frames = read_frames(path, None)
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (128, 128))
        for i in sorted(frames):
            small = cv2.resize(frames[i], (128, 128), interpolation=cv2.INTER_AREA)
            writer.write(cv2.cvtColor(small, cv2.COLOR_RGB2BGR))
        writer.release()
    return root / "processed", raw, planted


def test_planted_resolution_shortcut_is_found(demo, tmp_path: Path, caplog) -> None:
    processed, _, planted = demo
    missing = planted / "original_sequences" / "youtube" / "c23" / "videos" / "001.mp4"
    moved = tmp_path / "001.mp4"
    shutil.move(missing, moved)  # one raw file missing: logged, skipped and counted
    try:
        index = read_index(processed / "demo.json")
        summary = audit_dataset(index, tmp_path / "out", source_root=planted, **FAST)
    finally:
        shutil.move(moved, missing)
    for name in ("width", "height"):
        assert summary["features"][name]["auc"] >= 0.95, (name, summary["features"][name])
    assert summary["overall"]["auc"] >= 0.95
    assert summary["features"]["codec"]["auc"] == 0.5  # same codec: nothing to learn
    assert any("from width alone" in w for w in summary["warnings"])
    assert summary["n_skipped"] == 1 and summary["n_videos"] == 19
    (skip,) = summary["skipped"]
    assert skip["id"] == "001" and "raw file not found" in skip["reason"]
    assert "skipped real/001" in caplog.text
    written = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert written["overall"]["auc"] == pytest.approx(summary["overall"]["auc"])
    assert set(written["features"]["width"]) >= {"auc", "n_real", "n_fake", "note"}
    # 9 real and 10 fake videos of 10 persons: enough to tell; every refit on permuted labels
    # gives a lower AUC, so p is its smallest value with 19 refits
    assert written["permutation"]["p_value"] == pytest.approx(1 / 20)
    assert written["verdict"].startswith("The label is predictable from the features read")
    md = (tmp_path / "out" / "audit.md").read_text()
    assert "**!**" in md and "| videos (real / fake) | 9 / 10 |" in md
    assert md.index("**Verdict.** The label is predictable") < md.index("| feature |")
    assert "interval" not in md.split("| feature |")[1]  # no interval is claimed
    assert (tmp_path / "out" / "audit.png").stat().st_size > 0
    # the out-of-fold scores, read back as any detector's: its video-level AUC is the audit's
    pred = read_predictions(tmp_path / "out" / "predictions" / "demo.csv")
    assert set(pred.attributes) == {"lighting", "photo"} and len(pred) == 19 * 4
    y, s, _ = video_scores(pred.label, pred.score, pred.video_key)
    assert auc(y, s) == pytest.approx(summary["overall"]["auc"])


def test_demo_data_shows_no_planted_shortcut(demo, tmp_path: Path, capsys) -> None:
    """The same videos as they were made: every fake at the reals' resolution, codec, frame rate
    and length, so none of those features tells them apart. (The demo's self-blended fakes do
    cost the encoder more bits: at full demo size the audit finds bit rate and file size, AUC
    0.93, docs/evaluation.md; these 20 tiny videos are too few to show it.)"""
    processed, raw, _ = demo
    argv = ["--data", "demo", "--data-root", str(processed), "--source-root", str(raw)]
    argv += ["--out", str(tmp_path), "--trees", "10", "--n-perm", "9", "--folds", "3"]
    argv += ["--no-progress"]
    assert audit_main(argv) == 0
    summary = json.loads((tmp_path / "audit.json").read_text())
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"demo: {summary['verdict']}" and summary["not_read"] == ""
    assert 0.1 <= summary["permutation"]["p_value"] <= 1  # 9 refits: p from 0.1
    for name in ("container", "codec", "width", "height", "frame_rate", "duration"):
        assert summary["features"][name]["auc"] == 0.5, name
    assert not [w for w in summary["warnings"] if "width" in w or "height" in w]
    assert summary["overall"]["auc"] < 0.9, summary["overall"]
    assert summary["n_skipped"] == 0 and summary["unavailable"] == {
        "jpeg_quality": "not recorded for any video"
    }


@pytest.mark.parametrize("quality", [5, 10, 35, 50, 75, 90, 100])
def test_jpeg_quality_inverts_the_ijg_scaling(quality: int) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (120, 80, 40)).save(buffer, "JPEG", quality=quality)
    with Image.open(buffer) as image:
        estimate = jpeg_quality(list(image.quantization[0]))
    assert estimate == quality


def null_by_person(rng: np.random.Generator, n_persons: int = 16) -> FeatureTable:
    """A null of one group per person: half the persons have 1 real and 3 fake videos, half 3
    real and 1 fake; the one feature is the person's camera (which tells the person's share of
    fakes, so its out-of-fold AUC is about 0.67) plus noise, and says nothing about which of a
    person's videos are fake."""
    videos, values = [], []
    for person in range(n_persons):
        kind = person % 2
        camera = rng.normal() + 3 * kind
        for k, label in enumerate([0, 0, 0, 1] if kind == 0 else [0, 1, 1, 1]):
            method = "fake" if label else "real"
            videos.append(
                VideoEntry(f"{person}-{k}", label, method, "test", ["x.png"], identity=f"p{person}")
            )
            values.append(camera + 0.3 * rng.normal())
    return FeatureTable(videos, {"bit_rate": np.array(values)})


def test_permutation_p_keeps_its_level_under_the_null() -> None:
    """Level. Null in words: the file metadata carries no information about which of a
    person's videos are fake (labels exchangeable within each identity). With 4 refits the p is
    (1 + c) / 5, c the refits with an AUC as large; under the null P(p <= 0.25) = P(c = 0) = 0.2
    (at most, with ties). Checked on 80 seeded null data sets of 16 persons: 0.2 lies in the
    binomial 99 % interval of the share with p <= 0.25. Permuting among all videos instead of
    within persons gives about 0.9 (the person-level camera counts as evidence); p without the
    1 + (c / 4) gives 0.4."""
    rng = np.random.default_rng(0)
    n_sets, small = 80, 0
    for rep in range(n_sets):
        table = null_by_person(rng)
        summary = run_audit(table, n_splits=3, n_estimators=3, n_perm=4, seed=rep).summary
        assert summary["permutation"]["within"] == "identity"
        small += summary["permutation"]["p_value"] <= 0.25
    low, high = stats.binomtest(small, n_sets).proportion_ci(0.99)
    assert low <= 0.2 <= high, small / n_sets


def test_argument_errors_are_one_line(tmp_path: Path, capsys) -> None:
    from fairforensics.cli import main

    for argv, message in (
        (["audit", "--data", "demo", "--out", str(tmp_path), "--folds", "0"], "at least 1"),
        (["audit", "--out", str(tmp_path)], "--data"),
        (["audit", "--data", "demo", "--out", str(tmp_path), "--n-perm", "-1"], "at least 0"),
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["audit", "--data", "nothing", "--data-root", str(tmp_path), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("error: ") and "not found" in err


def test_image_features_read_the_jpeg_quality(tmp_path: Path) -> None:
    Image.new("RGB", (40, 30), (200, 10, 10)).save(tmp_path / "a.jpg", "JPEG", quality=60)
    Image.new("RGB", (40, 30)).save(tmp_path / "b.png")
    (tmp_path / "c.jpg").write_bytes(b"not a jpeg")
    jpeg = media_features(tmp_path / "a.jpg")
    assert jpeg["container"] == "JPEG" and jpeg["jpeg_quality"] == 60.0
    assert (jpeg["width"], jpeg["height"]) == (40.0, 30.0) and jpeg["file_size"] > 0
    assert "jpeg_quality" not in media_features(tmp_path / "b.png")
    with pytest.raises(MediaReadError, match="unreadable image"):
        media_features(tmp_path / "c.jpg")


def test_without_source_root_only_the_crops_are_audited(demo, tmp_path: Path, capsys) -> None:
    processed, _, _ = demo
    index_file = processed / "demo.json"
    recorded = index_file.read_text()
    data = json.loads(recorded)
    data.pop("source_root", None)  # an index made before the source root was recorded
    index_file.write_text(json.dumps(data))
    try:
        _audit_without_source_root(processed, tmp_path, capsys)
    finally:
        index_file.write_text(recorded)


def _audit_without_source_root(processed: Path, tmp_path: Path, capsys) -> None:
    index = read_index(processed / "demo.json")
    summary = audit_dataset(index, tmp_path, source_root=None, **FAST)
    assert list(summary["features"]) == ["sharpness"]
    assert (
        summary["unavailable"]["width"] == "no --source-root given and none recorded in the index"
    )
    assert summary["source_root"] is None and summary["n_videos"] == 20
    # it says so first, before the verdict, which names what it looked at and no more
    md = (tmp_path / "audit.md").read_text().splitlines()
    assert md[2].startswith("**The file metadata was not read (no --source-root given and none")
    assert "only sharpness was audited" in md[2] and md[4].startswith("**Verdict.**")
    assert "(sharpness)" in summary["verdict"] or summary["verdict"].startswith("Cannot tell")
    assert "width" not in summary["verdict"] and "metadata" not in summary["verdict"]
    argv = ["--data", "demo", "--data-root", str(processed), "--out", str(tmp_path / "cli")]
    assert (
        audit_main([*argv, "--trees", "5", "--folds", "3", "--n-perm", "0", "--no-progress"]) == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("demo: The file metadata was not read")
    assert out[1].startswith("demo: No permutation test (n_perm 0)")


def test_the_index_recorded_source_root_is_used(demo, tmp_path: Path, capsys) -> None:
    """Without --source-root the audit reads the files under the source root the index records
    (``DatasetIndex.source_root``); a recorded root that is gone is said first, not guessed."""
    processed, _, planted = demo
    index = read_index(processed / "demo.json")
    index.source_root = str(planted)
    summary = audit_dataset(index, tmp_path / "a", **FAST)
    assert summary["source_root_from"] == "the index" and summary["not_read"] == ""
    assert summary["features"]["width"]["auc"] >= 0.95
    index.source_root = str(tmp_path / "gone")
    summary = audit_dataset(index, tmp_path / "b", **FAST)
    assert list(summary["features"]) == ["sharpness"]
    assert "gone (from the index) is not a folder" in summary["not_read"]


def test_permutation_refits_on_labels_permuted_within_identities(monkeypatch) -> None:
    """Each of the n_perm refits fits the whole cross-fitting to labels that differ from the
    data's and keep each person's count of each class."""
    from fairforensics.evaluation.audit import shortcut

    rng = np.random.default_rng(1)
    table = null_by_person(rng)
    order = rng.permutation(len(table.videos))  # a person's videos not next to each other
    table = FeatureTable(
        [table.videos[i] for i in order], {"bit_rate": table.columns["bit_rate"][order]}
    )
    y = np.array([v.label for v in table.videos])
    person = np.array([v.identity for v in table.videos])
    seen: list[np.ndarray] = []
    real_fit = shortcut.out_of_fold_scores

    settings: list[dict] = []

    def spy(x, labels, groups, **kwargs):
        seen.append(np.asarray(labels).copy())
        settings.append(kwargs)
        return real_fit(x, labels, groups, **kwargs)

    monkeypatch.setattr(shortcut, "out_of_fold_scores", spy)
    run_audit(table, n_splits=3, n_estimators=3, n_perm=6, seed=2)
    assert len(seen) == 1 + 6 and (seen[0] == y).all()
    # every refit is the audit's own cross-fitting: same folds, forests and seed
    assert all(s == {"n_splits": 3, "n_estimators": 3, "seed": 2} for s in settings)
    assert sum(not (labels == y).all() for labels in seen[1:]) >= 5
    for labels in seen[1:]:
        for p in set(person):
            assert labels[person == p].sum() == y[person == p].sum()
    monkeypatch.setattr(shortcut, "out_of_fold_scores", real_fit)
    x = table.columns["bit_rate"][:, None]
    fit = {"n_splits": 3, "n_estimators": 3, "observed": 0.6, "n_perm": 19, "seed": 5}
    p_values = {shortcut.permutation_p(x, y, person, person, **fit) for _ in range(3)}
    assert len(p_values) == 1  # seeded


def small_audit(tmp_path: Path, n: int = 7) -> dict:
    """An audit of ``n`` videos (one group each) whose width and bit rate tell the label."""
    videos = [
        VideoEntry(f"{i:03d}", i % 2, "fake" if i % 2 else "real", "test", ["x.png"])
        for i in range(n)
    ]
    labels = np.arange(n) % 2
    columns = {"width": 128.0 + 64 * labels, "bit_rate": labels + np.linspace(0, 0.5, n)}
    result = run_audit(FeatureTable(videos, columns), n_splits=5, n_estimators=5, n_perm=9)
    return write_audit(result, tmp_path, dataset="tiny", source_root="raw")


def test_small_audit_says_it_cannot_tell(tmp_path: Path, caplog) -> None:
    """7 videos (4 real, 3 fake): no p-value and a one-line verdict that says why; every AUC
    cell is marked as resting on fewer than 5 videos and none is warned of; the sentence under
    the table counts the table's own cells above 0.7; each kind of scikit-learn warning is
    logged and listed once; the figure draws no interval and says none."""
    summary = small_audit(tmp_path)
    assert summary["permutation"]["p_value"] is None
    assert summary["verdict"].startswith(
        "Cannot tell: fewer than 5 real videos (4); fewer than 5 fake videos (3)"
    )
    assert "fewer than 10 videos (7)" in summary["verdict"] and not summary["warnings"]
    md = (tmp_path / "audit.md").read_text()
    assert md.splitlines()[2] == f"**Verdict.** {summary['verdict']}"
    assert "| videos (real / fake) | 4 / 3 |" in md
    cells = [float(c) for c in re.findall(r"\| (\d\.\d\d) †", md)]
    assert len(cells) == 9  # all features, width, bit_rate x all, method, split: all marked
    above = sum(c > 0.7 for c in cells)
    if above:
        assert f"{above} of the table's 9 AUCs are above 0.7: 0 warned of (**!**), {above} on" in md
    else:
        assert "No AUC in the table is above 0.7." in md
    kinds = summary["fit_warnings"]
    assert kinds and len(kinds) == len({k.rsplit(" (", 1)[0] for k in kinds})
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit: ")]
    assert len(logged) == len(set(logged)) == len(kinds)
    from fairforensics.evaluation.audit.report import figure

    ax = figure(summary).axes[0]
    assert "interval" not in ax.get_xlabel() and not ax.lines[2:] and not ax.collections
    assert "cannot tell" in ax.get_title()


def test_table_sentence_counts_cells_above_the_warning(tmp_path: Path) -> None:
    """Enough videos: the sentence names how many of the table's AUCs exceed 0.7, as many as
    the cells marked **!**."""
    summary = small_audit(tmp_path, n=24)
    md = (tmp_path / "audit.md").read_text()
    marked = md.count("**!** |") + md.count("**!**\n")
    cells = [float(c) for c in re.findall(r"\| (\d\.\d\d)(?: \*\*!\*\*)? ", md)]
    above = sum(c > 0.7 for c in cells)
    assert above == marked == len(summary["warnings"]) > 0
    assert f"{above} of the table's {len(cells)} AUCs are above 0.7: {above} warned of" in md
