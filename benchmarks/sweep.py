"""The Table-3 sweep (paper 002, Sec. 4 and Table 3): train and test many detectors, resumably.

For each detector the sweep launches ``fairforensics train`` and then ``fairforensics test``
(``python -m fairforensics.cli``, the code of ``scripts/train.py`` and ``scripts/test.py``) as
subprocesses in the current folder (training under ``torchrun --standalone --nproc_per_node N`` when ``gpus`` is N >= 1,
plain Python otherwise), all in ``<out>/<detector>/``:

* ``run/``: the training run directory (``output_dir=<out>/<detector>``, ``run_name=run``);
* ``eval/``: the evaluation folder of ``scripts/test.py`` (predictions, metrics, tables);
* ``eval/robustness/``: with ``robustness``, the folder of ``fairforensics robustness`` on the
  same test sets (DeeperForensics-1.0's perturbations; the leaderboard's ``robust AUC``);
* ``done.json``: the completion record, written atomically after testing.

With ``seeds`` each detector is trained once per seed (``train.seed``), each run in
``<out>/<detector>/seed<k>/`` with the same layout.

A detector with a completion record is skipped; one without it (a sweep killed while it ran) is
redone from scratch, so a killed sweep resumes where it stopped. At the end
:func:`benchmarks.board.write_board` joins the evaluation folders into ``<out>/leaderboard/``:
the cross-dataset leaderboards with Top-3 counts, intervals, ties with the best and the spread
across seeds (:func:`evaluation.leaderboard.build_leaderboard`, what ``scripts/test.py
--leaderboard`` does), the baseline rows (evaluated in ``<out>/baselines/``), fairness and cost
columns and the HTML page. :mod:`benchmarks.launch` runs the same runs as Slurm jobs.

With ``weights_dir`` nothing is trained: each detector is tested with DeepfakeBench's released
checkpoint :func:`deepfakebench_weights` finds there, through ``fairforensics test --detector NAME
--weights FILE``, so Table 3's test half comes with our video grouping and fairness columns.
With ``models_dir`` (a folder of model packages, ``<models_dir>/<detector>/``, e.g. written by
``fairforensics export``) nothing is trained either: each is tested through ``fairforensics test
--model``, with the crop, frames and threshold its package records.

Image and video detectors share one sweep and one leaderboard (video detectors as the ``Video``
family). Video detectors read their clips from ``clip_data_root`` when it is given: indexes of
the same names preprocessed with ``sampling.mode: clips``, so both kinds are tested on the same
test-set names; without it they read ``data_root`` like the others (DeepfakeBench's rule on
each video's frame list).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import fairforensics
from fairforensics.benchmarks.board import write_board
from fairforensics.configs import CONFIG_DIR, resolve_config
from fairforensics.detectors import get_detector_class, list_detectors
from fairforensics.evaluation.settings import load_test_config
from fairforensics.preprocessing.files import write_json

log = logging.getLogger(__name__)

#: the folder this ``fairforensics`` is imported from (a checkout or site-packages), put first on
#: the runs' PYTHONPATH so that they run this same code, installed or not
IMPORT_ROOT = Path(fairforensics.__file__).resolve().parents[1]
DEFAULT_RECIPE = CONFIG_DIR / "train" / "deepfakebench.yaml"
DONE = "done.json"
#: file names tried in ``weights_dir`` for a detector, ``{dfb}`` = its DeepfakeBench config name
WEIGHT_NAMES = ("{dfb}_best.pth", "{dfb}.pth", "{dfb}/ckpt_best.pth", "{dfb}_best.pt")

Runner = Callable[[list[str]], None]


class SweepError(RuntimeError):
    """A sweep cannot start or one of its runs failed (the message names the detector)."""


@dataclass
class Sweep:
    """What to run: detectors, data, recipe and how to launch."""

    detectors: list[str]
    out: Path
    train_data: list[str] = field(default_factory=lambda: ["FF-c23"])
    test_data: list[str] = field(default_factory=list)
    val_data: list[str] = field(default_factory=list)
    data_root: str | None = None
    recipe: Path | None = DEFAULT_RECIPE
    gpus: int = 0
    weights_dir: Path | None = None
    models_dir: Path | None = None
    overrides: list[str] = field(default_factory=list)
    within: list[str] | None = None
    clip_data_root: str | None = None  # video detectors' indexes (sampling.mode: clips)
    imports: list[str] = field(default_factory=list)  # --import MODULE for every run
    robustness: bool = False  # after testing: ``fairforensics robustness`` on the test sets
    source_root: str | None = None  # robustness: where the indexes' source videos lie
    robustness_args: list[str] = field(default_factory=list)  # e.g. ["--types", "GB,VC"]
    seeds: list[int] | None = None  # one training per seed (train.seed), in <detector>/seed<k>
    baselines: dict[str, Path] = field(default_factory=dict)  # extra baseline predictions files
    allow_partial: bool = False  # every run: --allow-partial (incomplete indexes named partial)
    costs: bool = True  # measure the cost columns (parameters, MACs, CPU ms per frame)
    show_intervals: bool = False  # Markdown/HTML leaderboards show each cell's interval
    latex: bool = False  # the leaderboard and fairness tables also as LaTeX (booktabs)

    def data_root_of(self, detector: str) -> str | None:
        """Where ``detector`` reads its indexes: ``clip_data_root`` for a video detector."""
        if self.clip_data_root and get_detector_class(detector).input_kind == "clip":
            return self.clip_data_root
        return self.data_root

    def extra_args(self) -> list[str]:
        partial = ["--allow-partial"] if self.allow_partial else []
        return [*partial, *(x for module in self.imports for x in ("--import", module))]

    def folder(self, detector: str, seed: int | None = None) -> Path:
        """Where one run of ``detector`` lives: ``<out>/<detector>``, with a seed
        ``<out>/<detector>/seed<k>``."""
        base = self.out / detector
        return base if seed is None else base / f"seed{seed}"

    def jobs(self, detectors: Sequence[str]) -> list[tuple[str, int | None]]:
        """Every (detector, seed) of the sweep (seed None without ``seeds``)."""
        return [(d, s) for d in detectors for s in (self.seeds or [None])]


def resolve_detectors(names: Sequence[str]) -> list[str]:
    """``["all"]`` -> every detector with a DeepfakeBench counterpart; otherwise checked names."""
    if list(names) == ["all"]:
        return [n for n in list_detectors() if get_detector_class(n).deepfakebench_name]
    known = set(list_detectors())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SweepError(
            f"unknown detectors {', '.join(unknown)}; choose from {', '.join(sorted(known))} or all"
        )
    return list(names)


def deepfakebench_weights(weights_dir: Path, detector: str) -> Path:
    """DeepfakeBench's checkpoint of ``detector`` in ``weights_dir`` (see :data:`WEIGHT_NAMES`)."""
    dfb = get_detector_class(detector).deepfakebench_name
    if not dfb:
        raise SweepError(f"{detector}: has no DeepfakeBench counterpart, so no --weights-dir file")
    tried = [weights_dir / pattern.format(dfb=dfb) for pattern in WEIGHT_NAMES]
    for path in tried:
        if path.is_file():
            return path
    raise SweepError(f"{detector}: no DeepfakeBench checkpoint, tried {[str(p) for p in tried]}")


