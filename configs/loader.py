"""Typed, validated configuration: dataclass defaults < YAML files < ``--set key=value``."""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml

#: the YAML files shipped in this package (package data, found through importlib.resources)
CONFIG_DIR = Path(str(resources.files(__package__)))
#: the folders of :data:`CONFIG_DIR`, one per kind of config (what a bare name is looked up in)
CONFIG_KINDS = ("preprocess", "detectors", "train", "test", "fairness", "metamorphic", "protocols")
T = TypeVar("T")
log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A configuration file or override is missing, malformed, or has a bad key or value."""


class ConfigProblems(ConfigError):
    """Every bad key and value found in one config (``source``), reported in one message."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}: {join_problems(problems)}")
        self.source = source
        self.problems = problems


def join_problems(problems: list[str]) -> str:
    """One problem as it is; several as ``N problems: (1) ...; (2) ...`` (one line, so that a
    command shows them all in one ``error:`` line)."""
    if len(problems) == 1:
        return problems[0]
    listed = "; ".join(f"({n}) {problem}" for n, problem in enumerate(problems, start=1))
    return f"{len(problems)} problems: {listed}"


def shipped_configs(kind: str | None = None) -> list[str]:
    """Names of the shipped configs of ``kind`` (``"FF-c23"``, ``"paper/ucf"``), or of all kinds
    as ``"<kind>/<name>"`` when ``kind`` is None."""
    folder = CONFIG_DIR / kind if kind else CONFIG_DIR
    return sorted(p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.yaml"))


def _yaml_names(path: Path) -> list[Path]:
    """``path`` and, unless it already ends in .yaml/.yml, ``path`` + ``.yaml``."""
    if path.suffix in (".yaml", ".yml"):
        return [path]
    return [path, path.with_name(path.name + ".yaml")]


def resolve_config(path: str | Path, kind: str | None = None) -> Path:
    """The YAML file that ``path`` names: a file in the working folder (or an absolute path)
    wins; otherwise a config shipped in this package, found as ``configs/<kind>/<name>.yaml``
    from ``<name>``, ``<name>.yaml``, ``<kind>/<name>.yaml`` or ``configs/<kind>/<name>.yaml``.

    ``kind`` is a folder of :data:`CONFIG_KINDS` (what a bare name means). Nothing found is a
    :class:`ConfigError` that lists the shipped configs of ``kind``.
    """
    if kind is not None and kind not in CONFIG_KINDS:
        raise ValueError(f"unknown config kind {kind!r}; allowed: {', '.join(CONFIG_KINDS)}")
    given = Path(path).expanduser()
    for candidate in _yaml_names(given):
        if candidate.is_file():
            return candidate
    parts = given.parts[1:] if given.parts[:1] == ("configs",) else given.parts
    if not given.is_absolute() and parts and ".." not in parts:
        rels = [Path(*parts)] + ([Path(kind, *parts)] if kind else [])
        for candidate in (CONFIG_DIR / n for rel in rels for n in _yaml_names(rel)):
            if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
                log.info("config %s: %s, shipped with fairforensics", path, candidate)
                return candidate
    if kind:
        shipped = f"the shipped {kind} configs ({', '.join(shipped_configs(kind)) or 'none'})"
    else:
        shipped = f"the shipped configs (<kind>/<name>, kind one of {', '.join(CONFIG_KINDS)})"
    raise ConfigError(
        f"{path}: config file not found in the working folder ({Path.cwd()}) nor among "
        f"{shipped}; give a YAML path or a shipped name"
    )


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read one YAML mapping with ``yaml.safe_load``; errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, got {type(data).__name__}")
    return data


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """Turn ``["a.b=1", "c=[x, y]"]`` into a nested dict; values are parsed as YAML scalars."""
    nested: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, for example train.lr=1e-4")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {item!r}: value is not valid YAML: {exc}") from None
        node = nested
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r}: {part!r} is set both as a value and a section")
        node[parts[-1]] = value
    return nested


def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; mappings merge, everything else in ``update`` replaces."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def build_config(schema: type[T], data: Mapping[str, Any], source: str = "<config>") -> T:
    """Validate ``data`` against the dataclass ``schema`` and build it (defaults fill gaps)."""
    return _convert(schema, data, key="", source=source)


