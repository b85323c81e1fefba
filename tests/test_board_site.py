"""The board's static site (issue 49, items 3 and 5) from tiny stand-in bundles: pages, tables
that sort, links that resolve, JSON that matches the HTML, byte-identical rebuilds, the cache
that spares a rebuild every predictions file, and the pages in headless Chromium (skipped,
saying what is missing, where it is not installed)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from fairforensics.benchmarks.site import build_site
from fairforensics.benchmarks.site.build import build
from fairforensics.benchmarks.site.summary import SiteSettings
from fairforensics.benchmarks.submissions.admitted import AdmittedBundle
from fairforensics.evaluation.predictions import Predictions, write_predictions

SETS = ["demo-a", "demo-b"]
FAST = SiteSettings(n_boot=50, fairness_boot=20)


def _eval_dir(folder: Path, detector: str, skill: float, seed: int, **info: object) -> Path:
    """An evaluation folder: eval.json and one predictions file per test set (12 videos of
    3 frames, two gender groups)."""
    rng = np.random.default_rng(seed)
    for k, name in enumerate(SETS):
        video = np.repeat(np.arange(12), 3)
        label = video % 2
        score = np.clip(0.5 + skill * (label - 0.5) + rng.normal(0, 0.25, len(label)), 0, 1)
        pred = Predictions(
            [name] * len(label), [f"v{v:02d}" for v in video], np.tile(np.arange(3), 12), label,
            score, np.where(label == 1, "Deepfakes", "real"),
            attributes={"gender": np.where(video < 6 + k, "female", "male")},
        )  # fmt: skip
        write_predictions(folder / "predictions" / f"{name}.csv", pred)
    meta = {"detector": detector, "train_data": "FF-c23", "test_data": SETS, "threshold": 0.5}
    (folder / "eval.json").write_text(json.dumps({**meta, **info}), encoding="utf-8")
    return folder


def _bundle(
    root: Path, detector: str, skill: float, seeds: int = 1, **kw: object
) -> AdmittedBundle:
    path = root / detector.replace(" ", "_")
    dirs = tuple(_eval_dir(path / f"seed{s}", detector, skill, 7 * s + len(detector))
                 for s in range(seeds))  # fmt: skip
    sha = hashlib.sha256(f"{detector} {skill} {seeds}".encode()).hexdigest()
    fields = {"added": "2026-01-01T00:00:00Z", "code_version": "fairforensics 0.1 (abc1234)"}
    return AdmittedBundle(sha, detector, path, dirs, **{**fields, **kw})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[AdmittedBundle]:
    root = tmp_path_factory.mktemp("bundles")
    card = root / "card.md"
    card.write_text("# xception\n\nTrained on FF++ c23 <script>alert(1)</script>.\n")
    costs = {"machine": "a CPU, 2 cores", "threads": 1,
             "rows": [{"detector": "xception", "params": 20_000_000, "macs_per_frame": 4.6e9,
                       "cpu_ms_per_frame": 35.0, "input": [1, 3, 256, 256], "threads": 1}]}  # fmt: skip
    xception = _bundle(root, "xception", 0.6, card=card, costs=costs, added="2026-01-02T10:00:00Z")
    run = {"detector": "xception", "robust_auc": {"frame": 0.8125, "video": 0.875}}
    (xception.eval_dirs[0] / "robustness").mkdir()
    (xception.eval_dirs[0] / "robustness" / "robustness_run.json").write_text(json.dumps(run))
    return [
        xception,
        _bundle(root, "f3net", 0.55, seeds=2, package="lab/f3net@v1"),
        _bundle(root, "srm", 0.2),
        _bundle(root, "random", 0.0, baseline=True),
        _bundle(root, "core", 0.5, track="own preprocessing", notes=("index SHA-256 differs",)),
    ]


class _Tables(HTMLParser):
    """Every table of a page as its header and cell texts; every href and src."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.links: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"head": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("th", "td"):
            self._cell = []
        if tag in ("a", "link") and a.get("href"):
            self.links.append(a["href"])
        if tag in ("img", "script") and a.get("src"):
            self.links.append(a["src"])

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self._cell is not None:
            t = self.tables[-1]
            (t["head"] if tag == "th" else t["rows"][-1]).append("".join(self._cell))
            self._cell = None