def launcher(gpus: int) -> list[str]:
    """The command prefix of a training run: torchrun on ``gpus`` GPUs, else this Python."""
    if gpus < 0:
        raise SweepError(f"gpus must be >= 0, got {gpus}")
    if gpus == 0:
        return [sys.executable]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={gpus}",
    ]


def train_command(sweep: Sweep, detector: str, seed: int | None = None) -> list[str]:
    cmd = [*launcher(sweep.gpus), "-m", "fairforensics.cli", "train", "--detector", detector]
    if sweep.recipe is not None:
        cmd += ["--config", str(sweep.recipe)]
    cmd += ["--train-data", *sweep.train_data]
    if sweep.val_data:
        cmd += ["--val-data", *sweep.val_data]
    if sweep.test_data:
        cmd += ["--test-data", *sweep.test_data]
    root = sweep.data_root_of(detector)
    if root:
        cmd += ["--data-root", root]
    cmd += ["--output-dir", str(sweep.folder(detector, seed)), "--set", "run_name=run"]
    for item in sweep.overrides:
        cmd += ["--set", item]
    if seed is not None:
        cmd += ["--set", f"train.seed={seed}"]
    return cmd + sweep.extra_args()


def eval_command(sweep: Sweep, detector: str, seed: int | None = None) -> list[str]:
    """``fairforensics test`` of one run, deciding at the run's threshold: a trained run's
    validation threshold (``test --run`` reads it), a package's own (``--model``), and for
    DeepfakeBench's checkpoints one chosen on the validation data (``--val-data``: the sweep's,
    else the val split of its training data)."""
    cmd = [sys.executable, "-m", "fairforensics.cli", "test"]
    if sweep.models_dir is not None:
        cmd += ["--model", str(sweep.models_dir / detector)]
    elif sweep.weights_dir is not None:
        weights = deepfakebench_weights(sweep.weights_dir, detector)
        cmd += ["--detector", detector, "--weights", str(weights)]
        cmd += ["--train-data", ",".join(sweep.train_data)]
        cmd += ["--val-data", *(sweep.val_data or sweep.train_data)]
    else:
        cmd += ["--run", str(sweep.folder(detector, seed) / "run")]
    cmd += ["--test-data", *(sweep.test_data or sweep.train_data)]
    root = sweep.data_root_of(detector)
    if root:
        cmd += ["--data-root", root]
    return [*cmd, "--out", str(sweep.folder(detector, seed) / "eval"), *sweep.extra_args()]


