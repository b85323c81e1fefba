"""User modules named on the command line (``--import MODULE`` of every script).

Importing a module lets it register what it defines (a detector with
``detectors.register_detector``, a dataset layout with ``preprocessing.datasets.register_dataset``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from fairforensics.configs.loader import ConfigError


def import_modules(modules: Sequence[str]) -> None:
    """Import user modules (``--import MODULE`` of the commands); errors name the module and tell
    a module that is not found from one that fails while it is imported (e.g. a package it needs
    is missing)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and f"{module}.".startswith(f"{exc.name}."):
                raise ConfigError(
                    f"--import {module}: cannot import it ({exc}); put its folder on PYTHONPATH "
                    "or install it"
                ) from None
            raise _failed(module, exc) from None  # a module it imports is missing
        except Exception as exc:  # noqa: BLE001 - a user's module fails in many ways
            raise _failed(module, exc) from None


def _failed(module: str, exc: Exception) -> ConfigError:
    """The error for a module that was found but failed while it was imported."""
    return ConfigError(f"--import {module}: importing it failed: {exc!r}")
