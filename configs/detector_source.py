"""What the built-in detectors' source says about them, read without importing them or torch.

The detector registry (:mod:`fairforensics.detectors.registry`) imports torch, since it holds
:class:`~fairforensics.detectors.Detector` classes; importing any module of the
``fairforensics.detectors`` package runs the package's ``__init__`` and so imports torch too.
This module lives outside that package and reads the package's files with :mod:`ast`: the
registry builds its table of built-in detectors on it, and commands that only need a detector's
leaderboard type (``test --predictions``'s tables) ask :func:`family_without_import`.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

#: Entry-point group of installed detector plugins (loaded by the registry on first lookup).
ENTRY_POINT_GROUP = "fairforensics.detectors"
PACKAGE = "fairforensics.detectors"
REGISTRY_MODULE = "fairforensics.detectors.registry"


def package_dir() -> Path:
    """The folder of the ``fairforensics.detectors`` package (found, not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"no package {PACKAGE}")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def class_input_kind(node: ast.ClassDef) -> str | None:
    """The constant a class body assigns to ``input_kind`` (None when it assigns none)."""
    for stmt in node.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        if any(getattr(t, "id", None) == "input_kind" for t in targets):
            if isinstance(value, ast.Constant):
                return str(value.value)
    return None


@cache
def builtin_detectors(folder: Path | None = None) -> dict[str, tuple[str, str | None, str | None]]:
    """Detector name -> (module path, family, input kind) of every ``@register_detector("name")``
    in the package's source (``folder``: the package's folder, found when None). The family is
    None when the decorator names none; the input kind is that of the class or of the package's
    class it derives from, None when none of them assigns one (then it is ``Detector``'s)."""
    folder = package_dir() if folder is None else folder
    found: dict[str, tuple[str, str | None, str | None]] = {}
    classes: dict[str, tuple[list[str], str | None]] = {}  # class name -> (bases, input_kind)
    registered: list[tuple[str, str, str | None, str]] = []  # (name, module, family, class)
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = ".".join((PACKAGE, *path.relative_to(folder).with_suffix("").parts))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
            classes[node.name] = (bases, class_input_kind(node))
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and getattr(deco.func, "id", getattr(deco.func, "attr", None))
                    == "register_detector"
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                ):
                    family = next(
                        (
                            kw.value.value
                            for kw in deco.keywords
                            if kw.arg == "family" and isinstance(kw.value, ast.Constant)
                        ),
                        None,
                    )
                    registered.append((str(deco.args[0].value), module, family, node.name))
    for name, module, family, cls in registered:
        kind, seen = None, set()
        while kind is None and cls in classes and cls not in seen:
            seen.add(cls)
            bases, kind = classes[cls]
            cls = bases[0] if bases else ""
        found[name] = (module, family, kind)
    return found


def family_without_import(name: str) -> str | None:
    """The leaderboard type of detector ``name`` as the registry would give it, when that can be
    told without importing the registry (so torch): the registry is not loaded (so nothing was
    registered at run time), and ``name`` is a built-in whose decorator names its family, or no
    built-in while no plugin is installed (``Other``). None: ask the registry."""
    if REGISTRY_MODULE in sys.modules:
        return None
    builtin = builtin_detectors().get(name)
    if builtin is not None:
        return builtin[1]  # None (no family: the class's input kind decides) asks the registry
    if any(True for _ in metadata.entry_points(group=ENTRY_POINT_GROUP)):
        return None  # a plugin may register it
    return "Other"
