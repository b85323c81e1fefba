"""The commands (issue 14, item 8): one shared error handler (one line, exit 2; Ctrl-C 130,
SIGTERM 143), the thin ``scripts/*.py`` wrappers, and the installed entry points of a wheel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fairforensics.cli import VERBS
from fairforensics.cli import main as fairforensics_main
from fairforensics.cli.errors import Terminated, UserInputError, run_cli
from fairforensics.configs import ConfigError

REPO = Path(__file__).resolve().parents[1]


def run_command(main, argv: list[str], capsys) -> tuple[int, str]:
    """A command's ``main(argv)`` through the shared handler: its exit code and stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        run_cli(main, argv)
    return info.value.code, capsys.readouterr().err


def _exit_code(fn, capsys) -> tuple[int, str]:
    return run_command(fn, [], capsys)


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (ConfigError("train.yaml: key 'lr' must be > 0"), 2, "error: train.yaml: key 'lr' must"),
        (UserInputError("--detector 'x' is not registered"), 2, "error: --detector 'x'"),
        (FileNotFoundError(2, "No such file or directory", "a.json"), 2, "error: a.json: No such"),
        (PermissionError(13, "Permission denied", "/out"), 2, "choose a path you can write"),
        (KeyboardInterrupt(), 130, "stopped (Ctrl-C)"),
        (Terminated(), 143, "stopped (SIGTERM)"),
    ],
)
def test_handler_maps_errors_to_one_line(exc, code, message, capsys) -> None:
    def fail(argv):
        raise exc

    got, err = _exit_code(fail, capsys)
    assert got == code and message in err and len(err.strip().splitlines()) == 1


def test_handler_passes_return_codes_and_bugs(capsys) -> None:
    assert _exit_code(lambda argv: 0, capsys)[0] == 0
    assert _exit_code(lambda argv: 1, capsys)[0] == 1

    def bug(argv):
        raise ZeroDivisionError("a bug keeps its traceback")

    with pytest.raises(ZeroDivisionError):
        run_cli(bug, [])


def test_sigterm_exits_143(tmp_path) -> None:
    code = (
        "import os, signal, time\n"
        "from fairforensics.cli.errors import run_cli\n"
        "def main(argv):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(5)\n"
        "run_cli(main)\n"
    )
    done = _run([sys.executable, "-c", code])
    assert done.returncode == 128 + signal.SIGTERM
    assert done.stderr.strip() == "stopped (SIGTERM)"


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("FF_TRACEBACK", None)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    lines = [ln for ln in done.stderr.splitlines() if "error" in ln.lower()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def blocked(tmp_path) -> Path:
    """An output path that cannot be a folder: a file stands where its parent should be."""
    (tmp_path / "file").write_text("not a folder")
    return tmp_path / "file" / "out"


@pytest.mark.slow
def test_unwritable_output_folder_is_one_line(blocked, tmp_path) -> None:
    py = sys.executable
    preprocess = [py, str(REPO / "scripts" / "preprocess.py")]
    preprocess += ["--config", str(REPO / "configs" / "preprocess" / "demo.yaml")]
    preprocess += ["--set", f"output.root={blocked}", "--no-progress"]
    fairness = [py, str(REPO / "scripts" / "fairness.py"), "--predictions", "p.csv"]
    metamorphic = [py, str(REPO / "scripts" / "metamorphic.py"), "--run", "r", "--test-data", "x"]
    for cmd in (
        preprocess,
        [*fairness, "--out", str(blocked)],
        [*metamorphic, "--out", str(blocked)],
    ):
        _one_line_error(_run(cmd, cwd=tmp_path), str(blocked))


@pytest.mark.slow
def test_unknown_detector_is_one_line(tmp_path) -> None:
    cmd = [sys.executable, str(REPO / "scripts" / "test.py"), "--detector", "nope"]
    cmd += ["--weights", "w.pt", "--test-data", "x"]
    _one_line_error(_run(cmd, cwd=tmp_path), "--detector 'nope'", "meso4")


@pytest.mark.slow
def test_bad_config_value_is_one_line(tmp_path) -> None:
    cmd = [sys.executable, str(REPO / "scripts" / "test.py"), "--detector", "meso4"]
    cmd += ["--weights", "w.pt", "--test-data", "x", "--set", "metrics=[bogus]"]
    _one_line_error(_run(cmd, cwd=tmp_path), "metrics")
    train = [sys.executable, str(REPO / "scripts" / "train.py"), "--detector", "meso4"]
    _one_line_error(
        _run([*train, "--set", "data.num_workers=-1"], cwd=tmp_path), "num_workers", "-1"
    )


def test_fairforensics_dispatches_verbs(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        fairforensics_main(["nope"])
    assert info.value.code == 2 and "unknown command 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        fairforensics_main(["test", "--detector", "nope", "--weights", "w.pt"])
    assert info.value.code == 2 and "not a registered detector" in capsys.readouterr().err


@pytest.mark.slow
def test_wheel_installs_the_commands(tmp_path, wheel) -> None:
    """``pip wheel .`` holds the CLI package and one entry point per verb (ff-<verb>)."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (ep,) = [n for n in names if n.endswith("entry_points.txt")]
        entry_points = zf.read(ep).decode()
    # one import name: the repository's folders are subpackages of fairforensics, nothing else
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"fairforensics"}
    (top,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read(top).decode().split() == ["fairforensics"]
    assert "fairforensics = fairforensics.cli:main" in entry_points
    for verb in VERBS:
        assert f"ff-{verb} = fairforensics.cli:{verb}" in entry_points
        assert f"fairforensics/cli/{verb}.py" in names
    # the CLI modules import from the installed wheel alone (not from this checkout)
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    code = "import importlib, fairforensics.cli as c\n" + "".join(
        f"importlib.import_module('fairforensics.cli.{v}').main\n" for v in VERBS
    )
    code += f"assert c.__file__.startswith({str(site)!r})\n"
    # every detector builds from the wheel; the configs it reads are the wheel's package data
    code += (
        "from fairforensics import detectors\n"
        "from fairforensics.configs import CONFIG_DIR\n"
        f"assert str(CONFIG_DIR).startswith({str(site)!r})\n"
        "names = detectors.list_detectors()\n"
        "assert len(names) >= 37, names\n"
        "import torch\n"
        "with torch.device('meta'):  # every module and shape, without filling 1.5e9 weights\n"
        "    for n in names:\n"
        "        detectors.build_detector(n)\n"
        f"assert detectors.__file__.startswith({str(site)!r})\n"
        "for old in ('detectors', 'configs', 'preprocessing', 'training', 'evaluation', 'fairness', 'benchmarks'):\n"
        "    try:\n"
        "        __import__(old)\n"
        "    except ImportError:\n"
        "        continue\n"
        "    raise SystemExit(f'{old} is importable')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    imported = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert imported.returncode == 0, imported.stderr[-2000:]


@pytest.mark.parametrize("verb", list(VERBS))
def test_help_examples_keep_their_line_breaks(verb: str) -> None:
    """Issue 40, item 11: a ``\\`` continuation in a docstring that is no raw string joins the
    example's lines with a run of spaces (``FF-c23       --source-root``) in ``--help``."""
    import importlib
    import re

    doc = importlib.import_module(f"fairforensics.cli.{VERBS[verb]}").__doc__
    assert not re.search(r"\S {3,}--\w", doc), re.search(r".*\S {3,}--\w.*", doc)[0]
