"""Metamorphic fairness testing of a trained run (paper 000): makeup test cases, per-gender tables.

Example::

    python scripts/metamorphic.py --run runs/meso4_demo --test-data demo \
        --relations configs/metamorphic/makeup.yaml
"""

from __future__ import annotations

import argparse
import logging

from fairforensics.cli.errors import add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import config_help, guide
from fairforensics.configs import (
    ConfigError,
    import_modules,
)
from fairforensics.detectors import CheckpointError
from fairforensics.evaluation.testing import check_writable
from fairforensics.fairness.metamorphic.pipeline import evaluate_run
from fairforensics.fairness.metamorphic.relations import DEFAULT_RELATIONS


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("metamorphic"),
    )
    p.add_argument("--run", required=True, help="run directory written by scripts/train.py")
    p.add_argument(
        "--test-data", required=True, help="dataset name (<data_root>/<name>.json) or index path"
    )
    p.add_argument(
        "--relations",
        default=str(DEFAULT_RELATIONS),
        help=config_help("metamorphic", "relations (test cases) config"),
    )
    p.add_argument(
        "--data-root", default=None, help="folder of dataset indexes (default: the run's)"
    )
    p.add_argument("--out", default=None, help="output folder (default: RUN/metamorphic/<dataset>)")
    p.add_argument("--weights", default="best", help="best | last | path to a .pt file")
    p.add_argument("--split", default="test", choices=("train", "val", "test"))
    p.add_argument("--frame-num", type=int, default=None, help="frames per video (default: all)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--device", default="cpu")
    p.add_argument("--examples", type=int, default=4, help="faces on the example sheet")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a relations-file key, e.g. threshold=0.4",
    )
    add_import_argument(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.out is not None:
        check_writable(args.out)  # before the transformations and predictions
    try:
        import_modules(args.imports)
        files = evaluate_run(
            args.run,
            args.test_data,
            args.relations,
            data_root=args.data_root,
            out_dir=args.out,
            weights=args.weights,
            split=args.split,
            frame_num=args.frame_num,
            batch_size=args.batch_size,
            device=args.device,
            overrides=args.set,
            n_examples=args.examples,
        )
    except (ConfigError, CheckpointError, FileNotFoundError, ValueError) as exc:
        logging.getLogger("metamorphic").error("%s", exc)
        return 2
    logging.getLogger("metamorphic").info("wrote %s", files["markdown"].parent)
    return 0


if __name__ == "__main__":
    run_cli(main)