def load_config(
    schema: type[T],
    *paths: str | Path | None,
    overrides: Iterable[str] | Mapping[str, Any] = (),
    base: Mapping[str, Any] | None = None,
    kind: str | None = None,
) -> T:
    """Load ``schema`` from defaults < ``base`` < each YAML in ``paths`` < ``overrides``.

    Each path goes through :func:`resolve_config` (``kind``: the shipped folder a bare name is
    looked up in). ``overrides`` are ``KEY=VALUE`` strings (CLI ``--set``) or a nested mapping.
    """
    data: dict[str, Any] = dict(base or {})
    sources = []
    for path in paths:
        if path is None:
            continue
        path = resolve_config(path, kind)
        data = deep_merge(data, load_yaml(path))
        sources.append(str(path))
    if overrides:
        over = overrides if isinstance(overrides, Mapping) else parse_overrides(overrides)
        data = deep_merge(data, over)
        sources.append("--set")
    return build_config(schema, data, source=" + ".join(sources) or "<defaults>")


def config_to_dict(cfg: Any) -> Any:
    """A plain, YAML/JSON-able copy of a config dataclass (tuples become lists)."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return {f.name: config_to_dict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, Mapping):
        return {k: config_to_dict(v) for k, v in cfg.items()}
    if isinstance(cfg, (list, tuple)):
        return [config_to_dict(v) for v in cfg]
    return cfg


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _fail(source: str, key: str, message: str) -> typing.NoReturn:
    raise ConfigProblems(source, [f"key '{key or '<root>'}' {message}"])


def _float_literal(text: str) -> float | str:
    """``"1e-3"`` -> 0.001: YAML 1.1 reads exponents without a dot as strings."""
    try:
        return float(text)
    except ValueError:
        return text


def _convert(tp: Any, value: Any, key: str, source: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        return _convert_dataclass(tp, value, key, source)
    if origin is typing.Literal:
        if value not in args:
            allowed = ", ".join(repr(a) for a in args)
            _fail(source, key, f"has value {value!r}; allowed values: {allowed}")
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        sections = [a for a in args if dataclasses.is_dataclass(a)]
        if len(sections) == 1 and isinstance(value, Mapping):  # a section: name its bad key
            return _convert(sections[0], value, key, source)
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, key, source)
            except ConfigError:
                continue
        allowed = " or ".join(_type_name(a) for a in args)
        _fail(source, key, f"has value {value!r}; expected {allowed}")
    if origin in (list, tuple) or tp in (list, tuple):
        if not isinstance(value, (list, tuple)):
            _fail(source, key, f"expects a list, got {value!r}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                _fail(source, key, f"expects {len(args)} items, got {len(value)}")
            return tuple(
                _convert(a, v, f"{key}[{i}]", source)
                for i, (a, v) in enumerate(zip(args, value, strict=True))
            )
        item_tp = args[0] if args else Any
        items = [_convert(item_tp, v, f"{key}[{i}]", source) for i, v in enumerate(value)]
        return tuple(items) if (origin is tuple or tp is tuple) else items
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            _fail(source, key, f"expects a mapping, got {value!r}")
        val_tp = args[1] if len(args) == 2 else Any
        return {str(k): _convert(val_tp, v, f"{key}.{k}", source) for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            _fail(source, key, f"expects true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(source, key, f"expects an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):
            value = _float_literal(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(source, key, f"expects a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            _fail(source, key, f"expects a string, got {value!r}")
        return value
    if tp is type(None):
        if value is not None:
            _fail(source, key, f"expects null, got {value!r}")
        return None
    if isinstance(value, tp):
        return value
    _fail(source, key, f"expects {_type_name(tp)}, got {value!r}")


def _convert_dataclass(schema: Any, value: Any, key: str, source: str) -> Any:
    if dataclasses.is_dataclass(value) and isinstance(value, schema):
        return value
    if not isinstance(value, Mapping):
        _fail(source, key, f"expects a mapping (section {schema.__name__}), got {value!r}")
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema) if f.init}
    problems = []  # every unknown key and bad value of this section and the ones below it
    for unknown in sorted(set(value) - set(fields)):
        name = f"{key}.{unknown}" if key else str(unknown)
        problems.append(f"unknown key '{name}'; allowed keys here: {', '.join(sorted(fields))}")
    kwargs = {}
    for name, field in fields.items():
        sub = f"{key}.{name}" if key else name
        try:
            if name in value:
                kwargs[name] = _convert(hints[name], value[name], sub, source)
            elif (
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING
            ):
                _fail(source, sub, "is required but missing")
        except ConfigProblems as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigProblems(source, problems)
    try:
        return schema(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigProblems(source, [f"section '{key or '<root>'}': {exc}"]) from None
