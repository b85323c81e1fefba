"""The zoo (issue 39, item 4): data kept in the package, consistent with the detector registry,
the export presets and the tests it names; ``fairforensics models`` lists it without torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fairforensics.configs.zoo import zoo
from fairforensics.detectors import get_detector_class, list_detectors
from fairforensics.evaluation.model_package.export import PRESETS

REPO = Path(__file__).resolve().parents[1]


def test_every_checkpoint_names_a_registered_detector_and_a_preset() -> None:
    entries = zoo()
    assert {e.source for e in entries} == {"deepfakebench", "mesonet", "df40"}
    for e in entries:
        assert e.detector in list_detectors(), e
        assert e.preset in PRESETS, e
        assert e.published.startswith("https://") and e.licence, e
    files = [(e.source, e.file) for e in entries]
    assert len(files) == len(set(files))


def test_deepfakebench_files_are_named_after_the_detectors_deepfakebench_config() -> None:
    """``<DeepfakeBench name>_best.pth``: the name ``benchmark --weights-dir`` looks for."""
    from fairforensics.benchmarks.sweep import WEIGHT_NAMES

    entries = [e for e in zoo() if e.source == "deepfakebench"]
    assert len(entries) == 15  # DeepfakeBench v1's detectors
    for e in entries:
        dfb = get_detector_class(e.detector).deepfakebench_name
        assert e.file == WEIGHT_NAMES[0].format(dfb=dfb), e


def test_mesonet_files_go_to_detectors_that_read_keras_weights() -> None:
    entries = [e for e in zoo() if e.source == "mesonet"]
    assert sorted(e.file for e in entries) == [
        "Meso4_DF.h5", "Meso4_F2F.h5", "MesoInception_DF.h5", "MesoInception_F2F.h5"
    ]  # fmt: skip
    for e in entries:
        assert get_detector_class(e.detector).keras_weights, e
        assert e.detector == ("meso4" if e.file.startswith("Meso4") else "meso_inception4")


def test_a_checked_entry_names_a_test_that_exists_and_covers_its_file() -> None:
    for e in zoo():
        if e.checked is None:
            continue
        path, _, name = e.checked.partition("::")
        source = (REPO / path).read_text(encoding="utf-8")
        assert f"def {name}(" in source, e
        assert Path(e.file).stem in source, e  # the test runs this very file


def test_models_command_lists_the_zoo_without_torch() -> None:
    code = (
        "import sys\nfrom fairforensics.cli.models import main\n"
        "main(['--json'])\nprint('torch' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": ""}, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert len(listed) == len(zoo()) and done.stderr.strip() == "False"
    assert {"file", "detector", "published", "licence", "preset", "checked"} <= set(listed[0])


def test_models_of_an_unknown_detector_is_one_line(capsys) -> None:
    from fairforensics.cli.models import main
    from tests.test_cli import run_command

    code, err = run_command(main, ["--detector", "nope"], capsys)
    assert code == 2 and err.count("\n") == 1 and "no known public checkpoint" in err
