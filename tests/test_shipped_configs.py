"""Configs by name (issue 23, item 6): every command's config resolves to the YAML shipped in the
package when the working folder has no such file (a file there wins); ``fairforensics --help``
lists the verbs; help texts point to guides that exist where the package is installed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fairforensics.benchmarks.sweep import Sweep, SweepError, run_sweep
from fairforensics.cli import VERBS
from fairforensics.cli import main as fairforensics_main
from fairforensics.cli.helptext import docs_dir
from fairforensics.configs import CONFIG_DIR, ConfigError, resolve_config, shipped_configs
from fairforensics.detectors import build_detector, load_detector_yaml
from fairforensics.evaluation.settings import load_test_config
from fairforensics.fairness.metamorphic.relations import load_relations
from fairforensics.fairness.protocols import load_protocol
from fairforensics.fairness.report import load_report_config
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.training.config import load_train_config

FF_C23 = CONFIG_DIR / "preprocess" / "FF-c23.yaml"


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder outside the checkout, as for a user of the installed package."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "name",
    ["FF-c23", "FF-c23.yaml", "preprocess/FF-c23", "configs/preprocess/FF-c23.yaml", FF_C23],
)
def test_names_and_checkout_paths_resolve_to_the_shipped_config(elsewhere, name) -> None:
    assert resolve_config(name, "preprocess") == FF_C23
    assert load_preprocess_config(name).dataset.name == "FF-c23"


def test_a_file_in_the_working_folder_wins(elsewhere) -> None:
    (elsewhere / "FF-c23.yaml").write_text("dataset: {name: mine, type: faceforensics, root: r}\n")
    mine = elsewhere / "configs" / "preprocess" / "FF-c23.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("dataset: {name: mine2, type: faceforensics, root: r}\n")
    assert load_preprocess_config("FF-c23").dataset.name == "mine"
    assert load_preprocess_config("FF-c23.yaml").dataset.name == "mine"
    assert load_preprocess_config("configs/preprocess/FF-c23.yaml").dataset.name == "mine2"
    assert resolve_config("DFDC", "preprocess") == CONFIG_DIR / "preprocess" / "DFDC.yaml"


def test_a_missing_config_lists_what_is_shipped(elsewhere) -> None:
    with pytest.raises(ConfigError) as info:
        load_preprocess_config("FF-c24")
    message = str(info.value)
    assert message.startswith("FF-c24: config file not found in the working folder")
    assert all(name in message for name in shipped_configs("preprocess"))
    assert {"FF-c23", "DFDC", "Celeb-DF-v2", "demo"} <= set(shipped_configs("preprocess"))
    with pytest.raises(ConfigError, match="shipped train configs.*deepfakebench"):
        load_train_config("meso4", "nope")
    # a path outside the package never turns into a shipped file
    with pytest.raises(ConfigError, match="not found"):
        resolve_config("../preprocess/FF-c23.yaml", "preprocess")


def test_every_command_takes_shipped_names(elsewhere) -> None:
    train = load_train_config("meso4", "demo", detector_yaml="paper/meso4")
    assert train.detector == "meso4" and train.data.train_data == ["demo"]
    assert load_detector_yaml("meso4", "meso4") == load_detector_yaml("meso4")
    assert build_detector("meso4", "paper/meso4") is not None
    assert load_test_config("default") == load_test_config()
    assert load_report_config("report").alpha == 0.5
    assert load_protocol("protocol_1").name and load_protocol("demo").train_attribute == "lighting"
    cfg, transforms = load_relations("makeup")
    assert cfg.cases and set(transforms) == {c.id for c in cfg.cases}


def test_benchmark_recipe_by_name(elsewhere) -> None:
    commands: list[list[str]] = []

    def runner(cmd: list[str]) -> None:
        commands.append(cmd)
        raise SweepError("stop after the first command")

    sweep = Sweep(detectors=["meso4"], out=elsewhere / "sweep", recipe=Path("demo"))
    with pytest.raises(SweepError, match="stop"):
        run_sweep(sweep, runner)
    (train,) = commands
    assert train[train.index("--config") + 1] == str(CONFIG_DIR / "train" / "demo.yaml")
    with pytest.raises(ConfigError, match="shipped train configs"):
        run_sweep(Sweep(detectors=["meso4"], out=elsewhere / "s2", recipe=Path("nope")), runner)


def test_fairforensics_help_lists_every_verb(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        fairforensics_main(["--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0
    for verb in VERBS:  # one line each: the verb and its summary
        assert re.search(rf"^  {verb} +\S.{{20,}}$", out, re.M), verb
    assert f"guides: {docs_dir()}" in out and "--config FF-c23" in out
    with pytest.raises(SystemExit) as info:
        fairforensics_main([])
    assert info.value.code == 2 and "preprocess" in capsys.readouterr().err


@pytest.mark.parametrize("verb", list(VERBS))
def test_help_points_to_guides_that_exist(verb, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        fairforensics_main([verb, "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert info.value.code == 0
    (guide,) = re.findall(r"guide: (\S+\.md)", out)
    assert Path(guide).is_file() and Path(guide).parent == docs_dir()
    assert "docs/" not in out.replace(str(docs_dir()), "")  # no path a pip user lacks
