"""Every shell command of README.md and docs/*.md runs (issue 14, item 7).

A fenced ``bash`` block runs, command by command, in one workspace that holds the outputs of
``make demo`` (its recipe, read from the Makefile, at tiny settings), so a wrong path, a missing
flag or a stale output name fails here. A block that needs data the demo cannot stand in for
(FaceForensics++, several GPUs) carries ``<!-- not-run: <reason> -->`` on the line above its
fence; its commands are still checked: the script exists, every ``--flag`` is in its ``--help``
and every ``configs/`` path exists. ``make <target>`` is checked with ``make -n`` (``make demo``
by running its recipe once, in the workspace).

Tiny settings: the workspace has its own copy of ``configs/`` in which the demo's preprocessing
and training configs sample 3 frames and train one epoch, and the demo data generator gets
``TINY_ARGS``; the commands themselves run as written.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from fairforensics.evaluation.predictions import read_predictions
from fairforensics.preprocessing.index import read_index

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>\S.*?)\s*-->$")
PYTHONS = ("python", "python3", ".venv/bin/python")
TINY_ARGS = {"scripts/make_demo_data.py": ["--videos", "10", "--frames", "6", "--size", "256"]}
TINY_CONFIGS = {
    "train/demo.yaml": {
        "train": {"epochs": 1, "batch_size": 8, "frame_num": 3, "test_frame_num": 3}
    },
    "preprocess/demo.yaml": {"sampling": {"num_frames": 3}},
}
TIMEOUT_S = 900


@dataclass(frozen=True)
class Block:
    """One fenced ``bash`` block: where it is, its commands, and why it is not run (if so)."""

    doc: str
    line: int
    commands: tuple[str, ...]
    not_run: str | None

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def bash_blocks(text: str, doc: str) -> list[Block]:
    """The ``bash`` blocks of a Markdown text; continuation lines joined, comments dropped."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```bash":
            above = next((s.strip() for s in reversed(lines[:i]) if s.strip()), "")
            marker = NOT_RUN.match(above)
            end = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == "```"), None)
            if end is None:
                raise ValueError(f"{doc}:{i + 1}: the bash block is never closed")
            blocks.append(
                Block(doc, i + 1, _commands(lines[i + 1 : end]), marker and marker["reason"])
            )
            i = end
        i += 1
    return blocks


def _commands(body: list[str]) -> tuple[str, ...]:
    joined = re.sub(r"\\\n", " ", "\n".join(body))
    out = []
    for line in joined.splitlines():
        if shlex.split(line, comments=True):
            out.append(" ".join(line.split()))
    return tuple(out)


def all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in bash_blocks(doc.read_text(encoding="utf-8"), doc.name)]


def makefile_recipe(target: str) -> list[str]:
    """The recipe lines of ``target`` in the Makefile, variables expanded, echo lines dropped."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+)\s*[:?]?=\s*(.*?)\s*$", text, re.M))
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n?)+)", text, re.M)
    assert match, f"Makefile has no recipe for {target!r}"
    lines = [s.strip() for s in match.group(1).splitlines() if not s.strip().startswith("@")]
    expanded = []
    for line in lines:
        for _ in range(5):  # variables that name variables
            line = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m[1], m[0]), line)
        line = line.replace(f"{variables.get('VENV', '.venv')}/bin/python", "python")
        assert "$(" not in line, f"Makefile {target}: cannot expand {line!r}"
        expanded.append(line)
    return expanded


def to_argv(command: str) -> list[str]:
    """The command as an argument list: the docs' Python is this interpreter; tiny demo data."""
    argv = shlex.split(command, comments=True)
    if argv[0] in PYTHONS:
        argv = [sys.executable, *argv[1:]]
        argv += TINY_ARGS.get(argv[1], [])
    return argv


