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
            found.extend(
                (
                    node.lineno,
                    f"{node.module}.{a.name}" if node.module == "fairforensics" else node.module,
                )
                for a in node.names
            )
    return found


def project_package(module: str) -> str | None:
    """The folder (a key of LEVELS) that ``module`` lives in, or None for another library.
    ``fairforensics.<folder>`` is a repository folder; ``fairforensics.cli`` the commands."""
    parts = module.split(".")
    if parts[0] != "fairforensics" or len(parts) == 1:
        return None  # another library, or the root package (which holds no code of a layer)
    if len(parts) > 1 and parts[1] in LEVELS and parts[1] not in ("fairforensics", "scripts"):
        return parts[1]
    return "fairforensics"


def violations(root: Path = REPO) -> list[str]:
    """``file:line: package -> module`` for every upward or sideways import, and every import
    of a repository folder by its bare name (installed, only ``fairforensics`` exists)."""
    bad = []
    for package, level in LEVELS.items():
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for line, module in imported_packages(path.read_text(encoding="utf-8"), rel):
                if module.split(".")[0] in LEVELS and module.split(".")[0] != "fairforensics":
                    bad.append(f"{rel}:{line}: {package} -> {module} (bare name)")
                    continue
                target = project_package(module)
                if target is not None and target != package and LEVELS[target] >= level:
                    bad.append(f"{rel}:{line}: {package} -> {module}")
    return bad


def test_no_upward_or_sideways_import() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("package", "source", "expected"),
    [
        (
            "evaluation",
            "from fairforensics.training.data import x\n",
            "evaluation -> fairforensics.training.data",
        ),
        (
            "preprocessing",
            "def f():\n    from fairforensics import detectors\n",
            "preprocessing -> fairforensics.detectors",
        ),
        (
            "training",
            "from fairforensics.fairness import fairswap\n",
            "training -> fairforensics.fairness",
        ),
        (
            "configs",
            "import fairforensics.evaluation.metrics as m\n",
            "configs -> fairforensics.evaluation.metrics",
        ),
        ("detectors", "from fairforensics.cli import main\n", "detectors -> fairforensics.cli"),
        ("training", "from evaluation import metrics\n", "training -> evaluation (bare name)"),
    ],
)
def test_the_check_catches_bad_imports(tmp_path, package, source, expected) -> None:
    (tmp_path / package).mkdir()
    (tmp_path / package / "bad.py").write_text(source)
    (tmp_path / package / "good.py").write_text(
        "import numpy\nfrom fairforensics.configs import ConfigError\n"
    )
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
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                if isinstance(target, ast.Name) and target.id == "__all__":
                    names.update(ast.literal_eval(node.value))
    return names


#: repository folders installed as ``fairforensics.<folder>`` (setup.py's package-dir mapping)
SUBPACKAGES = [p for p in LEVELS if p not in ("fairforensics", "scripts")]


def checkout_path(module: str) -> Path:
    """Where ``module`` (``fairforensics.detectors.x``, ``fairforensics.cli``, ``tests.y``) lives in
    this checkout, without its ``.py`` suffix."""
    parts = module.split(".")
    if parts[0] == "fairforensics" and len(parts) > 1 and parts[1] in SUBPACKAGES:
        parts = parts[1:]
    return REPO.joinpath(*parts)


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
                    if module.split(".")[0] not in ("fairforensics", "tests"):
                        continue
                    if module == "fairforensics" and name in SUBPACKAGES:
                        module, name = f"fairforensics.{name}", None
                    base = checkout_path(module)
                    if not (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
                        bad.append(f"{rel}:{node.lineno}: no module {module}")
                    elif name is not None and (base / "__init__.py").is_file():
                        sub = base / name
                        known = _top_level_names(base / "__init__.py")
                        if not (sub.with_suffix(".py").is_file() or sub.is_dir() or name in known):
                            bad.append(f"{rel}:{node.lineno}: {module} has no {name}")
    assert bad == []
