"""The face crop a detector expects (issue 29 item 3): the ``crop`` section of detector configs,
the crop an index records, and the one warning when they differ."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from fairforensics.configs import ConfigError, shipped_configs
from fairforensics.configs.crop import CropSpec, expected_crop
from fairforensics.detectors.registry import load_detector_yaml
from fairforensics.detectors.weights import weights_config
from fairforensics.preprocessing.crops import check_crop, common_crop, crop_note
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry
from fairforensics.training.config import load_train_config

MESONET = CropSpec("mesonet", 2.86, 256)
DEEPFAKEBENCH = CropSpec("template", 1.3, 256)
PAD = {"deeppixbis", "lbp_mlp", "lmfd_pad", "pad_resnet50"}  # paper 001's, no crop defined


def _index(name: str, crop: CropSpec | None, root: str = ".") -> DatasetIndex:
    video = VideoEntry("000", 0, "real", "test", ["a.png"])
    return DatasetIndex(name, "deepfake", [video], root=Path(root), crop=crop)


def test_the_shipped_detector_configs_say_the_crop_of_their_weights() -> None:
    """MesoNet's paper variants: the authors' crop; DeepfakeBench's detectors: its 1.3 at 256."""
    for variant in ("meso4", "meso_inception4"):
        assert expected_crop(load_detector_yaml(variant, variant="paper")) == MESONET
    names = [n for n in shipped_configs("detectors") if "/" not in n]
    assert len(names) > 40
    for name in names:
        crop = expected_crop(load_detector_yaml(name))
        assert crop == (None if name in PAD or name == "pg_fdd" else DEEPFAKEBENCH), name


def test_a_bad_crop_section_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("detector: meso4\ncrop: {method: tight}\n")
    with pytest.raises(ConfigError, match=r"mine.yaml \(crop\).*'method'.*'template', 'mesonet'"):
        load_detector_yaml("meso4", path)
    path.write_text("detector: meso4\ncrop: {method: mesonet, scale: 0.5}\n")
    with pytest.raises(ConfigError, match="scale.*>= 1"):
        load_detector_yaml("meso4", path)
    with pytest.raises(ConfigError, match="unknown key 'crop.side'; allowed keys here"):
        load_train_config("xception", overrides=["crop.side=3"])
    assert load_train_config("meso4", variant="paper").crop == MESONET
    assert load_train_config("lbp_mlp").crop is None


def test_a_keras_file_is_described_by_the_paper_config(tmp_path: Path) -> None:
    h5 = tmp_path / "Meso4_DF.h5"
    h5.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64))
    assert expected_crop(weights_config("meso4", h5)) == MESONET
    pt = tmp_path / "dfb.pth"
    pt.write_bytes(b"PK\x03\x04" + bytes(64))
    assert expected_crop(weights_config("meso4", pt)) == DEEPFAKEBENCH
    assert expected_crop(weights_config("meso4", pt, variant="paper")) == MESONET


def test_one_warning_per_index_whose_crop_differs(caplog: pytest.LogCaptureFixture) -> None:
    wide = _index("FF-c23", DEEPFAKEBENCH, "/data/a")
    with caplog.at_level(logging.INFO, logger="fairforensics.preprocessing.crops"):
        for _ in range(3):
            note = check_crop(wide, MESONET)
        assert check_crop(_index("FF-c23", MESONET, "/data/b"), MESONET) is None
        assert check_crop(_index("CDF", None), MESONET) is not None
        assert check_crop(_index("CDF", None), None) is None  # nothing expected
    assert "margin 1.3" in note and "MesoNet authors' crop" in note
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].getMessage() == note
    (unknown,) = [r for r in caplog.records if r.levelno == logging.INFO]
    assert "crop of CDF is unknown" in unknown.getMessage()


def test_crop_spec_compares_and_combines() -> None:
    assert CropSpec("template", 1.3000001, 256).matches(DEEPFAKEBENCH)
    assert not CropSpec("template", 1.3, 320).matches(DEEPFAKEBENCH)
    assert not MESONET.matches(CropSpec("template", 2.86, 256))
    with pytest.raises(ValueError, match="'method'"):
        CropSpec("tight")
    assert crop_note(_index("a", MESONET), MESONET) is None
    same = [_index("a", DEEPFAKEBENCH), _index("b", CropSpec("template", 1.3, 256))]
    assert common_crop(same) == DEEPFAKEBENCH
    assert common_crop([*same, _index("c", MESONET)]) is None
    assert common_crop([*same, _index("c", None)]) is None


def test_metamorphic_notes_a_partial_set_and_another_crop(tmp_path: Path) -> None:
    """ff-metamorphic's report says, under its title and in metamorphic.json, that the set is
    partial and cropped otherwise than the detector's weights were trained on."""
    import json

    from fairforensics.detectors import build_detector
    from fairforensics.fairness.metamorphic.pipeline import evaluate_detector
    from tests.test_train_utils import make_index

    path = make_index(tmp_path, n_real=1, n_fake=1, frames=1, size=64, splits=("test",))
    index = json.loads(path.read_text())
    index.update(schema_version=3, videos_listed=10, videos_found=2)
    index["crop"] = DEEPFAKEBENCH.to_json()
    path.write_text(json.dumps(index))
    detector = build_detector("meso4", input_size=32)
    relations = tmp_path / "lips.yaml"  # one test case keeps it short
    relations.write_text(
        "max_yaw: null\nrelations: [{id: MR3, cases: [{id: TC7, transform: makeup, "
        "params: {components: [lipstick], intensity: light}}]}]\n"
    )
    files = evaluate_detector(
        detector, "tiny", relations, data_root=tmp_path, out_dir=tmp_path / "mm", n_examples=0,
        expected_crop=MESONET,
    )  # fmt: skip
    head = files["markdown"].read_text().split("## ")[0]
    assert "**Note:** tiny (partial: 2 of 10 listed videos)" in head
    assert "margin 1.3" in head and "MesoNet authors' crop" in head
    summary = json.loads(files["json"].read_text())
    assert summary["test_data"] == "tiny (partial: 2 of 10 listed videos)"
    assert len(summary["notes"]) == 2 and summary["expected_crop"] == MESONET.to_json()
