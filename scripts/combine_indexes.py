#!/usr/bin/env python
"""Combine dataset indexes into one (keys prefixed by dataset, attributes carried).

Builds the CAAD-PAD index that ``configs/train/pad.yaml`` trains on from the six PAD indexes
(paper 001 Sec. III-A); works for any list of indexes of one task. Example::

    python scripts/combine_indexes.py --name CAAD-PAD --out datasets/CAAD-PAD.json \
        datasets/CASIA-FASD.json datasets/CelebA-Spoof.json ...
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.preprocessing.combine import combine_indexes  # noqa: E402
from fairforensics.preprocessing.index import DatasetIndexError, read_index, write_index  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("indexes", nargs="+", type=Path, help="dataset index JSON files")
    p.add_argument("--name", required=True, help="dataset name of the combined index")
    p.add_argument("--out", required=True, type=Path, help="combined index JSON to write")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        combined = combine_indexes(
            [read_index(path) for path in args.indexes], args.name, args.out.parent
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_index(combined, args.out)
    except (DatasetIndexError, OSError) as exc:
        logging.getLogger("combine_indexes").error("%s", exc)
        return 2
    splits = Counter(v.split for v in combined.videos)
    print(json.dumps({"index": str(args.out), "videos": len(combined.videos), **splits}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
