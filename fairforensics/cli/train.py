r"""Train a detector from YAML configs; writes a run directory.

Examples::

    python scripts/train.py --detector xception --train-data FF-c23 --val-data FF-c23 \
        --test-data FF-c23 CDFv2 --set train.epochs=10
    python scripts/train.py --config configs/train/demo.yaml      (or ff-train --config demo)
    python scripts/train.py --resume runs/xception_20250101-120000
    torchrun --nproc_per_node 4 scripts/train.py --detector xception --config configs/train/ff_c23.yaml
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from fairforensics.cli.errors import UserInputError, add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import config_help, guide
from fairforensics.cli.partial import add_allow_partial_argument
from fairforensics.cli.preflight import check_detector_name, check_run
from fairforensics.configs import import_modules
from fairforensics.configs.loader import build_config, deep_merge, parse_overrides
from fairforensics.configs.writable import check_writable

if TYPE_CHECKING:
    from fairforensics.training.config import TrainConfig
    from fairforensics.training.trainer import Trainer

#: Settings ``--resume RUN --set KEY=VALUE`` may change: they do not alter what was trained so far
#: (the learning-rate schedule keeps the length it was built with from the checkpoint).
RESUME_SAFE = ("train.epochs", "train.patience", "train.log_every_steps")


def _keys(tree: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        out.extend(_keys(value, name + ".") if isinstance(value, dict) else [name])
    return out


def resume_config(run_dir: str, overrides: list[str]) -> TrainConfig:
    """The saved config of ``run_dir`` with the :data:`RESUME_SAFE` ``overrides`` applied (and
    written back to its ``config.yaml``); any other key is a :class:`UserInputError`."""
    from fairforensics.preprocessing.files import write_yaml
    from fairforensics.preprocessing.rundir import RunDir
    from fairforensics.training.config import TrainConfig, read_run_config

    if not overrides:
        return read_run_config(run_dir)
    changes = parse_overrides(overrides)
    bad = [k for k in _keys(changes) if k not in RESUME_SAFE]
    if bad:
        raise UserInputError(
            f"--resume {run_dir}: {', '.join(bad)} cannot change in a resumed run (allowed: "
            f"{', '.join(RESUME_SAFE)}); start a new run to change it"
        )
    run = RunDir(run_dir)
    data = deep_merge(run.read_config(), changes)
    cfg = build_config(TrainConfig, data, f"{run.config} + --set")
    write_yaml(run.config, data)
    logging.getLogger("train").info("resume with %s", ", ".join(overrides))
    return cfg


def _resume_hint(trainer: Trainer) -> str:
    """What to do after a stop: the unfinished epoch is abandoned, checkpoints are atomic."""
    run = getattr(trainer, "run", None)
    if run is not None and (run.checkpoints / "last.pt").is_file():
        return f"the unfinished epoch is abandoned; resume with --resume {trainer.run_dir}"
    return "no checkpoint was written yet; run the same command again"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=guide("train"))
    parser.add_argument(
        "--detector", help="registered detector name (see detectors.list_detectors())"
    )
    parser.add_argument(
        "--variant",
        choices=["deepfakebench", "paper"],
        help="shipped detector YAML: configs/detectors/NAME.yaml (deepfakebench, default) or "
        "configs/detectors/paper/NAME.yaml (paper)",
    )
    parser.add_argument(
        "--detector-config",
        help="explicit detector YAML (sections detector, model, train): a file, or a shipped "
        "name such as meso4 or paper/ucf",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        help=config_help("train", "train config, repeatable (later wins)"),
    )
    parser.add_argument("--train-data", nargs="+", help="dataset names (<data_root>/<name>.json)")
    parser.add_argument("--val-data", nargs="+", help="validation datasets (checkpoint selection)")
    parser.add_argument("--test-data", nargs="+", help="test datasets (reported every evaluation)")
    parser.add_argument("--data-root", help="folder of the dataset index files")
    parser.add_argument("--output-dir", help="folder of run directories (default runs)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any config key, e.g. train.optimizer.lr=1e-4",
    )
    parser.add_argument(
        "--resume", metavar="RUN_DIR", help="continue a run exactly where it stopped"
    )
    parser.add_argument("--log-level", default="INFO")
    add_allow_partial_argument(parser)
    add_import_argument(parser)
    args = parser.parse_args(argv)
    configure_logging(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.resume:
        given = [
            f"--{k.replace('_', '-')}"
            for k in ("detector", "variant", "detector_config", "config", "train_data")
            + ("val_data", "test_data", "data_root", "output_dir")
            if getattr(args, k)
        ]
        if given:
            raise UserInputError(
                f"--resume continues the saved config; {', '.join(given)} cannot be "
                f"combined with it (only --set {'/'.join(RESUME_SAFE)})"
            )
        check_run(args.resume, None)  # before torch loads
    elif args.output_dir:
        check_writable(args.output_dir, "--output-dir")  # before any data is read
    if args.detector:  # then the name, before torch loads
        check_detector_name(args.detector, args.imports)
    # after the arguments are read: --help and argument errors import no torch
    from fairforensics.fairness.fairswap import fairswap_transforms
    from fairforensics.preprocessing.resolve import check_datasets_complete
    from fairforensics.training.config import load_train_config
    from fairforensics.training.distributed import teardown
    from fairforensics.training.trainer import Trainer

    log = logging.getLogger("train")
    import_modules(args.imports)
    if args.resume:
        cfg = resume_config(args.resume, args.overrides)
    else:
        overrides = list(args.overrides)
        for key, value in (
            ("data.train_data", args.train_data),
            ("data.val_data", args.val_data),
            ("data.test_data", args.test_data),
        ):
            if value:
                overrides.append(f"{key}=[{', '.join(value)}]")
        if args.data_root:
            overrides.append(f"data.data_root={args.data_root}")
        if args.output_dir:
            overrides.append(f"output_dir={args.output_dir}")
        cfg = load_train_config(
            args.detector,
            *args.config,
            overrides=overrides,
            detector_yaml=args.detector_config,
            variant=args.variant,
        )
    data = cfg.data
    check_datasets_complete(
        [*data.train_data, *data.val_data, *data.test_data],
        data.data_root,
        allow_partial=args.allow_partial,
    )
    trainer = Trainer(cfg, resume=args.resume, batch_transforms=fairswap_transforms(cfg.train))
    try:
        run_dir = trainer.fit()
    except KeyboardInterrupt as exc:  # Ctrl-C / SIGTERM (fairforensics.cli.errors)
        raise type(exc)(_resume_hint(trainer)) from None
    rank = trainer.dist.rank
    teardown()
    if rank == 0:
        log.info("run directory: %s", run_dir)
    return 0


if __name__ == "__main__":
    run_cli(main)
