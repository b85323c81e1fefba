"""The training-step parity table of docs/detectors.md is the one ``tests/training_step_table.py``
makes from the stored references (regenerate it after adding or changing a reference)."""

from __future__ import annotations

from tests import training_parity as tp
from tests import training_step_table as table
from tests.test_training_step_parity import CASES


def test_docs_table_is_current() -> None:
    doc = table.DOC.read_text(encoding="utf-8")
    assert table.with_table(doc, table.current_table()) == doc, (
        "docs/detectors.md: run `.venv/bin/python -m tests.training_step_table`"
    )


def test_every_deepfakebench_detector_listed_once() -> None:
    releases = [release for release, _, _ in table.DETECTORS]
    assert (releases.count("v1"), releases.count("v2")) == (15, 21)
    assert len({dfb for _, dfb, _ in table.DETECTORS}) == 36
    assert len({ours for _, _, ours in table.DETECTORS}) == 36


def test_cases_build_the_listed_detector() -> None:
    ours = {dfb: name for _, dfb, name in table.DETECTORS}
    assert {dfb: side.name for dfb, side in CASES.items()} == {dfb: ours[dfb] for dfb in CASES}


def test_table_rows() -> None:
    reference = {
        "losses": {"overall": 1.0, "cls": 1.0},
        "grads": {"a": [1.0, 1.0, 1.0]},
        "buffers": {},
        "batch": {"image": {"shape": [4, 3, 32, 32]}},
        "dtype": "float64",
    }
    rows = table.make_table(
        {"xception": reference, "meso4": reference}, {"meso4": "differs: a cause"}
    ).splitlines()
    assert len(rows) == 2 + 36
    assert (
        "| v1 | xception | `xception` | equal within 1e-4 (relative) | loss terms cls, "
        "overall; 1 gradients | 4 x 3 x 32 x 32, float64 |" in rows
    )
    assert "| v1 | meso4 | `meso4` | differs: a cause |" in " ".join(rows)
    assert "| v2 | lsda | `lsda` | not compared yet |  |  |" in rows
    assert tp.REL == 1e-4


def test_a_case_with_a_status_is_marked_xfail() -> None:
    from tests.test_training_step_parity import OurSide, _marks

    assert _marks(OurSide("x", {})) == []
    (mark,) = _marks(OurSide("x", {}, status="differs: a cause"))
    assert mark.name == "xfail" and mark.kwargs["reason"] == "differs: a cause"


#: Settings of a case that only size the model down (layers, widths, input), not what it computes.
SIZE_KEYS = {"input_size", "layers", "clip_size", "frames_per_group", "width", "embed_dim",
             "depths", "num_heads", "window_size", "mlp_dim", "real_encoder_depth",
             "extractor_depth"}  # fmt: skip


def test_a_case_with_another_setting_says_so_in_the_table() -> None:
    """ "Equal" for a detector built with a setting other than its shipped one (DeepfakeBench's
    batch-coupled attention) or with a part injected on both sides (SLADD's synthesis) names that
    in its row: the row is read as the detector's default behaviour otherwise."""
    import dataclasses

    from fairforensics.detectors import get_detector_class, load_detector_yaml

    for dfb, side in CASES.items():
        cls = get_detector_class(side.name)
        shipped = {f.name: f.default for f in dataclasses.fields(cls.Config)}
        shipped.update(load_detector_yaml(side.name).get("model") or {})
        for key, value in side.config.items():
            if key not in SIZE_KEYS and shipped.get(key) != value:
                assert f"`{key}: {str(value).lower()}`" in side.condition, (dfb, key)
    rows = {line.split(" | ")[1]: line for line in table.current_table().splitlines()[2:]}
    assert "only with `batch_coupled_attention: true`" in rows["sta_clip"]
    assert "only with `batch_coupled_attention: true`" in rows["sia"]
    assert "synthesised images and masks injected on both sides" in rows["sladd"]
