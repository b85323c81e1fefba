"""Name -> detector class registry, in the shape of timm's ``create_model``.

Built-in detector modules are found by reading the source of ``detectors/**/*.py`` for
``@register_detector("name")`` without importing them, so listing detectors never imports a
detector's optional dependencies, and building one imports only its own module.
A user's detector registers itself when its module is imported: by the user's code, by
``--import MODULE`` on every command (:func:`configs.import_modules`), or through the entry-point group
``fairforensics.detectors`` of an installed package (loaded on first lookup).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from collections.abc import Callable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from fairforensics.configs import (
    CONFIG_DIR,
    ConfigError,
    build_config,
    load_yaml,
    resolve_config,
)
from fairforensics.configs.crop import expected_crop
from fairforensics.configs.detector_source import ENTRY_POINT_GROUP, builtin_detectors
from fairforensics.configs.loader import deep_merge
from fairforensics.detectors.base import Detector, DetectorConfig

log = logging.getLogger(__name__)

_PACKAGE_DIR = Path(__file__).resolve().parent
_REGISTRY: dict[str, type[Detector]] = {}
#: Entry-point name -> the import failure of that detector plugin (filled by load_entry_points).
_FAILED_PLUGINS: dict[str, str] = {}
D = TypeVar("D", bound=type[Detector])


def register_detector(name: str, *, family: str | None = None) -> Callable[[D], D]:
    """Class decorator: make ``cls`` buildable as ``build_detector(name)``; ``family`` is its
    leaderboard type (``Detector.family``; ``Other`` when not given)."""

    def wrap(cls: D) -> D:
        if not (isinstance(cls, type) and issubclass(cls, Detector)):
            raise TypeError(f"@register_detector({name!r}) must decorate a Detector subclass")
        known = _REGISTRY.get(name)
        if known is not None and known is not cls and known.__qualname__ != cls.__qualname__:
            raise ValueError(f"detector name {name!r} is already registered by {known.__module__}")
        cls.name = name
        if family is not None:
            cls.family = family
        _REGISTRY[name] = cls
        return cls

    return wrap


@cache
def _builtin_decorators() -> dict[str, tuple[str, str | None, str]]:
    """Detector name -> (module path, family, input kind), read from the package's source: the
    decorators, and ``input_kind`` of the class or of the package's class it derives from
    (:func:`configs.detector_source.builtin_detectors`; ``Detector``'s when none assigns one)."""
    return {
        name: (module, family, kind or Detector.input_kind)
        for name, (module, family, kind) in builtin_detectors(_PACKAGE_DIR).items()
    }


def _builtin_modules() -> dict[str, str]:
    """Detector name -> module path of the built-in detectors."""
    return {name: module for name, (module, _, _) in _builtin_decorators().items()}


@cache
def load_entry_points() -> list[str]:
    """Import the modules of the ``fairforensics.detectors`` entry points (once); a plugin that
    fails to import is logged and skipped, so it cannot break the other detectors, and its
    failure is kept for the error of an unknown detector (:func:`plugin_failures`)."""
    loaded = []
    _FAILED_PLUGINS.clear()
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin fails in many ways
            failure = f"detector plugin {ep.name} ({ep.value}) failed to import: {exc!r}"
            log.warning("%s", failure)
            _FAILED_PLUGINS[ep.name] = failure
            continue
        loaded.append(ep.name)
    return loaded


def plugin_failures() -> dict[str, str]:
    """Entry-point name -> why that detector plugin failed to import (after the first lookup)."""
    load_entry_points()
    return dict(_FAILED_PLUGINS)


def plugin_failure_note(name: str) -> str:
    """``""``, or ``"; "`` + the import failure of each detector plugin that failed (the entry
    point called ``name`` first): the error of an unknown detector ``name`` adds it, since the
    detector may be one of theirs."""
    failed = plugin_failures()
    notes = [failed.pop(name)] if name in failed else []
    return "".join(f"; {note}" for note in [*notes, *failed.values()])


def detector_family(name: str) -> str:
    """The leaderboard type of detector ``name`` (``Other`` for an unknown name), without
    importing a built-in detector's module."""
    if name in _REGISTRY:
        return _REGISTRY[name].family
    builtin = _builtin_decorators().get(name)
    if builtin is not None:
        return builtin[1] or Detector.family
    load_entry_points()
    return _REGISTRY[name].family if name in _REGISTRY else Detector.family


def detector_input_kind(name: str) -> str:
    """``frame`` or ``clip`` (:attr:`Detector.input_kind`) of detector ``name``, without
    importing a built-in detector's module (a KeyError for an unknown name)."""
    if name in _REGISTRY:
        return _REGISTRY[name].input_kind
    builtin = _builtin_decorators().get(name)
    if builtin is not None:
        return builtin[2]
    return get_detector_class(name).input_kind


def list_detectors() -> list[str]:
    """Names of every built-in and user-registered detector (and entry-point plugin), sorted."""
    load_entry_points()
    return sorted(set(_builtin_modules()) | set(_REGISTRY))


def get_detector_class(name: str) -> type[Detector]:
    """The class registered as ``name``, importing its module on first use."""
    if name not in _REGISTRY and name in _builtin_modules():
        importlib.import_module(_builtin_modules()[name])
    if name not in _REGISTRY:
        load_entry_points()
    if name not in _REGISTRY:
        raise KeyError(
            f"unknown detector {name!r}{plugin_failure_note(name)}; "
            f"known detectors: {', '.join(list_detectors())}"
        )
    return _REGISTRY[name]


#: Variants a detector YAML can be chosen by: DeepfakeBench's exact model (the default) and the
#: paper-faithful model (``configs/detectors/paper/<name>.yaml``).
VARIANTS = ("deepfakebench", "paper")


def detector_config_path(name: str, variant: str | None = None) -> Path:
    """``configs/detectors/<name>.yaml``, or ``configs/detectors/paper/<name>.yaml`` for ``paper``."""
    if variant not in (None, *VARIANTS):
        raise ConfigError(f"unknown variant {variant!r}; allowed values: {', '.join(VARIANTS)}")
    if variant == "paper":
        return CONFIG_DIR / "detectors" / "paper" / f"{name}.yaml"
    return CONFIG_DIR / "detectors" / f"{name}.yaml"


def load_detector_yaml(
    name: str, path: str | Path | None = None, variant: str | None = None
) -> dict[str, Any]:
    """The raw detector YAML (sections ``detector``, ``model``, ``train``, ``crop``); {} when
    absent. ``crop`` (the face crop the detector's weights were trained on) is validated here:
    read it with :func:`configs.crop.expected_crop`.

    ``variant="paper"`` reads ``configs/detectors/paper/<name>.yaml`` (an error when the
    detector has none); an explicit ``path`` wins over ``variant``.
    """
    if path is None:
        path = detector_config_path(name, variant)
    else:
        path = resolve_config(path, "detectors")
    if not path.is_file():
        if path == detector_config_path(name):
            return {}
        if path == detector_config_path(name, "paper"):
            raise ConfigError(
                f"{path}: detector {name!r} has no paper variant (its model is DeepfakeBench's); "
                "drop --variant paper"
            )
        raise ConfigError(f"{path}: detector config not found")
    data = load_yaml(path)
    unknown = sorted(set(data) - {"detector", "model", "train", "crop"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown key '{unknown[0]}'; allowed keys here: crop, detector, model, train"
        )
    expected_crop(data, f"{path} (crop)")  # a bad crop section fails here, naming the file
    if data.get("detector", name) != name:
        raise ConfigError(
            f"{path}: key 'detector' is {data['detector']!r} but {name!r} was asked for"
        )
    return data


def build_detector(
    name: str,
    cfg: DetectorConfig | Mapping[str, Any] | str | Path | None = None,
    *,
    variant: str | None = None,
    **overrides: Any,
) -> Detector:
    """Build detector ``name``.

    ``cfg``: ``None`` reads the ``model`` section of ``configs/detectors/<name>.yaml`` (or of
    ``configs/detectors/paper/<name>.yaml`` with ``variant="paper"``); a path (or a shipped
    config's name, e.g. ``"paper/ucf"``) reads that YAML's ``model`` section; a mapping or a
    config dataclass is used as given. ``variant`` also sets the config's ``variant`` field where
    the detector has one. ``overrides`` replace single fields last. Nothing is downloaded unless the config says ``pretrained: timm``.
    """
    cls = get_detector_class(name)
    source = f"detector {name!r}"
    if isinstance(cfg, DetectorConfig):
        data: dict[str, Any] = dataclasses.asdict(cfg)
    elif cfg is None or isinstance(cfg, (str, Path)):
        path = None if cfg is None else resolve_config(cfg, "detectors")
        data = dict(load_detector_yaml(name, path, variant).get("model") or {})
        default = path or detector_config_path(name, variant)
        source = str(default if default.is_file() else f"detector {name!r} defaults")
    elif isinstance(cfg, Mapping):
        data = dict(cfg)
    else:
        raise TypeError(
            f"cfg must be None, a path, a mapping or a DetectorConfig, got {type(cfg).__name__}"
        )
    if variant is not None:
        detector_config_path(name, variant)  # validates the variant's name
        if "variant" in {f.name for f in dataclasses.fields(cls.Config)}:
            data["variant"] = variant
        elif variant == "paper" and cfg is not None and not isinstance(cfg, (str, Path)):
            raise ConfigError(f"detector {name!r} has no paper variant (no 'variant' field)")
    data = deep_merge(data, overrides)
    config = build_config(cls.Config, data, source=source)
    from fairforensics.detectors.backbones import pretrained_strictness
    from fairforensics.detectors.deepfakebench import build_from_detector_file

    with pretrained_strictness(getattr(config, "pretrained_strict", True)):
        return build_from_detector_file(cls, config) or cls(config)
