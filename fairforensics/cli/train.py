"""Train a detector from YAML configs; writes a run directory (see docs/training.md).

Examples::

    python scripts/train.py --detector xception --train-data FF-c23 --val-data FF-c23 \
        --test-data FF-c23 CDFv2 --set train.epochs=10
    python scripts/train.py --config configs/train/demo.yaml
    python scripts/train.py --resume runs/xception_20250101-120000
    torchrun --nproc_per_node 4 scripts/train.py --detector xception --config configs/train/ff_c23.yaml
"""

from __future__ import annotations

import argparse
import logging

from configs import ConfigError, import_modules
from detectors import CheckpointError
from detectors.backbones import PretrainedWeightsError
from detectors.deepfakebench import WeightsError
from fairforensics.cli.errors import run_cli
from fairness.fairswap import fairswap_transforms
from preprocessing.datasets.base import DatasetLayoutError
from preprocessing.frames import TrainDataError
from preprocessing.index import DatasetIndexError
from training.config import load_train_config, read_run_config
from training.distributed import teardown
from training.trainer import NonFiniteLossError, Trainer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--detector", help="registered detector name (see detectors.list_detectors())"
    )
    parser.add_argument(
        "--variant",
        choices=["deepfakebench", "paper"],
        help="detector YAML: configs/detectors/NAME.yaml (deepfakebench, default) or "
        "configs/detectors/paper/NAME.yaml (paper)",
    )
    parser.add_argument(
        "--detector-config", help="explicit detector YAML (sections detector, model, train)"
    )
    parser.add_argument(
        "--config", action="append", default=[], help="train YAML (repeatable, later wins)"
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
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import a module that registers detectors first (repeatable)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("train")
    try:
        import_modules(args.imports)
        if args.resume:
            cfg = read_run_config(args.resume)
            trainer = Trainer(
                cfg, resume=args.resume, batch_transforms=fairswap_transforms(cfg.train)
            )
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
            trainer = Trainer(cfg, batch_transforms=fairswap_transforms(cfg.train))
        run_dir = trainer.fit()
        rank = trainer.dist.rank
        teardown()
    except (
        ConfigError,
        DatasetIndexError,
        DatasetLayoutError,
        TrainDataError,
        CheckpointError,
        NonFiniteLossError,
        PretrainedWeightsError,
        WeightsError,
    ) as exc:
        log.error("%s", exc)
        return 2
    if rank == 0:
        log.info("run directory: %s", run_dir)
    return 0


if __name__ == "__main__":
    run_cli(main)
