"""Combine dataset indexes into one (keys prefixed by dataset, attributes carried).

Builds the CAAD-PAD index that ``configs/train/pad.yaml`` trains on from the six PAD indexes
(paper 001 Sec. III-A); works for any list of indexes of one task. An index may be followed by
``::`` and a filter (``key=value|value,key=value``; keys: method, split, label or an attribute)
to take only the videos that match. Examples::

    fairforensics combine --name CAAD-PAD --out datasets/CAAD-PAD.json \\
        datasets/CASIA-FASD.json datasets/CelebA-Spoof.json ...
    fairforensics combine --name DF40-FR-ff --out datasets/DF40-FR-ff.json \\
        "datasets/DF40.json::family=FR,domain=ff,split=test" \\
        "datasets/FF-c23.json::method=real,split=test"
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
from fairforensics.preprocessing.combine import combine_indexes, select_videos
from fairforensics.preprocessing.index import DatasetIndex, read_index, write_index


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("combine"),
    )
    p.add_argument(
        "indexes", nargs="+", help="dataset index JSON files, each optionally PATH::FILTER"
    )
    p.add_argument("--name", required=True, help="dataset name of the combined index")
    p.add_argument("--out", required=True, type=Path, help="combined index JSON to write")
    args = p.parse_args(argv)
    check_writable_file(args.out)  # before the inputs are read
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parts = [_read_part(text, p) for text in args.indexes]
    combined = combine_indexes(parts, args.name, args.out.parent)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_index(combined, args.out)
    splits = Counter(v.split for v in combined.videos)
    print(json.dumps({"index": str(args.out), "videos": len(combined.videos), **splits}))
    return 0


def _read_part(text: str, parser: argparse.ArgumentParser) -> DatasetIndex:
    """``PATH`` or ``PATH::key=a|b,key=c``: the index, with only the videos that match."""
    path, _, spec = text.partition("::")
    where: dict[str, list[str]] = {}
    for clause in filter(None, spec.split(",")):
        key, sep, values = clause.partition("=")
        if not sep or not key or not values:
            parser.error(f"{text}: filter clause {clause!r} is not key=value[|value...]")
        where[key.strip()] = [v.strip() for v in values.split("|")]
    index = read_index(Path(path))
    return select_videos(index, where) if where else index


if __name__ == "__main__":
    run_cli(main)