def robustness_command(sweep: Sweep, detector: str, seed: int | None = None) -> list[str]:
    """``fairforensics robustness`` of the tested detector into ``eval/robustness`` (where the
    leaderboard finds its ``robust AUC``), at the threshold its evaluation decided with
    (``--threshold-from eval/eval.json``)."""
    test = eval_command(sweep, detector, seed)
    out = test.index("--out")
    args = test[4:out]
    if "--val-data" in args:  # chosen once, by the evaluation
        at = args.index("--val-data")
        n = len(sweep.val_data or sweep.train_data)
        args = args[:at] + args[at + 1 + n :]
    evaluated = sweep.folder(detector, seed) / "eval" / "eval.json"
    cmd = [sys.executable, "-m", "fairforensics.cli", "robustness", *args]
    cmd += ["--threshold-from", str(evaluated)]
    if sweep.source_root:
        cmd += ["--source-root", sweep.source_root]
    cmd += [*sweep.robustness_args, "--no-progress"]
    out = sweep.folder(detector, seed) / "eval" / "robustness"
    return [*cmd, "--out", str(out), *sweep.extra_args()]


def _subprocess_runner(cmd: list[str]) -> None:
    log.info("running %s", " ".join(cmd))
    # this code's own package first, also when the sweep runs from a checkout that is not installed
    path = os.pathsep.join(p for p in (str(IMPORT_ROOT), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": path}, check=False)
    if done.returncode != 0:
        raise SweepError(f"command failed with exit code {done.returncode}: {' '.join(cmd)}")


def run_one(
    sweep: Sweep, detector: str, runner: Runner = _subprocess_runner, seed: int | None = None
) -> bool:
    """Train (unless ``weights_dir`` or ``models_dir``) and test ``detector`` (with ``seed``:
    that seed's run); False if it had already finished."""
    folder = sweep.folder(detector, seed)
    if (folder / DONE).is_file():
        log.info("%s: finished earlier (%s), skipped", detector, folder / DONE)
        return False
    if folder.exists():
        log.warning("%s: %s has no completion record (killed run?); redoing it", detector, folder)
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    trained = sweep.weights_dir is not None or sweep.models_dir is not None
    commands = [] if trained else [train_command(sweep, detector, seed)]
    commands.append(eval_command(sweep, detector, seed))
    if sweep.robustness:
        commands.append(robustness_command(sweep, detector, seed))
    started = time.time()
    for cmd in commands:
        try:
            runner(cmd)
        except SweepError as exc:
            raise SweepError(f"{detector}: {exc}") from None
    record = {"detector": detector, "seed": seed, "commands": commands}
    record["seconds"] = time.time() - started
    write_json(folder / DONE, record, indent=2)
    return True


def run_sweep(sweep: Sweep, runner: Runner = _subprocess_runner) -> Path:
    """Run every detector (and seed) of ``sweep`` (skipping finished ones), then write the
    leaderboards (:func:`benchmarks.board.write_board`); returns the leaderboard folder."""
    sweep, detectors = prepare(sweep)
    for detector, seed in sweep.jobs(detectors):
        run_one(sweep, detector, runner, seed)
    return write_leaderboard(sweep, detectors)


def prepare(sweep: Sweep) -> tuple[Sweep, list[str]]:
    """``sweep`` with its recipe resolved, and its checked detector names."""
    if sweep.recipe is not None:  # a file, or a shipped train config's name (deepfakebench)
        sweep = replace(sweep, recipe=resolve_config(sweep.recipe, "train").resolve())
    if sweep.weights_dir is not None and sweep.models_dir is not None:
        raise SweepError("give --weights-dir or --models-dir, not both")
    for option, folder in (
        ("--weights-dir", sweep.weights_dir),
        ("--models-dir", sweep.models_dir),
    ):
        if folder is not None and not folder.is_dir():
            raise SweepError(f"{option} {folder} is not a folder")
    if sweep.seeds is not None and (sweep.weights_dir or sweep.models_dir):
        raise SweepError("--seeds trains once per seed; --weights-dir/--models-dir train nothing")
    if sweep.seeds is not None and (not sweep.seeds or len(set(sweep.seeds)) != len(sweep.seeds)):
        raise SweepError(f"--seeds must name distinct seeds, got {sweep.seeds}")
    return sweep, resolve_detectors(sweep.detectors)


def write_leaderboard(sweep: Sweep, detectors: Sequence[str]) -> Path:
    """The leaderboard folder ``<out>/leaderboard`` of the finished runs, with the baselines
    (in ``<out>/baselines``), fairness and cost columns and the HTML page."""
    cfg = load_test_config()
    out = sweep.out / "leaderboard"
    write_board(
        [sweep.folder(d, s) / "eval" for d, s in sweep.jobs(detectors)],
        out,
        cfg,  # frame (clip) and video level, as docs/evaluation.md describes
        baselines_dir=sweep.out / "baselines",
        extra_baselines=sweep.baselines,
        detectors=detectors if sweep.costs else (),
        within=sweep.within,
        show_intervals=sweep.show_intervals,
        latex=sweep.latex,
        title=f"Leaderboard of {sweep.out.name}",
    )
    return out
