"""Mutation testing of the statistics and dataset modules with mutmut, each module against the
test files that import it; prints the killed share per module and every survivor as JSON.

mutmut names a mutant after its file's path (``evaluation/significance.py`` ->
``evaluation.significance``) and records which tests reach it under the module's import name,
which here is ``fairforensics.evaluation.significance``. So each module runs in a work folder
(``build/mutate/<module>/``) holding a copy of the repository in which every subpackage also
sits under ``fairforensics/``, the layout the package is installed with; mutmut mutates that copy
and the tests import it from mutmut's ``mutants/`` folder. A work folder is kept between runs,
so mutmut only re-runs the mutants of functions that changed.

    python scripts/mutate.py                                  # every module (hours on 2 cores)
    python scripts/mutate.py --modules fairness/paired.py --only 'x_paired_change*'

Statuses are mutmut's: ``killed`` (a test failed), ``survived`` (every test passed), ``timeout``
(counted as killed: the mutant made a test hang), ``no tests`` (no selected test reaches the
function), ``not checked`` (not run, e.g. outside ``--only``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the modules `make mutate` runs and the test files that import each
MODULE_TESTS: dict[str, tuple[str, ...]] = {
    "evaluation/significance.py": (
        "tests/test_significance.py",
        "tests/test_significance_calibration.py",
        "tests/test_leaderboard_intervals.py",
    ),
    "fairness/paired.py": ("tests/test_fairness_paired.py", "tests/test_fairness_robustness.py"),
    "fairness/leaderboard_metrics.py": ("tests/test_leaderboard_intervals.py",),
    "evaluation/audit/shortcut.py": ("tests/test_audit.py",),
    "preprocessing/datasets/df40.py": (
        "tests/test_celebdfpp_df40.py",
        "tests/test_df40_details.py",
    ),
    "preprocessing/datasets/celebdfpp.py": (
        "tests/test_celebdfpp_df40.py",
        "tests/test_celebdfpp_details.py",
    ),
    "fairness/group_calibration.py": ("tests/test_fairness_group_calibration.py",),
    "evaluation/calibration/transfer.py": ("tests/test_leaderboard_acc_lost.py",),
    "evaluation/sorted_subsets.py": ("tests/test_ranked_auc_eer.py",),
    "evaluation/calibration/metrics.py": ("tests/test_calibration.py",),
}
#: repository folders installed as ``fairforensics.<folder>`` (setup.py)
SUBPACKAGES = (
    "configs",
    "preprocessing",
    "detectors",
    "training",
    "evaluation",
    "fairness",
    "benchmarks",
    "docs",
)
KILLED = {"killed", "timeout"}
STATUS_BY_EXIT_CODE = {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "no tests"}
STATUS_BY_EXIT_CODE |= {34: "skipped", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout"}
STATUS_BY_EXIT_CODE |= {255: "timeout", -9: "segfault", -11: "segfault", None: "not checked"}


def repository_files() -> list[str]:
    """Tracked and untracked files that git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    return [f for f in out.decode().split("\0") if f and (ROOT / f).is_file()]


def sync(src: Path, dst: Path) -> None:
    """Copy a file unless the destination already holds the same bytes (keeps mutmut's cache)."""
    if dst.is_file() and dst.read_bytes() == src.read_bytes():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def mutmut_config(module: str, tests: tuple[str, ...], top_level: list[str]) -> str:
    """The ``[tool.mutmut]`` section of a work folder."""
    listed = ", ".join

    def quoted(items) -> str:
        return listed(json.dumps(i) for i in items)

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["fairforensics"]\n'
        f"only_mutate = [{json.dumps('fairforensics/' + module)}]\n"
        f"also_copy = [{quoted(top_level)}]\n"
        'pytest_add_cli_args = ["-p", "no:xdist", "-p", "no:cacheprovider", '
        '"-m", "not e2e and not extended"]\n'
        f"pytest_add_cli_args_test_selection = [{quoted(tests)}]\n"
        'process_isolation = "forkserver"\n'
    )


def prepare(module: str, work: Path) -> None:
    """Lay out the work folder of one module: the repository, plus fairforensics/<subpackage>."""
    files = repository_files()
    top_level = sorted({f.split("/")[0] for f in files} - {"fairforensics", "pyproject.toml"})
    for f in files:
        sync(ROOT / f, work / f)
        head = f.split("/")[0]
        if head in SUBPACKAGES:
            sync(ROOT / f, work / "fairforensics" / f)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    config = pyproject + mutmut_config(module, MODULE_TESTS[module], top_level)
    target = work / "pyproject.toml"
    if not target.is_file() or target.read_text(encoding="utf-8") != config:
        target.write_text(config, encoding="utf-8")


def statuses(module: str, work: Path) -> dict[str, str]:
    """Each mutant of ``module`` and its status, from mutmut's record."""
    meta = work / "mutants" / "fairforensics" / (module + ".meta")
    if not meta.is_file():
        return {}
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return {key: STATUS_BY_EXIT_CODE.get(code, "suspicious") for key, code in codes.items()}


def summary(module: str, status: dict[str, str]) -> dict:
    """Counts per status, the killed share of the checked mutants and the survivors."""
    counts: dict[str, int] = {}
    for s in status.values():
        counts[s] = counts.get(s, 0) + 1
    checked = sum(n for s, n in counts.items() if s not in {"not checked", "skipped"})
    killed = sum(counts.get(s, 0) for s in KILLED)
    return {
        "module": module,
        "mutants": len(status),
        "counts": counts,
        "killed_share": round(killed / checked, 4) if checked else None,
        "survivors": sorted(k for k, s in status.items() if s in {"survived", "no tests"}),
    }


def run_module(module: str, only: str | None, max_children: int, work_root: Path) -> dict:
    """Run mutmut on one module in its work folder and summarise the result."""
    work = work_root / module.replace("/", "_").removesuffix(".py")
    prepare(module, work)
    dotted = "fairforensics." + module.removesuffix(".py").replace("/", ".")
    names = [f"{dotted}.{only}"] if only else [f"{dotted}.*"]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = [str(mutmut), "run", "--max-children", str(max_children), *names]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    result = summary(module, statuses(module, work))
    if proc.returncode != 0:
        result["error"] = (proc.stdout + proc.stderr)[-2000:]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="+", default=list(MODULE_TESTS), choices=MODULE_TESTS)
    parser.add_argument("--only", help="glob of mangled function names, e.g. 'x_holm*'")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "mutate")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)
    results = [run_module(m, args.only, args.max_children, args.work) for m in args.modules]
    text = json.dumps({"modules": results}, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
