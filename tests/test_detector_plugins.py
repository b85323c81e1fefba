"""Detectors from outside the repository: ``--import MODULE`` on the commands, the entry-point
group ``fairforensics.detectors``, and the contract's ``family`` in the registry."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fairforensics.configs import ConfigError, import_modules
from fairforensics.detectors import (
    Detector,
    detector_family,
    get_detector_class,
    list_detectors,
    registry,
)
from tests.test_train_utils import JOHNS, make_index

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "detectors.md"
TINY = [
    "train.epochs=1",
    "train.batch_size=4",
    "train.resolution=32",
    "train.frame_num=1",
    "train.test_frame_num=1",
    "data.num_workers=0",
]


def _doc_example() -> tuple[str, list[list[str]]]:
    """The module and the two commands of docs/detectors.md's outside-detector example."""
    text = DOC.read_text(encoding="utf-8")
    module = re.search(r"```python\n(# my_cnn\.py.*?)```", text, re.S).group(1)
    shell = re.search(r"```bash\n(PYTHONPATH=\. python scripts/train\.py.*?)```", text, re.S)
    commands = [shlex.split(line) for line in shell.group(1).replace("\\\n", " ").splitlines()]
    return module, commands


@pytest.mark.slow
def test_the_documented_detector_trains_and_tests_from_the_command_line(tmp_path: Path) -> None:
    if not JOHNS:
        pytest.skip("needs ../shared/data/faces/dlib/johns (the face crops of the tiny index)")
    module, commands = _doc_example()
    assert [c[:4] for c in commands] == [
        ["PYTHONPATH=.", "python", "scripts/train.py", "--import"],
        ["PYTHONPATH=.", "python", "scripts/test.py", "--import"],
    ]
    (tmp_path / "my_cnn.py").write_text(module)
    data = tmp_path / "data"
    make_index(data, "demo", n_real=2, n_fake=2, frames=1, size=32)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "OMP_NUM_THREADS": "1"}
    runs = tmp_path / "runs"
    for argv in commands:
        argv = [a.replace("demo_data/processed", str(data)) for a in argv[2:]]
        argv = [str(REPO / argv[0]), *(a.replace("runs/", f"{runs}/") for a in argv[1:])]
        if argv[0].endswith("train.py"):
            argv += ["--output-dir", str(runs), *(f"--set={s}" for s in TINY)]
        done = subprocess.run(
            [sys.executable, *argv], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads((runs / "my_cnn" / "eval" / "best" / "eval.json").read_text())
    assert info["detector"] == "my_cnn"
    metrics = json.loads((runs / "my_cnn" / "eval" / "best" / "metrics" / "demo.json").read_text())
    assert metrics["test_data"] == "demo"


def test_import_of_a_missing_module_names_it() -> None:
    with pytest.raises(ConfigError, match="--import no_such_module_xyz: cannot import"):
        import_modules(["no_such_module_xyz"])


def test_import_of_a_module_that_fails_names_the_failure(tmp_path: Path, monkeypatch) -> None:
    """A module that is found but fails while importing (a package it needs is missing, an
    error in it) is reported as that, not as a module to put on PYTHONPATH."""
    (tmp_path / "needs_a_package.py").write_text("import no_such_package_xyz\n")
    (tmp_path / "raises_inside.py").write_text("raise RuntimeError('bad plugin state')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as err:
        import_modules(["needs_a_package"])
    message = str(err.value)
    assert message.startswith("--import needs_a_package: importing it failed: ModuleNotFoundError")
    assert "no_such_package_xyz" in message and "PYTHONPATH" not in message
    with pytest.raises(ConfigError, match=r"raises_inside: importing it failed: RuntimeError"):
        import_modules(["raises_inside"])


def test_entry_point_group_registers_a_detector(tmp_path: Path, monkeypatch) -> None:
    module, _ = _doc_example()
    (tmp_path / "ep_cnn.py").write_text(module.replace('"my_cnn"', '"_ep_cnn"'))
    (tmp_path / "broken_plugin.py").write_text("raise ImportError('missing optional package')\n")
    info = tmp_path / "ep_cnn-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-cnn\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[fairforensics.detectors]\n_ep_cnn = ep_cnn\nbroken = broken_plugin\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.load_entry_points.cache_clear()
    try:
        assert "_ep_cnn" in list_detectors()  # the broken plugin is logged, not fatal
        cls = get_detector_class("_ep_cnn")
        assert issubclass(cls, Detector) and detector_family("_ep_cnn") == "Spatial"
        # the detector of the broken plugin is unknown, and the error says why
        failure = (
            "detector plugin broken (broken_plugin) failed to import: "
            "ImportError('missing optional package')"
        )
        with pytest.raises(KeyError) as err:
            get_detector_class("broken")
        assert f"unknown detector 'broken'; {failure}; known detectors:" in err.value.args[0]
        with pytest.raises(KeyError, match=re.escape(failure)):
            get_detector_class("another_name")  # it may be the broken plugin's detector
        assert registry.plugin_failure_note("_ep_cnn") == f"; {failure}"
    finally:
        registry.load_entry_points.cache_clear()
        registry._FAILED_PLUGINS.clear()


def test_families_read_from_the_source_match_the_classes() -> None:
    builtin = registry._builtin_decorators()
    assert len(builtin) >= 21
    for name, (_, family, _) in builtin.items():
        assert family in ("Naive", "Spatial", "Frequency", "PAD", "Video", "Fairness"), name
        assert detector_family(name) == family
        assert get_detector_class(name).family == family
    assert detector_family("not_a_detector") == "Other"
