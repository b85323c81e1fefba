#!/usr/bin/env python
"""Write the shipped benchmark definitions ``configs/benchmarks/<name>.json`` (issue 49) from
what the project publishes without the data:

* ``ffpp-c23``: DeepfakeBench's test sets (paper 002, Table 3) for a detector trained on FF++
  c23. FF-c23 and FF-DF/F2F/FS/NT pin their videos from FF++'s official test split
  (``preprocessing/datasets/faceforensics_splits/test.json``: the reals ``a``, ``b`` and the
  fakes ``a_b``, ``b_a`` of each pair; FF-c23's methods those of the shipped FF-c23 preprocess
  config); the cross-domain sets are named, their items not pinned.
* ``df40-p1`` .. ``df40-p4``, ``cdfpp-gf``, ``cdfpp-gfq``, ``cdfpp-gfd``: the test sets that
  ``benchmark.py --protocol NAME`` builds (``test-<method>`` per method that the protocol's
  test side selects from the published method lists, or its datasets as they are); FF-c23 in
  GFD pinned as above, the rest not pinned.

Index SHA-256s and frame counts need the preprocessed data: they are null (not pinned) here.
Pin them for a board with ``fairforensics board define`` on the indexes at hand.

    python scripts/make_benchmark_definitions.py [--out configs/benchmarks]
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.benchmarks.protocols import load_protocol  # noqa: E402
from fairforensics.benchmarks.submissions.definition import (  # noqa: E402
    SHIPPED_DIR,
    definition_json,
    set_json,
    write_definition,
)
from fairforensics.configs.loader import CONFIG_DIR  # noqa: E402
from fairforensics.evaluation.tables import CROSS_DOMAIN, FF_METHODS  # noqa: E402
from fairforensics.preprocessing.config import load_preprocess_config  # noqa: E402
from fairforensics.preprocessing.datasets import celebdfpp, df40  # noqa: E402
from fairforensics.preprocessing.frame_paths import FF_LABEL_NAMES  # noqa: E402

SPLITS = Path(df40.__file__).resolve().parent / "faceforensics_splits" / "test.json"
NOT_PINNED = "items not pinned: the project publishes no list of this set's test videos"
PROTOCOLS = ("df40-p1", "df40-p2", "df40-p3", "df40-p4", "cdfpp-gf", "cdfpp-gfq", "cdfpp-gfd")


def ff_items(methods: list[str]) -> list[tuple[str, str, None]]:
    """The official FF++ test videos: the reals and the fakes of ``methods``."""
    pairs = json.loads(SPLITS.read_text(encoding="utf-8"))
    reals = sorted({v for pair in pairs for v in pair})
    fakes = sorted({f"{a}_{b}" for a, b in pairs} | {f"{b}_{a}" for a, b in pairs})
    return [("real", v, None) for v in reals] + [(m, v, None) for m in methods for v in fakes]


def ff_c23() -> dict:
    """FF-c23 with the methods of the shipped FF-c23 preprocess config."""
    cfg = load_preprocess_config("FF-c23")
    methods = list(cfg.dataset.options["methods"])
    note = f"FF++ official test split: 140 reals and the fakes of {', '.join(methods)}"
    return set_json("FF-c23", ff_items(methods), note=note)


def ffpp_c23() -> dict:
    """DeepfakeBench's test sets for FF++ c23 training."""
    sets = [ff_c23()]
    for name in FF_METHODS:  # FF-DF -> Deepfakes, ...
        method = FF_LABEL_NAMES[name.lower()]
        sets.append(set_json(name, ff_items([method]),
                             note=f"FF++ official test split: 140 reals and 140 {method} fakes"))  # fmt: skip
    sets += [set_json(name, None, note=NOT_PINNED) for name in CROSS_DOMAIN]
    return definition_json(
        "ffpp-c23",
        sets,
        description="Trained on FaceForensics++ c23; tested on DeepfakeBench's within- and "
        "cross-domain test sets (paper 002, Table 3)",
        source="scripts/make_benchmark_definitions.py",
    )


def method_attributes(dataset: str) -> dict[str, dict[str, str]]:
    """Each published fake method of a protocol source and the method-level keys a ``where``
    can select it by."""
    if dataset == "DF40":
        return {m: {**df40.method_info(m), "label": "1"} for m in df40.METHODS}
    if dataset == "Celeb-DF-pp":
        return {m: {"label": "1", "family": celebdfpp.SCENARIOS[celebdfpp.SCENARIO_OF[m]][0]}
                for m in celebdfpp.METHODS}  # fmt: skip
    raise SystemExit(f"no published method list for protocol source {dataset!r}")


def protocol_definition(name: str) -> dict:
    """The test sets of a shipped protocol."""
    proto = load_protocol(name)
    spec = proto.test
    if spec.datasets:
        sets = [ff_c23() if d == "FF-c23" else set_json(d, None, note=NOT_PINNED)
                for d in spec.datasets]  # fmt: skip
    else:
        first = spec.parts[0]
        attrs = method_attributes(proto.sources[first.source])
        methods = [m for m, a in attrs.items()
                   if all(a[k] in allowed for k, allowed in first.where.items() if k in a)]  # fmt: skip
        sets = [set_json(f"test-{m}", None, note=NOT_PINNED) for m in methods]
    return definition_json(name, sets, description=proto.description,
                           source=f"scripts/make_benchmark_definitions.py from "
                           f"configs/protocols/{name}.yaml")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=SHIPPED_DIR)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for data in [ffpp_c23(), *map(protocol_definition, PROTOCOLS)]:
        path = args.out / f"{data['name']}.json"
        write_definition(data, path)
        print(f"{path.relative_to(CONFIG_DIR.parent) if path.is_relative_to(CONFIG_DIR.parent) else path}: "
              f"{len(data['test_sets'])} test sets")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
