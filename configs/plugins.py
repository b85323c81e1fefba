"""User modules named on the command line (``--import MODULE`` of every script).

Importing a module lets it register what it defines (a detector with
``detectors.register_detector``, a dataset layout with ``preprocessing.datasets.register_dataset``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from fairforensics.configs.loader import ConfigError


def import_modules(modules: Sequence[str]) -> None:
    """Import user modules (``--import MODULE`` of the commands); errors name the module."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(
                f"--import {module}: cannot import it ({exc}); put its folder on PYTHONPATH "
                "or install it"
            ) from None
