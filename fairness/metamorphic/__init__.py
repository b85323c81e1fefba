"""Metamorphic fairness testing with landmark-driven makeup (paper 000).

``apply_makeup`` draws makeup on a face from its 68 dlib landmarks; relations and test cases
(MR1-MR3 / TC1-TC7 in ``configs/metamorphic/makeup.yaml``) are read by ``load_relations``;
``run_metamorphic`` scores every face untransformed and under each case; ``case_table`` and
``write_report`` give the per-case, per-gender tables, the Figure-6 plot and an example sheet;
``evaluate_run`` / ``evaluate_detector`` (:mod:`fairness.metamorphic.pipeline`) do all of it
for a trained run / any loaded detector.
"""

from fairforensics.fairness.metamorphic.makeup import (
    MakeupConfig,
    adaptive_colours,
    apply_makeup,
    patch_statistics,
    skin_statistics,
)
from fairforensics.fairness.metamorphic.regions import LandmarkError, region_mask
from fairforensics.fairness.metamorphic.relations import (
    BENCHMARK,
    MetamorphicConfig,
    RelationConfig,
    TestCaseConfig,
    load_relations,
    relation_holds,
)
from fairforensics.fairness.metamorphic.runner import (
    FaceSample,
    MetamorphicResult,
    Skipped,
    detector_scorer,
    run_metamorphic,
)
from fairforensics.fairness.metamorphic.tables import case_table
from fairforensics.fairness.metamorphic.transforms import (
    build_transform,
    list_transforms,
    register_transform,
)

__all__ = [
    "BENCHMARK",
    "FaceSample",
    "LandmarkError",
    "MakeupConfig",
    "MetamorphicConfig",
    "MetamorphicResult",
    "RelationConfig",
    "Skipped",
    "TestCaseConfig",
    "adaptive_colours",
    "apply_makeup",
    "build_transform",
    "case_table",
    "detector_scorer",
    "list_transforms",
    "load_relations",
    "patch_statistics",
    "region_mask",
    "register_transform",
    "relation_holds",
    "run_metamorphic",
    "skin_statistics",
]
