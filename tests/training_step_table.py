"""The training-step parity table of ``docs/detectors.md`` (issue 30), made from the stored
references (``tests/data/training_step``) and the test's cases (``tests/test_training_step_parity``).

    .venv/bin/python -m tests.training_step_table           # rewrite the table in the docs
    .venv/bin/python -m tests.training_step_table --check   # exit 1 when it is not current

One row per DeepfakeBench detector (commit 8a4a7bf: 15 of its first release, 21 of v2): the
detector our registry builds for it and its training-step parity: "equal within 1e-4" (what the
test compares, on which batch) when its reference exists and its case has no known difference,
the difference and its cause (the case's ``status``) when it has one, what the equality holds
only under (the case's ``condition``: a setting other than the default, a part injected on both
sides) beside it, "not compared yet" without a reference. The table sits between :data:`BEGIN` and :data:`END`; ``tests/test_training_step_table.py``
checks that it is the one this module makes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests import training_parity as tp

DOC = Path(__file__).resolve().parents[1] / "docs" / "detectors.md"
BEGIN = "<!-- training-step table: made by `python -m tests.training_step_table`; do not edit -->"
END = "<!-- end of the training-step table -->"

#: DeepfakeBench's detectors at commit 8a4a7bf: (release, its config name, our registry name).
DETECTORS: tuple[tuple[str, str, str], ...] = (
    ("v1", "capsule_net", "capsule"),
    ("v1", "core", "core"),
    ("v1", "efficientnetb4", "efficientnet_b4"),
    ("v1", "f3net", "f3net"),
    ("v1", "facexray", "xray"),
    ("v1", "ffd", "ffd"),
    ("v1", "fwa", "fwa"),
    ("v1", "meso4", "meso4"),
    ("v1", "meso4Inception", "meso_inception4"),
    ("v1", "recce", "recce"),
    ("v1", "resnet34", "cnn_aug"),
    ("v1", "spsl", "spsl"),
    ("v1", "srm", "srm"),
    ("v1", "ucf", "ucf"),
    ("v1", "xception", "xception"),
    ("v2", "altfreezing", "altfreezing"),
    ("v2", "clip", "clip"),
    ("v2", "effort", "effort"),
    ("v2", "ftcn", "ftcn"),
    ("v2", "i3d", "i3d"),
    ("v2", "iid", "iid"),
    ("v2", "lrl", "lrl"),
    ("v2", "lsda", "lsda"),
    ("v2", "multi_attention", "multi_attention"),
    ("v2", "pcl_xception", "pcl_xception"),
    ("v2", "rfm", "rfm"),
    ("v2", "sbi", "sbi"),
    ("v2", "sia", "sia"),
    ("v2", "sladd", "sladd"),
    ("v2", "sta_clip", "sta_clip"),
    ("v2", "stil", "stil"),
    ("v2", "tall", "tall"),
    ("v2", "timesformer", "timesformer"),
    ("v2", "uia_vit", "uia_vit"),
    ("v2", "videomae", "videomae"),
    ("v2", "xclip", "xclip"),
)


def _compared(reference: Mapping[str, Any]) -> str:
    """What the test compares for ``reference``: its loss terms, gradients, running statistics."""
    parts = [f"loss terms {', '.join(sorted(reference['losses']))}"]
    parts.append(f"{len(reference['grads'])} gradients")
    if reference["buffers"]:
        parts.append(f"{len(reference['buffers'])} running statistics")
    return "; ".join(parts)


def _batch(reference: Mapping[str, Any]) -> str:
    """The reference's image batch, e.g. ``4 x 3 x 32 x 32, float64``."""
    shape = " x ".join(str(n) for n in reference["batch"]["image"]["shape"])
    return f"{shape}, {reference['dtype']}"


def make_table(
    references: Mapping[str, Mapping[str, Any]],
    statuses: Mapping[str, str],
    conditions: Mapping[str, str] | None = None,
) -> str:
    """The Markdown table: ``references`` by DeepfakeBench name (those stored), ``statuses``:
    the known difference and its cause of a compared detector (absent: none), ``conditions``:
    what an equality holds only under (absent: the detector as built by default)."""
    conditions = conditions or {}
    rel = f"{tp.REL:.0e}".replace("e-0", "e-")  # 1e-4
    lines = [
        "| release | DeepfakeBench | ours | training step | compared | batch |",
        "|---|---|---|---|---|---|",
    ]
    for release, dfb, ours in DETECTORS:
        reference = references.get(dfb)
        if reference is None:
            cells = ["not compared yet", "", ""]
        else:
            status = statuses.get(dfb) or f"equal within {rel} (relative)"
            if dfb in conditions:
                status = f"{status}, {conditions[dfb]}"
            cells = [status, _compared(reference), _batch(reference)]
        lines.append("| " + " | ".join([release, dfb, f"`{ours}`", *cells]) + " |")
    return "\n".join(lines)


def current_table() -> str:
    """The table from the stored references and the test's cases (their ``status``)."""
    from tests.test_training_step_parity import CASES

    references = {name: tp.load_reference(name) for name in tp.fixture_names()}
    unknown = sorted(set(references) - {dfb for _, dfb, _ in DETECTORS})
    if unknown:
        raise ValueError(f"references of no DeepfakeBench detector listed in DETECTORS: {unknown}")
    # a reference without a case of ours is not compared (test_every_reference_has_a_case fails)
    compared = {name: ref for name, ref in references.items() if name in CASES}
    statuses = {name: CASES[name].status for name in compared if CASES[name].status}
    conditions = {name: CASES[name].condition for name in compared if CASES[name].condition}
    return make_table(compared, statuses, conditions)


def with_table(doc: str, table: str) -> str:
    """``doc`` with the text between :data:`BEGIN` and :data:`END` replaced by ``table``."""
    head, begin, rest = doc.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"{DOC} lacks the markers {BEGIN!r} ... {END!r}")
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


def check_registry_names() -> None:
    """Every ``DETECTORS`` row names the detector our registry builds for that DeepfakeBench
    detector (imports every detector module: run when the table is made, not in the tests)."""
    from fairforensics.detectors import get_detector_class, list_detectors

    ours = {}
    for name in list_detectors():
        dfb = get_detector_class(name).deepfakebench_name
        if dfb is not None:
            ours[dfb] = name
    listed = {dfb: name for _, dfb, name in DETECTORS}
    if listed != ours:
        differ = sorted(set(listed.items()) ^ set(ours.items()))
        raise ValueError(f"DETECTORS differs from the registry's deepfakebench_name: {differ}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the table is stale")
    args = parser.parse_args(argv)
    doc = DOC.read_text(encoding="utf-8")
    new = with_table(doc, current_table())
    if args.check:
        if new != doc:
            print(f"error: the training-step table of {DOC} is not current", file=sys.stderr)
            return 1
        return 0
    check_registry_names()
    if new != doc:
        tmp = DOC.with_suffix(".md.tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(DOC)
    print(f"wrote the training-step table of {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
