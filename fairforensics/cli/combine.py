"""Combine dataset indexes into one (keys prefixed by dataset, attributes carried).

Builds the CAAD-PAD index that ``configs/train/pad.yaml`` trains on from the six PAD indexes
(paper 001 Sec. III-A); works for any list of indexes of one task. Example::

    fairforensics combine --name CAAD-PAD --out datasets/CAAD-PAD.json \\
        datasets/CASIA-FASD.json datasets/CelebA-Spoof.json ...
"""

from __future__ import annotations

import argparse
import json
import logging
from collections import Counter
from pathlib import Path

from fairforensics.cli.errors import configure_logging, run_cli
from fairforensics.cli.helptext import guide
from fairforensics.configs.writable import check_writable_file
from fairforensics.preprocessing.combine import combine_indexes
from fairforensics.preprocessing.index import read_index, write_index


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("combine"),
    )
    p.add_argument("indexes", nargs="+", type=Path, help="dataset index JSON files")
    p.add_argument("--name", required=True, help="dataset name of the combined index")
    p.add_argument("--out", required=True, type=Path, help="combined index JSON to write")
    args = p.parse_args(argv)
    check_writable_file(args.out)  # before the inputs are read
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    combined = combine_indexes(
        [read_index(path) for path in args.indexes], args.name, args.out.parent
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_index(combined, args.out)
    splits = Counter(v.split for v in combined.videos)
    print(json.dumps({"index": str(args.out), "videos": len(combined.videos), **splits}))
    return 0


if __name__ == "__main__":
    run_cli(main)
