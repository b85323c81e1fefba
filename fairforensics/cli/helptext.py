"""Help texts that stay true for an installed copy: the guides (``docs/*.md``, installed as
``fairforensics/docs/``), the shipped configs a ``--config`` accepts, and one line per verb."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from fairforensics.configs import shipped_configs

_PACKAGE = Path(__file__).resolve().parents[1]

#: verb -> its guide in docs/
GUIDES = {
    "preprocess": "preprocessing.md",
    "train": "training.md",
    "test": "evaluation.md",
    "fairness": "fairness.md",
    "metamorphic": "metamorphic.md",
    "benchmark": "evaluation.md",
    "detect": "evaluation.md",
    "demographics": "fairness.md",
    "combine": "preprocessing.md",
    "detectors": "detectors.md",
    "perturb": "evaluation.md",
    "robustness": "evaluation.md",
    "export": "evaluation.md",
    "models": "evaluation.md",
    "audit": "evaluation.md",
    "verify": "preprocessing.md",
    "calibrate": "evaluation.md",
    "submit": "leaderboard.md",
    "board": "leaderboard.md",
}


def docs_dir() -> Path:
    """The guides: ``fairforensics/docs`` of an installed wheel, ``docs/`` of a checkout."""
    installed = _PACKAGE / "docs"
    return installed if installed.is_dir() else _PACKAGE.parent / "docs"


def guide(verb: str) -> str:
    """``guide: <path of the verb's guide>`` for a parser's epilog."""
    return f"guide: {docs_dir() / GUIDES[verb]} (all guides: {docs_dir()})"


def config_help(kind: str, what: str, names: list[str] | None = None) -> str:
    """``--config`` help: ``what``, then the shipped configs of ``kind`` it may name."""
    names = shipped_configs(kind) if names is None else names
    return f"{what}: a YAML file, or a shipped config by name ({', '.join(names)})"


def summary(verb: str) -> str:
    """The first line of the verb's module docstring (read without importing the module)."""
    spec = importlib.util.find_spec(f"fairforensics.cli.{verb}")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return (ast.get_docstring(tree) or "").split("\n")[0]
