"""Named image transforms that metamorphic test cases apply to faces.

A transform is built from a name and a parameter mapping; it is called as
``transform(image, landmarks) -> (new_image, change_mask)`` on an RGB uint8 face and its 68
landmarks (``None`` allowed when ``needs_landmarks`` is false). Built-in: ``makeup``
(:class:`~fairness.metamorphic.makeup.MakeupConfig` parameters) and ``identity`` (a control that
changes nothing). Users add their own with :func:`register_transform`, or name a factory as
``"package.module:function"`` in the relations YAML.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from fairforensics.configs import ConfigError, build_config
from fairforensics.fairness.metamorphic.makeup import MakeupConfig, apply_makeup


class Transform(Protocol):
    """What a test case applies: ``(image, landmarks) -> (image, float mask of the change)``."""

    needs_landmarks: bool

    def __call__(
        self, image: np.ndarray, landmarks: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]: ...


Factory = Callable[[Mapping[str, Any]], Transform]
_TRANSFORMS: dict[str, Factory] = {}


def register_transform(name: str) -> Callable[[Factory], Factory]:
    """Decorator: make ``factory(params) -> Transform`` available as ``transform: name``."""

    def wrap(factory: Factory) -> Factory:
        _TRANSFORMS[name] = factory
        return factory

    return wrap


def list_transforms() -> list[str]:
    """Names of the registered transforms."""
    return sorted(_TRANSFORMS)


def build_transform(
    name: str, params: Mapping[str, Any] | None = None, source: str = ""
) -> Transform:
    """Build transform ``name`` (registered, or ``module:function``) with ``params``."""
    where = f"{source}: " if source else ""
    if name in _TRANSFORMS:
        factory = _TRANSFORMS[name]
    elif ":" in name:
        module, _, attr = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{where}transform {name!r} cannot be imported: {exc}") from None
    else:
        known = ", ".join(list_transforms())
        raise ConfigError(
            f"{where}unknown transform {name!r}; known: {known}, or 'package.module:function'"
        )
    try:
        transform = factory(dict(params or {}))
    except (ConfigError, ValueError, TypeError) as exc:
        raise ConfigError(f"{where}transform {name!r}: bad params: {exc}") from None
    if not callable(transform):
        raise ConfigError(f"{where}transform {name!r} did not build a callable")
    return transform


class MakeupTransform:
    """Digital makeup (paper 000) as a test-case transform."""

    needs_landmarks = True

    def __init__(self, cfg: MakeupConfig) -> None:
        self.cfg = cfg

    def __call__(
        self, image: np.ndarray, landmarks: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        return apply_makeup(image, landmarks, self.cfg)


class IdentityTransform:
    """Changes nothing: a control whose violation rate must be zero."""

    needs_landmarks = False

    def __call__(
        self, image: np.ndarray, landmarks: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        return image.copy(), np.zeros(image.shape[:2], dtype=np.float32)


@register_transform("makeup")
def _makeup(params: Mapping[str, Any]) -> Transform:
    return MakeupTransform(build_config(MakeupConfig, params, source="params"))


@register_transform("identity")
def _identity(params: Mapping[str, Any]) -> Transform:
    if params:
        raise ConfigError(f"transform 'identity' takes no params, got {sorted(params)}")
    return IdentityTransform()
