"""Argument and file errors of every verb that loads a model or reads inputs come before torch
is imported (issue 46, item 8): a bad ``--model`` path, a ``--run`` without ``config.yaml`` or
its checkpoint, a text file as ``--weights``, a folder without images or videos, a typo in a
test config, a missing predictions file. Structural, not timed: each runs in a fresh
interpreter (:func:`tests.test_startup._run_verb`) and must give one ``error:`` line, exit 2,
with ``torch`` not in ``sys.modules``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairforensics.evaluation.model_package.schema import FORMAT
from tests.test_startup import _run_verb

#: (verb, arguments, text the one error line holds); {d}: a folder with notes.txt (a text
#: file), empty/ (a folder), norun/ (no config.yaml), nockpt/ (config.yaml, no checkpoint)
CASES = [
    ("detect", ["a.jpg", "--model", "{d}/nopkg"], "no such model package folder"),
    ("detect", ["a.jpg", "--model", "{d}/empty"], "config.json: missing"),
    ("detect", ["a.jpg", "--run", "{d}/norun"], "not a run directory (no config.yaml)"),
    ("detect", ["a.jpg", "--run", "{d}/nockpt"], "best.pt: weights file not found"),
    ("detect", ["a.jpg", "--detector", "meso4", "--weights", "{d}/notes.txt"], "a text file"),
    ("detect", ["{d}/empty", "--detector", "meso4", "--weights", "{d}/w.pt"], "no images or"),
    ("test", ["--run", "{d}/norun", "--test-data", "demo"], "not a run directory"),
    ("test", ["--model", "{d}/nopkg", "--test-data", "demo"], "no such model package"),
    ("test", ["--detector", "meso4", "--weights", "{d}/notes.txt", "--test-data", "x"], "a text"),
    ("test", ["--detector", "meso4", "--weights", "{d}/w.pt", "--set", "reduse=mean"], "'reduse'"),
    ("test", ["--predictions", "x={d}/no.csv", "--name", "n", "--out", "{d}/o"], "not found"),
    ("robustness", ["--run", "{d}/norun", "--test-data", "demo"], "not a run directory"),
    ("robustness", ["--model", "{d}/empty", "--test-data", "demo"], "config.json: missing"),
    ("robustness", ["--model", "{d}/pkg0", "--test-data", "d", "--set", "levls=[a]"], "'levls'"),
    ("metamorphic", ["--run", "{d}/norun", "--test-data", "demo"], "not a run directory"),
    ("metamorphic", ["--model", "{d}/nopkg", "--test-data", "demo"], "no such model package"),
    ("export", ["{d}/norun", "--out", "{d}/pkg"], "not a run directory"),
    ("export", ["--detector", "meso4", "--weights", "{d}/notes.txt", "--out", "{d}/p"], "text"),
    ("train", ["--resume", "{d}/norun"], "not a run directory"),
    ("fairness", ["--predictions", "{d}/no.csv", "--out", "{d}/f"], "predictions file not found"),
    ("detect", ["a.jpg", "--detector", "mseo4", "--weights", "{d}/w.pt"], "not a registered"),
    ("test", ["--detector", "mseo4", "--weights", "{d}/w.pt"], "not a registered detector"),
    ("train", ["--detector", "mseo4"], "not a registered detector"),
    ("export", ["--detector", "mseo4", "--weights", "{d}/w.pt", "--out", "{d}/p"], "registered"),
    ("benchmark", ["--detectors", "mseo4", "--out", "{d}/b"], "'mseo4' is not a registered"),
    ("benchmark", ["--detectors", "meso4", "--out", "{d}/b", "--models-dir", "{d}/no"], "not a"),
]


def test_the_detector_names_are_the_registrys() -> None:
    """The names the checks know without importing torch are those the registry lists."""
    from fairforensics.cli.preflight import known_detectors
    from fairforensics.detectors import list_detectors

    assert known_detectors() == set(list_detectors())  # in a process that registered none


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("errors")
    (d / "notes.txt").write_text("not weights\n")
    (d / "w.pt").write_bytes(b"PK\x03\x04")  # looks like a torch checkpoint: not the error
    for name in ("empty", "norun", "nockpt"):
        (d / name).mkdir()
    (d / "empty" / "README").write_text("no images here")
    (d / "nockpt" / "config.yaml").write_text("detector: meso4\n")
    (d / "pkg0").mkdir()  # a package as far as the files go (its weights are not read)
    (d / "pkg0" / "model.safetensors").write_bytes(b"")
    config = {"format": FORMAT, "schema_version": 1, "detector": "meso4", "model": {}}
    (d / "pkg0" / "config.json").write_text(json.dumps({**config, "weights_sha256": "0"}))
    return d


@pytest.mark.parametrize(("verb", "argv", "expected"), CASES, ids=lambda c: str(c)[:40])
def test_file_errors_come_before_torch(verb: str, argv: list, expected: str, folder: Path):
    args = [a.format(d=folder) for a in argv]
    code, err, torch_loaded = _run_verb(verb, args, folder)
    lines = [line for line in err.splitlines() if line and not line.startswith("@@")]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err[-2000:]
    assert expected in lines[0], lines[0]
    assert not torch_loaded, f"{verb}: torch imported before: {lines[0]}"
