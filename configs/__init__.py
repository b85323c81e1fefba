"""YAML configuration files and the typed loader that validates them.

Layering is always ``dataclass defaults < YAML file(s) < CLI --set a.b=c``. A config schema is a
(nested) dataclass; ``load_config`` merges the layers and checks every key and type, so an
unknown key or a wrong value fails with the file, the dotted key and what is allowed.
"""

from fairforensics.configs.loader import (
    CONFIG_DIR,
    CONFIG_KINDS,
    ConfigError,
    build_config,
    config_to_dict,
    load_config,
    load_yaml,
    parse_overrides,
    resolve_config,
    shipped_configs,
)
from fairforensics.configs.plugins import import_modules

__all__ = [
    "CONFIG_DIR",
    "CONFIG_KINDS",
    "ConfigError",
    "build_config",
    "config_to_dict",
    "import_modules",
    "load_config",
    "load_yaml",
    "parse_overrides",
    "resolve_config",
    "shipped_configs",
]
