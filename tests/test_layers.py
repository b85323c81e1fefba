"""Every package imports only packages below it (DESIGN.md "Layers"), at module level and inside
functions alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# configs < preprocessing, detectors < evaluation < training, fairness < benchmarks
# < fairforensics (the commands) < scripts (their thin wrappers)
LEVELS = {
    "configs": 0,
    "preprocessing": 1,
    "detectors": 1,
    "evaluation": 2,
    "training": 3,
    "fairness": 3,
    "benchmarks": 4,
    "fairforensics": 5,
    "scripts": 6,
}


def imported_packages(source: str, filename: str) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in ``source``, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def violations(root: Path = REPO) -> list[str]:
    """``file:line: package -> module`` for every upward or sideways import."""
    bad = []
    for package, level in LEVELS.items():
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for line, module in imported_packages(path.read_text(encoding="utf-8"), rel):
                target = module.split(".")[0]
                if target != package and LEVELS.get(target, -1) >= level:
                    bad.append(f"{rel}:{line}: {package} -> {module}")
    return bad


def test_no_upward_or_sideways_import() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("package", "source", "expected"),
    [
        ("evaluation", "from training.data import x\n", "evaluation -> training.data"),
        ("preprocessing", "def f():\n    import detectors\n", "preprocessing -> detectors"),
        ("training", "from fairness import fairswap\n", "training -> fairness"),
        ("configs", "import evaluation.metrics as m\n", "configs -> evaluation.metrics"),
    ],
)
def test_the_check_catches_bad_imports(tmp_path, package, source, expected) -> None:
    (tmp_path / package).mkdir()
    (tmp_path / package / "bad.py").write_text(source)
    (tmp_path / package / "good.py").write_text("import numpy\nfrom configs import ConfigError\n")
    found = violations(tmp_path)
    assert len(found) == 1 and found[0].endswith(expected), found


def test_no_library_module_changes_matplotlib_global_state() -> None:
    """Figures are drawn with the object API and saved by ``evaluation.plots.save_figure``."""
    bad = []
    for package in ("configs", "preprocessing", "detectors", "evaluation", "training", "fairness"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("use", "switch_backend")
                    and getattr(node.func.value, "id", "") in ("matplotlib", "plt")
                ):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert bad == []


def _top_level_names(init: Path) -> set[str]:
    """Names a package ``__init__`` defines, imports or lists in ``__all__``."""
    names: set[str] = set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                if isinstance(target, ast.Name) and target.id == "__all__":
                    names.update(ast.literal_eval(node.value))
    return names


def test_every_project_import_names_a_module_of_this_checkout() -> None:
    """A moved module must not be imported from its old place: with the package installed
    elsewhere in editable mode, such an import would silently load another checkout's copy."""
    bad = []
    for package in [*LEVELS, "tests"]:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
                if isinstance(node, ast.Import):
                    targets = [(a.name, None) for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    targets = [(node.module, a.name) for a in node.names]
                else:
                    continue
                for module, name in targets:
                    if module.split(".")[0] not in {*LEVELS, "tests"}:
                        continue
                    base = REPO.joinpath(*module.split("."))
                    if not (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
                        bad.append(f"{rel}:{node.lineno}: no module {module}")
                    elif name is not None and (base / "__init__.py").is_file():
                        sub = base / name
                        known = _top_level_names(base / "__init__.py")
                        if not (sub.with_suffix(".py").is_file() or sub.is_dir() or name in known):
                            bad.append(f"{rel}:{node.lineno}: {module} has no {name}")
    assert bad == []
