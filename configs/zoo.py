"""The zoo: known public checkpoints of the registered detectors (``configs/zoo.yaml``, data
kept in the package), with where each is published, its licence, the ``export --preset`` that
imports it and the test that checks a package of it here, if any (``fairforensics models``).
Nothing here downloads; ``tests/test_model_zoo.py`` checks the data against the registry."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fairforensics.configs.loader import ConfigError, load_yaml

ZOO_FILE = Path(__file__).resolve().parent / "zoo.yaml"


@dataclass(frozen=True)
class ZooEntry:
    """One public checkpoint."""

    file: str  # its file name (path inside the published folder)
    detector: str  # the registered detector that loads it
    source: str  # key of the zoo's sources
    what: str
    published: str
    licence: str
    preset: str  # fairforensics export --preset
    checked: str | None = None  # the test that exports and scores it here (None: not checked)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def zoo(path: str | Path = ZOO_FILE) -> list[ZooEntry]:
    """Every checkpoint of the zoo file, with its source's fields filled in."""
    data = load_yaml(Path(path))
    sources = data.get("sources") or {}
    entries = []
    for item in data.get("checkpoints") or []:
        source = sources.get(item.get("source"))
        if source is None:
            raise ConfigError(f"{path}: {item.get('file')}: unknown source {item.get('source')!r}")
        entries.append(
            ZooEntry(
                file=item["file"],
                detector=item["detector"],
                source=item["source"],
                what=" ".join(str(source["what"]).split()),
                published=source["published"],
                licence=source["licence"],
                preset=source["preset"],
                checked=item.get("checked"),
            )
        )
    return entries
