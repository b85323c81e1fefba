"""Start-up (issue 31, item 4): ``--help``, argument errors and preprocessing import no torch.

Structural, not timed: each check runs in a fresh interpreter and asserts that ``torch`` is not
in ``sys.modules`` afterwards (importing torch is most of a command's start-up time).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairforensics.cli import VERBS
from fairforensics.cli.errors import LIBRARY_USER_ERRORS, run_cli, user_errors
from tests.testdata import DATA

REPO = Path(__file__).resolve().parents[1]


def _python(code: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("FF_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_help_and_argument_errors_import_no_torch() -> None:
    """``fairforensics --help``, every verb's ``--help`` and an argument error of each."""
    code = (
        "import sys\n"
        "from fairforensics.cli import VERBS, main\n"
        "codes = []\n"
        "for argv in (['--help'], *([v, '--help'] for v in VERBS), "
        "*([v, '--no-such-option'] for v in VERBS)):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as stop:\n"
        "        codes.append(stop.code)\n"
        "print(codes, 'torch' in sys.modules, file=sys.__stderr__)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    codes, torch_loaded = done.stderr.strip().splitlines()[-1].rsplit("] ", 1)
    n = len(VERBS)
    assert codes == "[" + ", ".join(["0"] * (n + 1) + ["2"] * n), done.stderr[-2000:]
    assert torch_loaded == "False", "a command imported torch for --help or an argument error"


def test_preprocessing_imports_no_torch(tmp_path: Path) -> None:
    """The preprocessing command, run in process (one worker: the worker's own code path), and
    the module the pool's fork server preloads into every worker, with dlib's HOG detector."""
    photo = DATA / "faces" / "face_recognition" / "obama-240p.jpg"
    for split in ("train", "test"):
        for label in ("real", "fake"):
            (tmp_path / "raw" / split / label).mkdir(parents=True)
            shutil.copy(photo, tmp_path / "raw" / split / label / f"{split}_{label}.jpg")
    argv = ["--config", "generic", "--workers", "1", "--no-progress"]
    argv += ["--set", f"dataset.root={tmp_path / 'raw'}", "--set", f"output.root={tmp_path}"]
    argv += ["--set", "align.size=32", "--set", "dataset.name=tiny"]
    code = (
        "import sys\n"
        "import fairforensics.preprocessing.pool_preload\n"
        "from fairforensics.cli.preprocess import main\n"
        f"code = main({argv!r})\n"
        "print(code, 'torch' in sys.modules, file=sys.__stderr__)\n"
    )
    done = _python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "0 False", done.stderr[-2000:]
    index = json.loads((tmp_path / "tiny.json").read_text())
    assert len(index["videos"]) == 4  # the faces were found: the worker really ran


@pytest.mark.parametrize(("module", "name"), LIBRARY_USER_ERRORS)
def test_library_user_errors_exist_and_exit_2(module: str, name: str, capsys) -> None:
    """Each (module, class) of the table names an exception, and once its module is imported
    the handler shows it as one ``error:`` line with exit code 2."""
    import importlib

    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, Exception) and error in user_errors()

    def fail(argv):
        exc = error.__new__(error)  # whatever its __init__ takes, the message is its args
        exc.args = ("the input is wrong",)
        raise exc

    with pytest.raises(SystemExit) as stop:
        run_cli(fail, [])
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: the input is wrong\n"


#: verb -> an argument error that argparse accepts and the command itself rejects (issue 40,
#: item 7): each must be one ``error:`` line, exit 2, before torch is imported
VALUE_ERRORS = {
    "preprocess": ["--import-deepfakebench", "x.json"],
    "train": ["--resume", "runs/x", "--detector", "meso4"],
    "test": ["--run", "runs/x", "--scores", "logits"],
    "fairness": ["--protocol", "p.yaml", "--threshold", "0.5"],
    "metamorphic": ["--run", "runs/x", "--test-data", "demo", "--variant", "paper"],
    "benchmark": ["--out", "{file}", "--detectors", "meso4", "--train-data", "demo"],
    "detect": ["a.jpg", "--detector", "meso4"],
    "demographics": [
        "--index",
        "i.json",
        "--csv",
        "a.csv",
        "--out",
        "o.json",
        "--attributes",
        "XX",
    ],
    "combine": ["a.json", "--name", "x", "--out", "{folder}"],
    "detectors": ["--import", "no_such_module_anywhere"],
    "perturb": ["--type", "XX", "--level", "1", "in.png", "out.png"],
    "robustness": ["--detector", "meso4", "--weights", "w.h5", "--test-data", "d", "--types", "XX"],
    "export": ["runs/x", "--weights", "w.pt", "--out", "{folder}/pkg"],
    "models": ["--detector", "no_such_detector"],
    "audit": ["--data", "demo", "--source-root", "{folder}/none", "--out", "{folder}/a"],
    "verify": ["{folder}/no_such_index.json", "--no-decode"],
    "calibrate": ["--predictions", "{folder}/no.csv", "--method", "platt", "--out", "{folder}/c"],
    "submit": ["{folder}", "--out", "{folder}/bundle"],
    "board": ["build", "{folder}", "--benchmark", "no-such-benchmark", "--out", "{folder}/s"],
}

