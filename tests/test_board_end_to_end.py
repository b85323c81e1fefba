"""The shared leaderboard end to end (issue 49, "Done when"): stand-in detectors scored on a
shipped protocol's test items (``ffpp-c23``'s FF-DF: FaceForensics++'s official test split,
140 reals and 140 Deepfakes fakes) are packed with ``fairforensics submit``; ``fairforensics
board build`` admits them, refuses a bundle scored on a subset and one whose predictions file was
changed after packing, each with its one line, and writes a site that headless Chromium opens
(sorting, links, images, nothing wider than the window). The demo sweep's bundle goes through the
same commands in docs/leaderboard.md (``make test-e2e``)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairforensics.benchmarks.submissions.definition import load_definition
from fairforensics.cli import main as fairforensics_main
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.evaluation.provenance import write_provenance

SET = "FF-DF"
FRAMES = 2  # frames scored a video


def _items() -> list[tuple[str, str]]:
    """(method, video id) of the shipped definition's FF-DF test items."""
    items = load_definition("ffpp-c23").test_sets[SET].items
    assert items is not None
    return list(zip(items.method.tolist(), items.video_id.tolist(), strict=True))


def _evaluation(folder: Path, detector: str, skill: float, *, drop: int | None = None) -> Path:
    """An evaluation folder of a stand-in detector on FF-DF (``skill``: how far its fakes'
    scores sit above its reals'; ``drop``: leave that item out)."""
    items = [it for k, it in enumerate(_items()) if k != drop]
    rng = np.random.default_rng(len(detector))
    method = np.repeat([m for m, _ in items], FRAMES)
    label = (method != "real").astype(int)
    score = np.clip(0.5 + skill * (label - 0.5) + rng.normal(0, 0.2, len(label)), 0, 1)
    pred = Predictions(
        [SET] * len(label), np.repeat([v for _, v in items], FRAMES),
        np.tile(np.arange(FRAMES), len(items)), label, score, method,
        attributes={"gender": np.where(np.arange(len(label)) % 5 < 2, "female", "male")},
    )  # fmt: skip
    target = folder / "predictions" / f"{SET}.csv"
    write_predictions(target, pred)
    write_provenance(target, {"detector": detector, "weights_sha256": "cd" * 32,
                              "index": "FF-DF.json", "index_sha256": "ef" * 32,
                              "settings": {"split": "test", "frame_num": FRAMES}})  # fmt: skip
    meta = {"detector": detector, "train_data": "FF-c23", "test_data": [SET], "threshold": 0.5}
    (folder / "eval.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def _cli(argv: list[str]) -> int:
    """``fairforensics ARGV`` in this process: its exit code."""
    with pytest.raises(SystemExit) as info:
        fairforensics_main(argv)
    return int(info.value.code or 0)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """Bundles of three stand-in detectors, a subset and a tampered one, built into a site with
    ``--allow-refused`` after a build without it (its exit code and stderr kept)."""
    root = tmp_path_factory.mktemp("board")
    mp = pytest.MonkeyPatch()
    mp.setenv("SOURCE_DATE_EPOCH", "1700000000")
    subs = root / "submissions"
    for name, skill, drop in (("xception", 0.5, None), ("meso4", 0.3, None),
                              ("f3net", 0.45, None), ("capsule", 0.4, 3)):  # fmt: skip
        ev = _evaluation(root / "evals" / name, name, skill, drop=drop)
        assert _cli(["submit", str(ev), "--out", str(subs / name)]) == 0
    data = bytearray((csv := next((subs / "f3net").rglob(f"{SET}.csv"))).read_bytes())
    at = data.index(b"0.", data.index(b"\n"))  # the first score of the first row
    data[at + 2] = ord("0") + (data[at + 2] - ord("0") + 1) % 10  # changed after packing
    csv.write_bytes(bytes(data))
    site = root / "site"
    argv = ["board", "build", str(subs), "--benchmark", "ffpp-c23", "--out", str(site)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = _cli(argv)
    shutil.rmtree(site, ignore_errors=True)
    assert _cli([*argv, "--allow-refused"]) == 0
    mp.undo()
    return site, code, err.getvalue()


def test_refusals_name_the_difference(board: tuple[Path, int, str]) -> None:
    """Both refused, each with its one line, and listed on the changelog (break checked: the
    f3net bundle left untouched is admitted and the test fails)."""
    site, code, err = board
    assert code == 1
    refused = [line for line in err.splitlines() if line.startswith("refused")]
    assert len(refused) == 2, err
    assert any(line.startswith("refused capsule") and "subset" in line for line in refused), err
    assert any(line.startswith("refused f3net") and "manifest" in line for line in refused), err
    changelog = (site / "changelog.html").read_text(encoding="utf-8")
    assert "capsule" in changelog and "f3net" in changelog and "subset" in changelog


def test_site_ranks_the_admitted_detectors(board: tuple[Path, int, str]) -> None:
    """The leaderboard holds the admitted detectors only, best first in the JSON, and a page each."""
    site, _, _ = board
    tables = json.loads((site / "tables" / "index.json").read_text(encoding="utf-8"))
    assert tables
    auc = json.loads((site / "tables" / "leaderboard_frame_auc.json").read_text(encoding="utf-8"))
    detectors = [row["Detector"] for row in auc["rows"]]
    assert sorted(detectors) == ["meso4", "xception"], detectors
    values = {row["Detector"]: row[SET] for row in auc["rows"]}
    assert values["xception"] > values["meso4"]
    for name in ("xception", "meso4"):
        assert (site / "detectors" / f"{name}.html").is_file()
    assert not (site / "detectors" / "capsule.html").exists()


def check_site_in_chromium(site: Path, on_index: Callable[[Any], None] | None = None) -> None:
    """Every page of ``site`` fits the window, its images load and its local links resolve; the
    index's sorting script is defined (waited for up to 10 s), and ``on_index`` runs on the
    index page (skips, naming what is missing, without a headless Chromium)."""
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.test_report_layout import _browser, _check_fits, _layout

    browser = _browser()
    try:
        for page in sorted(site.rglob("*.html")):
            got = _layout(browser, page)
            if not got["images"]:
                got["images"] = [("none", True, 0, 0)]
            _check_fits(got, page)
            links = browser.execute_script(
                "return [...document.querySelectorAll('a[href], link[href], script[src], "
                "img[src]')].map(e => e.href || e.src);"
            )
            for url in links:
                assert url.startswith("file://"), (page, url)
                assert Path(url.removeprefix("file://").split("#")[0]).is_file(), (page, url)
        index = (site / "index.html").resolve().as_uri()
        browser.get(index)
        WebDriverWait(browser, 10).until(
            lambda b: (
                b.current_url == index and b.execute_script("return typeof sortBy") == "function"
            ),
            message=f"{index}: the sorting script sortBy is not defined after 10 s",
        )
        if on_index is not None:
            on_index(browser)
    finally:
        browser.quit()


def test_site_in_headless_chromium(board: tuple[Path, int, str]) -> None:
    """Every page fits the window, its images load and its local links resolve."""
    check_site_in_chromium(board[0])
