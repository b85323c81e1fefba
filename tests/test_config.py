"""The typed YAML config layer: layering, validation and its error messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from fairforensics.configs import ConfigError, config_to_dict, load_config, parse_overrides


@dataclass
class Optim:
    name: Literal["adam", "sgd"] = "adam"
    lr: float = 2e-4
    betas: tuple[float, float] = (0.9, 0.999)


@dataclass
class Cfg:
    epochs: int = 10
    data: list[str] = field(default_factory=lambda: ["FF-c23"])
    optim: Optim = field(default_factory=Optim)
    note: str | None = None
    amp: bool = True


def write(tmp_path, text: str):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def test_layering_defaults_file_overrides(tmp_path) -> None:
    path = write(tmp_path, "epochs: 3\noptim:\n  lr: 0.001\n")
    cfg = load_config(Cfg, path, overrides=["optim.name=sgd", "data=[a, b]", "note=hi"])
    assert cfg.epochs == 3 and cfg.optim.lr == 0.001 and cfg.optim.name == "sgd"
    assert cfg.data == ["a", "b"] and cfg.note == "hi" and cfg.amp is True
    assert cfg.optim.betas == (0.9, 0.999)
    assert config_to_dict(cfg)["optim"] == {"name": "sgd", "lr": 0.001, "betas": [0.9, 0.999]}


def test_int_and_exponent_are_accepted_as_float(tmp_path) -> None:
    assert load_config(Cfg, write(tmp_path, "optim: {lr: 1}")).optim.lr == 1.0
    # YAML 1.1 reads 1e-3 (no dot) as a string; a float field still takes it.
    assert load_config(Cfg, write(tmp_path, "optim: {lr: 1e-3}")).optim.lr == 0.001
    assert load_config(Cfg, overrides=["optim.lr=2e-4"]).optim.lr == 0.0002
    with pytest.raises(ConfigError, match="expects a number"):
        load_config(Cfg, overrides=["optim.lr=fast"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("epoch: 3", "unknown key 'epoch'; allowed keys here: amp, data, epochs, note, optim"),
        ("optim: {lrate: 1}", "unknown key 'optim.lrate'"),
        ("epochs: three", "key 'epochs' expects an integer, got 'three'"),
        ("epochs: true", "key 'epochs' expects an integer"),
        ("amp: 1", "key 'amp' expects true or false"),
        ("optim: {name: rmsprop}", "allowed values: 'adam', 'sgd'"),
        ("optim: {betas: [0.9]}", "key 'optim.betas' expects 2 items"),
        ("data: FF", "key 'data' expects a list"),
        ("optim: 3", "key 'optim' expects a mapping"),
    ],
)
def test_bad_values_name_file_key_and_allowed(tmp_path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(Cfg, path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_missing_and_malformed_files(tmp_path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(Cfg, tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(Cfg, write(tmp_path, "epochs: [1,"))
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(Cfg, write(tmp_path, "- 1\n- 2\n"))


def test_bad_override_syntax() -> None:
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_overrides(["epochs"])
    with pytest.raises(ConfigError, match="unknown key 'optim.x'"):
        load_config(Cfg, overrides=["optim.x=1"])


def test_every_problem_of_a_config_in_one_error(tmp_path) -> None:
    """Unknown keys and bad values anywhere in the config come in one error (issue 31, item 3),
    numbered, each naming its key; one problem alone reads as before."""
    path = write(tmp_path, "epoch: 3\namp: 1\noptim: {name: rmsprop, lrate: 1}\n")
    with pytest.raises(ConfigError) as err:
        load_config(Cfg, path, overrides=["data=FF"])
    message = str(err.value)
    assert message.startswith(f"{path} + --set: 5 problems: (1) unknown key 'epoch'")
    for expected in (
        "(2) key 'data' expects a list",
        "(3) unknown key 'optim.lrate'",
        "(4) key 'optim.name' has value 'rmsprop'",
        "(5) key 'amp' expects true or false",
    ):
        assert expected in message, message
    assert "\n" not in message
    with pytest.raises(ConfigError) as err:
        load_config(Cfg, path.parent / write(tmp_path, "amp: 1").name)
    assert str(err.value) == f"{path}: key 'amp' expects true or false, got 1"