#: verb -> its arguments with an output path that cannot be written ({out}: a file stands in the
#: way of the folder) and inputs that do not exist: the output must fail first (issue 40, item 1)
UNWRITABLE_OUT = {
    "preprocess": ["--config", "generic", "--set", "output.root={out}"],
    "train": ["--detector", "meso4", "--output-dir", "{out}"],
    "test": ["--run", "no_run", "--test-data", "demo", "--out", "{out}"],
    "fairness": ["--predictions", "no.csv", "--out", "{out}"],
    "metamorphic": ["--run", "no_run", "--test-data", "demo", "--out", "{out}"],
    "benchmark": ["--out", "{out}", "--detectors", "meso4", "--train-data", "demo"],
    "detect": ["no.jpg", "--detector", "meso4", "--weights", "no.h5", "--out", "{out}"],
    "demographics": ["--index", "no.json", "--csv", "no.csv", "--out", "{out}/i.json"],
    "combine": ["no.json", "--name", "x", "--out", "{out}/c.json"],
    "perturb": ["--type", "GB", "--level", "1", "no.png", "{out}/o.png"],
    "robustness": [
        "--detector",
        "meso4",
        "--weights",
        "no.h5",
        "--test-data",
        "d",
        "--out",
        "{out}",
    ],
    "export": ["no_run", "--out", "{out}"],
    "audit": ["--data", "no_such_index", "--out", "{out}"],
    "calibrate": ["--predictions", "no.csv", "--method", "platt", "--out", "{out}/c.json"],
    "board": ["define", "--test-data", "no_index", "--data-root", ".", "--out", "{out}/d.json"],
}


def _run_verb(verb: str, argv: list[str], cwd: Path) -> tuple[int, str, bool]:
    """(exit code, stderr, whether torch was imported) of ``fairforensics VERB ARGV``."""
    code = (
        "import sys\n"
        "from fairforensics.cli import main\n"
        "try:\n"
        f"    main({[verb, *argv]!r})\n"
        "except SystemExit as stop:\n"
        "    print('@@', stop.code, 'torch' in sys.modules, file=sys.__stderr__)\n"
    )
    done = _python(code, cwd=cwd)
    last = done.stderr.strip().splitlines()[-1].split()
    assert last[0] == "@@", done.stderr[-2000:]
    return int(last[1]), done.stderr, last[2] == "True"


@pytest.mark.parametrize("verb", list(VERBS))
def test_value_errors_of_every_verb_import_no_torch(verb: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    argv = [a.format(file=tmp_path / "file", folder=tmp_path) for a in VALUE_ERRORS[verb]]
    code, err, torch_loaded = _run_verb(verb, argv, tmp_path)
    assert code == 2 and "error" in err, err[-2000:]
    assert not torch_loaded, f"{verb}: torch imported before the argument error"


@pytest.mark.parametrize("verb", sorted(UNWRITABLE_OUT))
def test_an_unwritable_output_fails_before_any_work(verb: str, tmp_path: Path) -> None:
    """A file where the output folder must go: one line naming it, exit 2, no torch loaded
    (so nothing was scored, trained or decoded first)."""
    blocker = tmp_path / "taken"
    blocker.write_text("a file, not a folder")
    argv = [a.format(out=blocker) for a in UNWRITABLE_OUT[verb]]
    code, err, torch_loaded = _run_verb(verb, argv, tmp_path)
    assert code == 2 and str(blocker) in err and "not writable" in err, err[-2000:]
    assert not torch_loaded, f"{verb}: torch imported before the output folder was checked"


def test_test_predictions_imports_no_torch(tmp_path: Path) -> None:
    """``test --predictions`` (issue 47) scores no model: its whole run, tables and report
    included, loads no torch, and a detector's type in its tables (a built-in's family read
    from the source, an unknown name's ``Other``) is the registry's."""
    rows = "".join(
        f"SYN,v{k // 4},{k % 4},{k // 4 % 2},{(k // 4 % 2 + k % 7 / 10) / 2},"
        f"{'real' if k // 4 % 2 == 0 else 'FS'}\n"
        for k in range(96)
    )
    csv = tmp_path / "SYN.csv"
    csv.write_text("dataset,video_id,frame,label,score,method\n" + rows)
    code = (
        "import json, sys\n"
        "from fairforensics.cli.test import main\n"
        "from fairforensics.configs.detector_source import builtin_detectors\n"
        "from fairforensics.evaluation.tables import detector_type\n"
        f"code = main(['--predictions', 'SYN={csv}', '--name', 'xception', '--out', "
        f"{str(tmp_path / 'out')!r}, '--set', 'n_boot=20'])\n"
        "names = [*builtin_detectors(), 'det00']\n"
        "types = {name: detector_type(name) for name in names}\n"
        "print(json.dumps([code, 'torch' in sys.modules, types]), file=sys.__stderr__)\n"
    )
    done = _python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    code, torch_loaded, types = json.loads(done.stderr.strip().splitlines()[-1])
    assert code == 0 and (tmp_path / "out" / "report.html").is_file()
    assert not torch_loaded, "test --predictions imported torch"
    from fairforensics.detectors.registry import detector_family
    from fairforensics.evaluation.tables import detector_type

    assert detector_type("det00") == "Other"  # the registry's answers (it is loaded here)
    assert len(types) > 20 and types == {name: detector_type(name) for name in types}
    table = json.loads((tmp_path / "out" / "tables" / "frame_auc.json").read_text())
    assert [row["Type"] for row in table["rows"]] == [detector_family("xception")]