def run_command(command: str, cwd: Path, where: str) -> None:
    argv = to_argv(command)
    if argv[0] == "make":
        if argv[1:] == ["demo"]:
            done = cwd / ".make-demo-done"  # the workspace ran it once; its outputs are there
            if not done.exists():
                for line in makefile_recipe("demo"):
                    run_command(line, cwd, f"{where} (make demo: {line})")
                done.touch()
            return
        argv = ["make", "-n", "-C", str(REPO), *argv[1:]]
    assert argv[0] in (sys.executable, "make", "rm"), f"{where}: cannot run {command!r} here"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert done.returncode == 0, (
        f"{where}: `{command}` exited {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )


@functools.cache
def script_help(script: str) -> str:
    done = subprocess.run(
        [sys.executable, script, "--help"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{script} --help failed: {done.stderr[-2000:]}"
    return done.stdout


def check_example(command: str, where: str) -> None:
    """A command that is not run: its script exists, its flags and config paths are real."""
    argv = shlex.split(command, comments=True)
    while re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", argv[0]):  # environment assignments
        argv = argv[1:]
    if argv[0] == "make":
        run_command(command, REPO, where)
        return
    if argv[0] == "torchrun":
        argv = argv[next(i for i, a in enumerate(argv) if a.endswith(".py")) :]
    elif argv[0] in PYTHONS:
        argv = argv[1:]
    elif argv[0] == "fairforensics" and len(argv) > 1:  # the installed command: its wrapper
        argv = [f"scripts/{argv[1]}.py", *argv[2:]]
    elif argv[0].startswith("ff-"):
        argv = [f"scripts/{argv[0][3:]}.py", *argv[1:]]
    else:
        raise AssertionError(f"{where}: unknown program in {command!r}")
    script = argv[0]
    assert (REPO / script).is_file(), f"{where}: {script} does not exist"
    help_text = script_help(script)
    for token in argv[1:]:
        token = token.strip("[]")
        flag = token.split("=")[0]
        if flag.startswith("--"):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text), (
                f"{where}: {script} has no option {flag}"
            )
        if token.startswith("configs/"):
            assert (REPO / token).exists(), f"{where}: {token} does not exist"


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        base[key] = _merge(base.get(key) or {}, value) if isinstance(value, dict) else value
    return base


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A folder like the repository root, with tiny demo configs, where ``make demo`` ran."""
    ws = tmp_path_factory.mktemp("docs")
    (ws / "scripts").symlink_to(REPO / "scripts", target_is_directory=True)
    shutil.copytree(REPO / "configs", ws / "configs", ignore=shutil.ignore_patterns("*.py"))
    for rel, extra in TINY_CONFIGS.items():
        path = ws / "configs" / rel
        path.write_text(yaml.safe_dump(_merge(yaml.safe_load(path.read_text()), extra)))
    run_command("make demo", ws, "make demo")
    return ws


BLOCKS = all_blocks()
RUN = [b for b in BLOCKS if b.not_run is None]
EXAMPLES = [b for b in BLOCKS if b.not_run is not None]


def test_extractor_joins_continuations_and_reads_markers() -> None:
    text = (
        "x\n```bash\n# comment\npython a.py --x 1 \\\n    --y 2   # tail\n\nmake demo\n```\n"
        "<!-- not-run: needs FF++ -->\n```bash\npython b.py\n```\n```python\nprint()\n```\n"
    )
    first, second = bash_blocks(text, "t.md")
    assert first.commands == ("python a.py --x 1 --y 2 # tail", "make demo")
    assert (first.line, first.not_run) == (2, None)
    assert second.commands == ("python b.py",) and second.not_run == "needs FF++"
    assert shlex.split(first.commands[0], comments=True)[-1] == "2"
    with pytest.raises(ValueError, match="never closed"):
        bash_blocks("```bash\nls\n", "t.md")


def test_every_block_has_commands_and_the_docs_run_something() -> None:
    assert all(b.commands for b in BLOCKS), [str(b) for b in BLOCKS if not b.commands]
    assert {b.doc for b in RUN} >= {"README.md", "evaluation.md", "fairness.md", "training.md"}


def test_makefile_demo_recipe_is_read() -> None:
    recipe = makefile_recipe("demo")
    assert recipe[0].startswith("python scripts/make_demo_data.py --out demo_data/raw")
    assert any(line.startswith("python scripts/fairness.py") for line in recipe)


@pytest.mark.slow
@pytest.mark.parametrize("block", EXAMPLES, ids=str)
def test_example_commands_name_real_scripts_flags_and_configs(block: Block) -> None:
    for command in block.commands:
        check_example(command, str(block))


@pytest.mark.e2e
@pytest.mark.slow
def test_make_demo_writes_every_output(workspace: Path) -> None:
    """``make demo`` (tiny settings): every stage's output is there and says what it should."""
    demo = workspace / "demo_data"
    videos = list((demo / "raw/original_sequences/youtube/c23/videos").glob("*.mp4"))
    assert len(videos) == 10
    assert (
        len(list((demo / "raw/manipulated_sequences/SelfBlended/c23/videos").glob("*.mp4"))) == 10
    )
    index = read_index(demo / "processed" / "demo.json", check_files=True)
    assert len(index.videos) == 20 and {v.split for v in index.videos} == {"train", "val", "test"}
    assert all(
        len(v.frames) == 3 and v.attributes["lighting"] in ("bright", "dim") for v in index.videos
    )
    run_dir = demo / "runs" / "meso4-demo"
    for name in ("config.yaml", "meta.json", "checkpoints/best.pt", "checkpoints/last.pt"):
        assert (run_dir / name).is_file(), name
    assert any((run_dir / "tensorboard").iterdir())
    pred = read_predictions(demo / "eval" / "predictions" / "demo.csv")
    n_test = sum(v.split == "test" for v in index.videos)
    assert len(pred) == 3 * n_test and set(pred.label) == {0, 1}
    assert set(pred.attributes["lighting"]) == {"bright", "dim"}
    metrics = json.loads((demo / "eval" / "metrics" / "demo.json").read_text())
    assert {"auc", "ap", "eer", "acc"} <= set(metrics["frame"]["metrics"])
    assert metrics["video"]["n_videos"] == n_test
    report = (demo / "eval" / "report.html").read_text()
    assert "lighting" in report and "threshold" in report  # the fairness section, the threshold
    assert any((demo / "fairness").iterdir())


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("block", RUN, ids=str)
def test_command_runs_on_the_demo_data(block: Block, workspace: Path) -> None:
    for command in block.commands:
        run_command(command, workspace, str(block))


@pytest.mark.e2e
@pytest.mark.slow
def test_board_of_the_demo_and_stand_ins(workspace: Path, tmp_path: Path) -> None:
    """Issue 49's "done when": one site from the demo's bundle (``submit demo_data/eval``) and
    stand-in detectors scored on a protocol's test items (ffpp-c23's FF-DF), on a definition of
    both test sets; a bundle scored on a subset and a tampered one are refused with their lines;
    the site opens in headless Chromium."""
    from tests.test_board_end_to_end import SET, _evaluation, check_site_in_chromium

    subs, py = tmp_path / "submissions", sys.executable
    run_command(f"{py} scripts/submit.py demo_data/eval --out {subs}/meso4-demo", workspace, "demo")
    demo = tmp_path / "demo.json"
    run_command(
        f"{py} scripts/board.py define --test-data demo --data-root demo_data/processed "
        f"--out {demo}", workspace, "define",
    )  # fmt: skip
    both = json.loads(demo.read_text(encoding="utf-8"))
    shipped = REPO / "configs" / "benchmarks" / "ffpp-c23.json"
    both["test_sets"] += [
        s for s in json.loads(shipped.read_text())["test_sets"] if s["name"] == SET
    ]
    definition = tmp_path / "demo-and-ff.json"
    definition.write_text(json.dumps(both), encoding="utf-8")
    for name, skill, drop in (("xception", 0.5, None), ("f3net", 0.4, None), ("capsule", 0.4, 3)):
        ev = _evaluation(tmp_path / "evals" / name, name, skill, drop=drop)
        run_command(f"{py} scripts/submit.py {ev} --out {subs}/{name}", workspace, name)
    csv = next((subs / "f3net").rglob(f"{SET}.csv"))
    csv.write_bytes(csv.read_bytes().replace(b"0.", b"1.", 1))  # changed after packing
    site = tmp_path / "site"
    argv = [py, "scripts/board.py", "build", str(subs), "--benchmark", str(definition)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*argv, "--out", str(site)], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)  # fmt: skip
    refused = [line for line in done.stderr.splitlines() if line.startswith("refused")]
    assert done.returncode == 1 and len(refused) == 2, done.stderr[-3000:]
    assert any("capsule" in line and "subset" in line for line in refused), refused
    assert any("f3net" in line and "manifest" in line for line in refused), refused
    shutil.rmtree(site)
    run_command(" ".join([*argv, "--out", str(site), "--allow-refused"]), workspace, "build")
    auc = json.loads((site / "tables" / "leaderboard_frame_auc.json").read_text(encoding="utf-8"))
    assert sorted(row["Detector"] for row in auc["rows"]) == ["meso4", "xception"], auc["rows"]
    assert {"demo", SET} <= set(auc["columns"]), auc["columns"]
    check_site_in_chromium(site)
