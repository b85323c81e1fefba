"""Metamorphic relations and their test cases, read from YAML (paper 000, Table 3).

A relation states what must hold between a detector's output on a source input and on its
follow-up (transformed) input; each of its test cases names a transform and its parameters.
The source is the untransformed face (``benchmark``) unless a case names another case.
Oracles, per face (scores are probabilities of fake; the decision threshold is not part of the
file: the command resolves it, :mod:`evaluation.thresholds`):

- ``same_decision``: the decision does not change (MR1-MR3 of the paper);
- ``score_within``: ``|follow_up - source| <= tolerance``;
- ``score_not_lower`` / ``score_not_higher``: the score does not drop / rise by more than
  ``tolerance``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from fairforensics.configs import (
    CONFIG_DIR,
    ConfigError,
    load_config,
    load_yaml,
    parse_overrides,
    resolve_config,
)
from fairforensics.fairness.metamorphic.transforms import Transform, build_transform

BENCHMARK = "benchmark"
DEFAULT_RELATIONS = CONFIG_DIR / "metamorphic" / "makeup.yaml"
Oracle = Literal["same_decision", "score_within", "score_not_lower", "score_not_higher"]


@dataclass
class TestCaseConfig:
    """One test case: a transform applied to every test face."""

    __test__ = False  # not a pytest class

    id: str
    transform: str
    params: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = BENCHMARK


@dataclass
class RelationConfig:
    """One metamorphic relation and the test cases derived from it."""

    id: str
    cases: list[TestCaseConfig]
    description: str = ""
    oracle: Oracle = "same_decision"
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        if not self.cases:
            raise ValueError(f"relation {self.id!r} has no test cases")
        if self.tolerance < 0:
            raise ValueError(f"relation {self.id!r}: tolerance must be non-negative")


@dataclass
class MetamorphicConfig:
    """The relations file: relations and the group attribute.

    ``groups``: the group values compared by the bias factor, in table order (empty: every value
    found). ``max_yaw``: faces whose
    head yaw, estimated from the landmarks (:func:`~fairness.metamorphic.pose.estimate_yaw`),
    exceeds it in degrees are skipped as non-frontal, as paper 000 removed them (null: keep all).
    """

    relations: list[RelationConfig]
    group_key: str = "gender"
    groups: list[str] = field(default_factory=lambda: ["female", "male"])
    max_yaw: float | None = 30.0

    def __post_init__(self) -> None:
        if not self.relations:
            raise ValueError("at least one relation is needed")
        if self.max_yaw is not None and not 0.0 < self.max_yaw <= 90.0:
            raise ValueError(f"max_yaw must be in (0, 90] degrees or null, got {self.max_yaw}")
        seen: set[str] = {BENCHMARK}
        for relation in self.relations:
            for case in relation.cases:
                if case.id in seen:
                    raise ValueError(f"test case id {case.id!r} is used twice (or is reserved)")
                seen.add(case.id)
        for case in self.cases:
            if case.source not in seen:
                raise ValueError(
                    f"test case {case.id!r}: source {case.source!r} is not 'benchmark' or a case id"
                )
            if case.source == case.id:
                raise ValueError(f"test case {case.id!r} cannot be its own source")

    @property
    def cases(self) -> list[TestCaseConfig]:
        """Every test case, in file order."""
        return [case for relation in self.relations for case in relation.cases]

    def relation_of(self, case_id: str) -> RelationConfig:
        """The relation a test case belongs to."""
        for relation in self.relations:
            if any(case.id == case_id for case in relation.cases):
                return relation
        raise KeyError(f"no test case {case_id!r}")


def load_relations(
    path: str | Path | None = None, overrides: Iterable[str] = ()
) -> tuple[MetamorphicConfig, dict[str, Transform]]:
    """Read a relations YAML (default: the paper's ``configs/metamorphic/makeup.yaml``).

    Returns the config and every case's built transform; any bad key, value or transform is a
    :class:`~configs.ConfigError` naming the file and the key.
    """
    path = resolve_config(path, "metamorphic") if path is not None else DEFAULT_RELATIONS
    overrides = list(overrides)
    if "threshold" in load_yaml(path) or "threshold" in parse_overrides(overrides):
        raise ConfigError(
            f"{path}: 'threshold' is not a relations key: the decision threshold is the run's "
            "validation threshold by default; pass --threshold T or --threshold-from "
            "EVAL_JSON|RUN_DIR"
        )
    cfg = load_config(MetamorphicConfig, path, overrides=overrides)
    transforms = {
        case.id: build_transform(case.transform, case.params, source=f"{path}: case {case.id}")
        for case in cfg.cases
    }
    return cfg, transforms


def relation_holds(
    oracle: str, source: np.ndarray, follow_up: np.ndarray, threshold: float, tolerance: float = 0.0
) -> np.ndarray:
    """Per face, whether the relation holds between source and follow-up scores."""
    source = np.asarray(source, dtype=np.float64)
    follow_up = np.asarray(follow_up, dtype=np.float64)
    if oracle == "same_decision":
        return (source >= threshold) == (follow_up >= threshold)
    if oracle == "score_within":
        return np.abs(follow_up - source) <= tolerance
    if oracle == "score_not_lower":
        return follow_up >= source - tolerance
    if oracle == "score_not_higher":
        return follow_up <= source + tolerance
    raise ConfigError(f"unknown oracle {oracle!r}")
