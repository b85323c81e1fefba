"""What is known about each built-in detector beside its code: its paper, its name in
DeepfakeBench and how it was checked against DeepfakeBench (``fairforensics detectors``).

One :class:`DetectorInfo` per built-in detector (``tests/test_detector_catalog.py`` checks that
every registered one has a row, and that the names and parity results agree with
``docs/detectors.md``). A new kind of check is a new field of :class:`DetectorInfo` with a
default: it becomes a column of ``fairforensics detectors`` and a key of its ``--json``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fairforensics.detectors.registry import detector_family, detector_input_kind, list_detectors

#: forward parity results
PASS = "pass"
NO_FIXTURE = "no fixture"  # DeepfakeBench has no such detector, so there is nothing to compare


@dataclass(frozen=True)
class DetectorInfo:
    """One built-in detector's paper and its checks against DeepfakeBench."""

    paper: str
    deepfakebench: str | None = None  # its name in DeepfakeBench; None: DeepfakeBench has none
    # eval-mode outputs (margin, prob, features) against DeepfakeBench's on its parity fixture
    forward_parity: str = NO_FIXTURE
    parity_test: str | None = None  # the test that checks it (marked extended: ../shared)


def _parity(test: str, *rows: tuple[str, str, str]) -> dict[str, DetectorInfo]:
    """Rows ``(name, paper, DeepfakeBench name)`` whose forward parity ``test`` passes."""
    return {name: DetectorInfo(paper, dfb, PASS, f"tests/{test}.py") for name, paper, dfb in rows}


CATALOG: dict[str, DetectorInfo] = {
    **_parity(
        "test_parity_a",
        ("xception", "Rossler et al., ICCV 2019", "xception"),
        ("cnn_aug", "Wang et al., CVPR 2020", "resnet34"),
        ("efficientnet_b4", "Tan & Le, ICML 2019", "efficientnetb4"),
        ("meso4", "Afchar et al., WIFS 2018", "meso4"),
        ("meso_inception4", "Afchar et al., WIFS 2018", "meso4Inception"),
        ("capsule", "Nguyen et al., ICASSP 2019", "capsule_net"),
        ("f3net", "Qian et al., ECCV 2020", "f3net"),
        ("spsl", "Liu et al., CVPR 2021", "spsl"),
        ("srm", "Luo et al., CVPR 2021", "srm"),
    ),
    **_parity(
        "test_parity_b",
        ("fwa", "Li & Lyu, CVPRW 2019", "fwa"),
        ("xray", "Li et al., CVPR 2020", "facexray"),
        ("ffd", "Dang et al., CVPR 2020", "ffd"),
        ("core", "Ni et al., CVPRW 2022", "core"),
        ("recce", "Cao et al., CVPR 2022", "recce"),
        ("ucf", "Yan et al., ICCV 2023", "ucf"),
    ),
    **_parity(
        "test_parity_v2_clip",
        ("clip", "Radford et al., ICML 2021", "clip"),
        ("effort", "Yan et al., ICML 2025", "effort"),
        ("uia_vit", "Zhuang et al., ECCV 2022", "uia_vit"),
    ),
    **_parity(
        "test_parity_v2_effnet",
        ("sbi", "Shiohara & Yamasaki, CVPR 2022", "sbi"),
        ("sia", "Sun et al., ECCV 2022", "sia"),
        ("multi_attention", "Zhao et al., CVPR 2021", "multi_attention"),
        ("lrl", "Chen et al., AAAI 2021", "lrl"),
    ),
    **_parity(
        "test_parity_v2_xcep",
        ("rfm", "Wang & Deng, CVPR 2021", "rfm"),
        ("sladd", "Chen et al., CVPR 2022", "sladd"),
        ("pcl_xception", "Zhao et al., ICCV 2021", "pcl_xception"),
        ("lsda", "Yan et al., CVPR 2024", "lsda"),
        ("iid", "Huang et al., CVPR 2023", "iid"),
    ),
    **_parity(
        "test_parity_v2_video_vit",
        ("timesformer", "Bertasius et al., ICML 2021", "timesformer"),
        ("videomae", "Tong et al., NeurIPS 2022", "videomae"),
        ("xclip", "Ni et al., ECCV 2022", "xclip"),
        ("sta_clip", "DeepfakeBench v2 (sta_detector.py)", "sta_clip"),
    ),
    **_parity(
        "test_parity_video",
        ("i3d", "Carreira & Zisserman, CVPR 2017", "i3d"),
        ("altfreezing", "Wang et al., CVPR 2023", "altfreezing"),
        ("ftcn", "Zheng et al., ICCV 2021", "ftcn"),
        ("stil", "Gu et al., ACM MM 2021", "stil"),
        ("tall", "Xu et al., ICCV 2023", "tall"),
    ),
    "resnet_dsc": DetectorInfo("paper 002 (DeepfakeBench), Table 4"),
    "ifwa": DetectorInfo("paper 002 (DeepfakeBench), App. A.4"),
    "pg_fdd": DetectorInfo("Lin et al., CVPR 2024"),
    "lbp_mlp": DetectorInfo("Boulkenafet et al., ICIP 2015"),
    "pad_resnet50": DetectorInfo("He et al., CVPR 2016"),
    "deeppixbis": DetectorInfo("George & Marcel, ICB 2019"),
    "lmfd_pad": DetectorInfo("Fang et al., WACV 2022"),
}

#: the columns of :func:`detector_rows`, in order
COLUMNS = ("name", "family", "input", *(f.name for f in dataclasses.fields(DetectorInfo)))


def detector_rows() -> list[dict[str, Any]]:
    """One row per registered detector (built-in, plugin or ``--import``-ed): name, family,
    input (``frame`` or ``clip``) and the :class:`DetectorInfo` fields (None where unknown,
    e.g. for a user's detector). Read from the source: no built-in detector's module is
    imported (so no model's dependencies load)."""
    rows = []
    for name in list_detectors():
        info = CATALOG.get(name)
        known = dataclasses.asdict(info) if info else dict.fromkeys(COLUMNS[3:])
        kind = detector_input_kind(name)
        rows.append({"name": name, "family": detector_family(name), "input": kind, **known})
    return rows
