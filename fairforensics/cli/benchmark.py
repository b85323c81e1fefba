r"""DeepfakeBench's Table 3 in one command: train and test detectors, resumably; leaderboard.

  scripts/benchmark.py --detectors all --train-data FF-c23 --test-data FF-c23 CDFv2 DFDC --out sweep
  scripts/benchmark.py --detectors xception ucf --gpus 4 --out sweep  (torchrun per run)
  scripts/benchmark.py --detectors all --weights-dir dfb_weights --test-data CDFv2 --out sweep
  scripts/benchmark.py --detectors xception ucf --seeds 0 1 2 --baseline metadata=audit/pred.csv \
      --out sweep  (three trainings each; baseline rows constant, random, metadata)
  scripts/benchmark.py --detectors all --seeds 0 1 2 --launcher slurm --partition gpu \
      --gpus-per-job 4 --out sweep  (each run a job of a Slurm array, through submitit)
  scripts/benchmark.py --detectors xception tall ftcn --data-root datasets \
      --clip-data-root datasets/clips --out sweep  (video detectors read clip-mode indexes)
  scripts/benchmark.py --protocol df40-p4 --detectors xception --data-root datasets --out p4
      (a shipped protocol: DF40 df40-p1..p4, Celeb-DF++ cdfpp-gf, cdfpp-gfq, cdfpp-gfd)

A killed sweep resumes when run again with the same --out (see benchmarks.sweep and the
evaluation guide below).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fairforensics.cli.errors import UserInputError, add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import config_help, guide
from fairforensics.cli.partial import add_allow_partial_argument
from fairforensics.cli.preflight import check_detector_name
from fairforensics.configs import import_modules
from fairforensics.configs.writable import check_writable


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("benchmark"),
    )
    p.add_argument("--detectors", nargs="+", required=True, help="detector names, or 'all'")
    p.add_argument("--out", type=Path, required=True, help="sweep folder (resumes if it exists)")
    p.add_argument(
        "--recipe",
        type=Path,
        help=config_help("train", "train config of every run (default: deepfakebench)"),
    )
    p.add_argument("--train-data", nargs="+")
    p.add_argument("--val-data", nargs="+", default=[])
    p.add_argument("--test-data", nargs="+", default=[])
    p.add_argument(
        "--protocol",
        help=config_help("protocols", "a generalisation protocol: builds its train and test "
                         "indexes from --data-root and runs a sweep per training index"),
    )  # fmt: skip
    p.add_argument(
        "--protocol-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="protocol override, e.g. sources.real=FF-c40 or selection=test-top3",
    )
    p.add_argument("--data-root", help="folder of the dataset indexes")
    p.add_argument(
        "--clip-data-root",
        help="video detectors' indexes of the same names, preprocessed with sampling.mode: "
        "clips (default: --data-root)",
    )
    p.add_argument("--gpus", type=int, default=0, help="GPUs per training run (torchrun)")
    p.add_argument(
        "--weights-dir", type=Path, help="DeepfakeBench checkpoints: test them, train nothing"
    )
    p.add_argument(
        "--models-dir",
        type=Path,
        help="model packages, one folder per detector (DIR/<detector>/, from fairforensics "
        "export): test them with --model, train nothing",
    )
    p.add_argument(
        "--within",
        nargs="+",
        help="within-domain test sets of the leaderboard (default: those of the runs' "
        "training data, and FaceForensics++'s other sets when trained on one of them)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="train override for every run, e.g. train.epochs=1",
    )
    p.add_argument(
        "--robustness",
        action="store_true",
        help="after testing, run fairforensics robustness on the test sets (robust AUC column)",
    )
    p.add_argument("--source-root", help="robustness: where the indexes' source videos lie")
    p.add_argument(
        "--robustness-arg",
        dest="robustness_args",
        action="append",
        default=[],
        metavar="ARG",
        help="robustness: an extra argument, repeatable (e.g. --robustness-arg=--types=GB,VC)",
    )
    p.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        help="train each detector once per seed (train.seed); the leaderboard shows the mean "
        "and the spread across seeds",
    )
    p.add_argument(
        "--baseline",
        dest="baselines",
        action="append",
        default=[],
        metavar="NAME=PREDICTIONS.csv",
        help="an extra baseline row from a predictions file of the test items, repeatable "
        "(e.g. metadata=audit/predictions.csv from fairforensics audit); constant and random "
        "are always there",
    )
    p.add_argument("--no-costs", action="store_true", help="leave out the cost columns")
    p.add_argument(
        "--show-intervals",
        action="store_true",
        help="Markdown and report leaderboards show each cell's interval (CSV, JSON and "
        "index.html always carry them)",
    )
    p.add_argument(
        "--latex",
        action="store_true",
        help="the leaderboard and fairness tables also as LaTeX (booktabs, <table>.tex): "
        "intervals, tie marks, seeds and test videos per set",
    )
    p.add_argument(
        "--launcher",
        choices=("local", "slurm"),
        default="local",
        help="local: runs one after another here (default); slurm: each run a job of a Slurm "
        "array through submitit",
    )
    p.add_argument("--partition", help="slurm: the partition of the jobs")
    p.add_argument("--gpus-per-job", type=int, default=0, help="slurm: GPUs per job (torchrun)")
    p.add_argument("--cpus-per-job", type=int, default=8, help="slurm: CPUs per job")
    p.add_argument("--mem-gb", type=int, default=64, help="slurm: memory per job in GB")
    p.add_argument("--timeout-min", type=int, default=24 * 60, help="slurm: time limit per job")
    p.add_argument(
        "--slurm-arg",
        dest="slurm_args",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="slurm: a further sbatch option, repeatable (e.g. account=abc)",
    )
    add_allow_partial_argument(p)
    add_import_argument(p)
    args = p.parse_args(argv)
    if args.protocol and (args.train_data or args.val_data or args.test_data):
        p.error("--protocol builds its own train, val and test data; drop --train/val/test-data")
    if args.protocol and not args.data_root:
        p.error("--protocol needs --data-root (the folder of its source indexes)")
    if args.protocol_set and not args.protocol:
        p.error("--protocol-set needs --protocol")
    if args.launcher == "local" and (args.partition or args.gpus_per_job or args.slurm_args):
        p.error("--partition, --gpus-per-job and --slurm-arg need --launcher slurm")
    if args.gpus_per_job < 0 or args.cpus_per_job < 1 or args.mem_gb < 1 or args.timeout_min < 1:
        p.error("--gpus-per-job must be >= 0; --cpus-per-job, --mem-gb, --timeout-min >= 1")
    if args.seeds is not None and len(set(args.seeds)) != len(args.seeds):
        p.error(f"--seeds must be distinct, got {args.seeds}")
    from fairforensics.evaluation.baselines import parse_baselines  # no torch

    try:
        baselines = parse_baselines(args.baselines)
    except ValueError as exc:
        p.error(str(exc))
    check_writable(args.out)  # before any run trains
    if not args.protocol:  # a protocol's runs read the indexes it derives (checked by each run)
        from fairforensics.preprocessing.resolve import check_datasets_complete  # no torch

        names = [*(args.train_data or ["FF-c23"]), *(args.val_data or []), *(args.test_data or [])]
        check_datasets_complete(
            names, args.data_root or "datasets", allow_partial=args.allow_partial
        )
    # then the detectors' names and the folders of weights, before torch loads
    if args.detectors != ["all"]:
        for name in args.detectors:
            check_detector_name(name, args.imports, "--detectors")
    for option, folder in (("--weights-dir", args.weights_dir), ("--models-dir", args.models_dir)):
        if folder is not None and not folder.is_dir():
            raise UserInputError(f"{option} {folder} is not a folder")
    configure_logging(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # after the arguments are read, so that --help and argument errors import no torch
    from fairforensics.benchmarks.sweep import DEFAULT_RECIPE, Sweep, run_sweep

    sweep = Sweep(
        detectors=args.detectors,
        out=args.out,
        train_data=args.train_data or ["FF-c23"],
        test_data=args.test_data,
        val_data=args.val_data,
        data_root=args.data_root,
        recipe=args.recipe or DEFAULT_RECIPE,
        gpus=args.gpus,
        weights_dir=args.weights_dir,
        models_dir=args.models_dir,
        overrides=args.overrides,
        within=args.within,
        clip_data_root=args.clip_data_root,
        imports=args.imports,
        robustness=args.robustness,
        source_root=args.source_root,
        robustness_args=args.robustness_args,
        seeds=args.seeds,
        baselines=baselines,
        allow_partial=args.allow_partial,
        costs=not args.no_costs,
        show_intervals=args.show_intervals,
        latex=args.latex,
    )
    import_modules(args.imports)
    launch = None
    if args.launcher == "slurm":
        from fairforensics.benchmarks.launch import SlurmOptions, run_sweeps_jobs

        options = SlurmOptions(
            partition=args.partition,
            gpus_per_job=args.gpus_per_job,
            cpus_per_job=args.cpus_per_job,
            mem_gb=args.mem_gb,
            timeout_min=args.timeout_min,
            extra=tuple(args.slurm_args),
        )

        def launch(sweeps: list[Sweep]) -> list[Path]:
            return run_sweeps_jobs(sweeps, "slurm", options)

    if args.protocol:
        from fairforensics.benchmarks.protocols import load_protocol, run_protocol

        proto = load_protocol(args.protocol, args.protocol_set)
        tables = run_protocol(
            proto,
            detectors=args.detectors,
            data_root=args.data_root,
            out=args.out,
            sweep=sweep,
            launch=launch,
        )
        print(f"tables: {tables}")
        return 0
    out = run_sweep(sweep) if launch is None else launch([sweep])[0]
    print(f"leaderboard: {out}")
    return 0


if __name__ == "__main__":
    run_cli(main)