def _parse(page: Path) -> _Tables:
    parser = _Tables()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _snapshot(site: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def site(bundles: list[AdmittedBundle], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    refused = [("tampered.zip", "predictions/demo-a.csv: SHA-256 differs from the manifest")]
    build(bundles, out, benchmark="demo", test_sets=SETS, refused=refused, settings=FAST,
          cache_dir=out.parent / "cache")  # fmt: skip
    return out


def test_pages_links_and_tables(site: Path, bundles: list[AdmittedBundle]) -> None:
    pages = sorted(site.rglob("*.html"))
    names = {str(p.relative_to(site)) for p in pages}
    assert {"index.html", "changelog.html", "testsets/demo-a.html", "testsets/demo-b.html"} <= names
    assert {f"detectors/{b.detector}.html" for b in bundles} <= names
    for page in pages:
        parsed = _parse(page)
        for link in parsed.links:
            assert not re.match(r"[a-z]+:|/", link), (page, link)  # relative links only
            target = (page.parent / link.split("#")[0]).resolve()
            assert target.is_file(), (page, link)
    index = site / "index.html"
    text = index.read_text(encoding="utf-8")
    assert "<td data-v=''><a href='detectors/xception.html'>xception</a></td>" in text
    assert (
        "<a href='../detectors/f3net.html'>f3net</a>"
        in (site / "testsets" / "demo-a.html").read_text()
    )
    assert "<script>alert" not in (site / "detectors" / "xception.html").read_text()
    assert "Own preprocessing track" in text and "Baselines" in text and "Refused" not in text
    changelog = (site / "changelog.html").read_text(encoding="utf-8")
    assert "tampered.zip" in changelog and "SHA-256 differs" in changelog
    assert "fairforensics 0.1 (abc1234)" in changelog
    board = json.loads((site / "tables" / "leaderboard_frame_auc.json").read_text())
    ranked = [r["Detector"] for r in board["rows"] if r["Type"] != "Baseline"]
    assert sorted(ranked) == ["f3net", "srm", "xception"]  # the own track is apart
    assert [r["Detector"] for r in board["rows"] if r["Type"] == "Baseline"] == ["random"]
    own = json.loads((site / "tables" / "own_leaderboard_frame_auc.json").read_text())
    assert [r["Detector"] for r in own["rows"]] == ["core"]
    assert any("demo-a tied" in c or "demo-a p" in c for c in board["rows"][0])  # ties tested
    robust = {r["Detector"]: r["robust AUC"] for r in board["rows"]}
    assert robust == {"xception": 0.8125, "f3net": None, "srm": None, "random": None}
    assert "video level 0.8750" in (site / "detectors" / "xception.html").read_text()
    costs = json.loads((site / "tables" / "costs.json").read_text())
    assert [r["Detector"] for r in costs["rows"]] == ["xception"]
    for name in ("fairness_demo-a_gender", "calibration_frame", "calibration_video"):
        assert (site / "tables" / f"{name}.json").is_file(), name
    listing = json.loads((site / "tables" / "index.json").read_text())
    assert {f"{n}.json" for n in ("leaderboard_video_eer", "changelog", "refused")} <= {
        x["file"] for x in listing
    }
    assert all((site / "tables" / x["file"]).is_file() for x in listing)


def _number(text: str) -> float | None:
    match = re.match(r"\s*(-?\d+\.\d+|undefined|-)", text)
    if not match or match.group(1) == "-":
        return None
    return float("nan") if match.group(1) == "undefined" else float(match.group(1))


def test_json_matches_the_html(site: Path) -> None:
    """Every table of every page holds what its JSON holds (values to 4 decimals), row for
    row, under the same header."""
    checked = 0
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        links = re.findall(r"</table><p class='json'><a href='([^']+)'>JSON", text)
        parsed = _parse(page)
        assert len(links) == len(parsed.tables), page
        for link, table in zip(links, parsed.tables, strict=True):
            data = json.loads((page.parent / link).read_text(encoding="utf-8"))
            assert table["head"] == data["columns"], (page, link)
            rows = [r for r in table["rows"] if len(r) == len(data["columns"])]
            ranked = [r for r in data["rows"] if r.get("Type") != "Baseline"]
            apart = [r for r in data["rows"] if r.get("Type") == "Baseline"]
            assert len(rows) == len(data["rows"]), (page, link)
            for cells, record in zip(rows, ranked + apart, strict=True):
                for cell, column in zip(cells, data["columns"], strict=True):
                    value = record[column]
                    if isinstance(value, float):
                        got = _number(cell)
                        assert got is not None and (
                            np.isnan(value) if np.isnan(got) else abs(got - value) < 6e-5
                        ), (page, link, column, cell, value)
                    elif value is not None:
                        assert cell.startswith(str(value)), (page, link, column, cell, value)
            checked += 1
    assert checked > 30


def test_rebuild_is_byte_identical_and_reads_no_cached_bundle(
    site: Path, bundles: list[AdmittedBundle], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild from the same bundles, with their predictions gone, gives the same bytes; a
    new bundle is the only one read."""
    import fairforensics.evaluation.leaderboard as lb

    moved = tmp_path / "away"
    read: list[str] = []
    real = lb.read_predictions
    monkeypatch.setattr(
        lb, "read_predictions", lambda p, *a, **k: read.append(str(p)) or real(p, *a, **k)
    )
    shutil.copytree(bundles[0].path, moved)
    shutil.rmtree(bundles[0].path)
    try:
        again = tmp_path / "site"
        refused = [("tampered.zip", "predictions/demo-a.csv: SHA-256 differs from the manifest")]
        build(bundles, again, benchmark="demo", test_sets=SETS, settings=FAST, refused=refused,
              cache_dir=site.parent / "cache")  # fmt: skip
        assert _snapshot(again) == _snapshot(site)
        assert read == []
        extra = _bundle(tmp_path, "ucf", 0.4, added="2026-02-01T00:00:00Z")
        build([*bundles, extra], tmp_path / "site2", benchmark="demo", test_sets=SETS,
              settings=FAST, cache_dir=site.parent / "cache")  # fmt: skip
        assert read and all("/ucf/" in p for p in read), read
        assert len(read) == len(set(read)) == len(SETS)  # each of its files once
    finally:
        shutil.copytree(moved, bundles[0].path)


def test_cache_of_other_test_sets_is_not_reused(
    site: Path, bundles: list[AdmittedBundle], tmp_path: Path
) -> None:
    """A cache filled for a benchmark of one test set does not hide the other from a board of
    two."""
    refused = [("tampered.zip", "predictions/demo-a.csv: SHA-256 differs from the manifest")]
    one = build(bundles, tmp_path / "one", benchmark="demo", test_sets=SETS[:1], settings=FAST,
                refused=refused, cache_dir=tmp_path / "cache")  # fmt: skip
    assert not (one.parent / "testsets" / "demo-b.html").exists()
    build(bundles, tmp_path / "two", benchmark="demo", test_sets=SETS, settings=FAST,
          refused=refused, cache_dir=tmp_path / "cache")  # fmt: skip
    assert _snapshot(tmp_path / "two") == _snapshot(site)


def _small_site(root: Path) -> Path:
    """The site of three stand-in bundles under ``root`` (``root/site``)."""
    bundles = [_bundle(root, "xception", 0.6), _bundle(root, "f3net", 0.55, seeds=2),
               _bundle(root, "random", 0.0, baseline=True)]  # fmt: skip
    build(bundles, root / "site", benchmark="demo", test_sets=SETS, settings=FAST)
    return root / "site"


def test_identical_bytes_across_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process (another hash seed), other folders: the same bytes."""
    import subprocess
    import sys

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    here = _snapshot(_small_site(tmp_path / "here"))
    code = (
        "import sys, pathlib, tests.test_board_site as t; t._small_site(pathlib.Path(sys.argv[1]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "OMP_NUM_THREADS": "1"}
    repo = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "there")], cwd=repo, env=env,
                   check=True)  # fmt: skip
    assert _snapshot(tmp_path / "there" / "site") == here
    assert len(here) > 20


def test_source_date_epoch_and_refusals(
    bundles: list[AdmittedBundle], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    index = build_site(bundles[:1], tmp_path / "site", benchmark="demo", test_sets=SETS)
    assert index == tmp_path / "site" / "index.html"
    assert "built 2026-01-01 00:00 UTC" in index.read_text(encoding="utf-8")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a site written by board build"):
        build_site(bundles[:1], tmp_path / "other", benchmark="demo", test_sets=SETS)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(ValueError, match="SOURCE_DATE_EPOCH"):
        build_site(bundles[:1], tmp_path / "site", benchmark="demo", test_sets=SETS)


_SORT = """
const th = [...document.querySelectorAll('table')][arguments[0]].tHead.rows[0].cells[arguments[1]];
const col = th.cellIndex, body = th.closest('table').tBodies[0];
const read = () => [...body.rows].map(r => r.cells[col].dataset.v).filter(v => v !== undefined && v !== '')
  .map(parseFloat);
th.click(); const first = read(); th.click(); return [first, read()];
"""


def test_site_in_headless_chromium(site: Path) -> None:
    """Every page fits a 1400-pixel window, loads its images and its local links; a click on a
    leaderboard's column header sorts its ranked rows, a second click reverses them."""
    from tests.test_board_end_to_end import check_site_in_chromium

    def sorts(browser) -> None:
        heads = browser.execute_script(
            "return [...document.querySelectorAll('table')][0].tHead.rows[0].cells.length"
        )
        col = next(
            j for j in range(2, heads)
            if browser.execute_script(
                "return [...document.querySelectorAll('table')][0].tHead.rows[0].cells"
                f"[{j}].textContent") == "demo-a"
        )  # fmt: skip
        up, down = browser.execute_script(_SORT, 0, col)
        assert len(up) >= 3 and up == sorted(up) and down == sorted(up, reverse=True), (up, down)
        assert len(browser.execute_script("return document.images")) >= 1

    check_site_in_chromium(site, on_index=sorts)


def test_fairness_intervals_use_the_sites_replicates(
    bundles: list[AdmittedBundle], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every bootstrap of a site's fairness row, the AUC and xAUC columns' bootstrap-t
    included, draws the site's ``fairness_boot`` replicates, and the header says that count;
    ``fairforensics fairness`` and ``test --leaderboard``'s rows (:func:`fairness_table`, no
    ``auc_boot``) keep 1,000 for the AUC and xAUC."""
    from fairforensics.benchmarks import fairness_board as fb
    from fairforensics.evaluation.leaderboard import collect_entries

    seen: dict[str, list[int]] = {"xauc": [], "gaps": [], "lin": [], "ece": []}
    wrapped = {"cross_group_aucs": "xauc", "group_gaps": "gaps", "lin_intervals": "lin",
               "group_calibration": "ece"}  # fmt: skip
    for name, key in wrapped.items():
        real = getattr(fb, name)

        def record(*a: object, _real=real, _key=key, **k: object) -> object:
            seen[_key].append(k.get("n_boot", 1000))
            return _real(*a, **k)

        monkeypatch.setattr(fb, name, record)
    settings = SiteSettings(n_boot=50, fairness_boot=17)
    build(bundles[:1], tmp_path / "site", benchmark="demo", test_sets=SETS, settings=settings)
    assert all(seen.values()), seen
    assert {n for counts in seen.values() for n in counts} == {17}
    header = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "50 bootstrap replicates over videos at 95% (fairness tables: 17)" in header
    seen["xauc"].clear()
    fb.fairness_table(collect_entries(bundles[0].eval_dirs), "demo-a", "gender", n_boot=17)
    assert seen["xauc"] and set(seen["xauc"]) == {fb.AUC_BOOT} and fb.AUC_BOOT == 1000
