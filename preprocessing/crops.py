"""Whether the faces of a dataset index are cropped the way a detector expects (issue 29).

A detector's weights are trained on one crop (:class:`configs.crop.CropSpec`: a detector YAML's
``crop:`` section, or the training data's crop recorded in a run's config); an index records the
crop it was made with (``crop``, schema version 3). Scores on faces cropped otherwise can differ
(the MesoNet authors' weights give another gender verdict on DeepfakeBench's wider crops:
docs/detectors.md, MesoNet), so the commands that score an index say so, once per index.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fairforensics.configs.crop import CropSpec
from fairforensics.preprocessing.index import DatasetIndex

log = logging.getLogger(__name__)

_SAID: set[tuple[str, str, CropSpec]] = set()  # (dataset, index folder, expected) already said


def crop_note(index: DatasetIndex, expected: CropSpec | None) -> str | None:
    """A sentence when ``index``'s crop differs from ``expected`` or is unknown; ``None`` when
    they match or nothing is expected."""
    if expected is None or (index.crop is not None and index.crop.matches(expected)):
        return None
    if index.crop is None:
        return (
            f"the face crop of {index.dataset} is unknown (its index was written before indexes "
            f"recorded their crop); the detector expects {expected.describe()}"
        )
    return (
        f"{index.dataset} was cropped with {index.crop.describe()}, but the detector's weights "
        f"were trained on {expected.describe()}: its scores on this set can differ from those "
        "on faces cropped as it expects (preprocess the set with that crop: docs/detectors.md)"
    )


def check_crop(index: DatasetIndex, expected: CropSpec | None) -> str | None:
    """:func:`crop_note`, logged once per index and expected crop in this process (a warning
    for a different crop, an info line for an unknown one); returns the note for the outputs."""
    note = crop_note(index, expected)
    if note is None:
        return None
    key = (index.dataset, str(index.root), expected)
    if key not in _SAID:
        _SAID.add(key)
        log.log(logging.WARNING if index.crop is not None else logging.INFO, "%s", note)
    return note


def common_crop(indexes: Sequence[DatasetIndex]) -> CropSpec | None:
    """The crop every one of ``indexes`` records, or ``None`` when one is unknown or they differ
    (the crop a detector trained on them expects)."""
    crops = [ix.crop for ix in indexes]
    if not crops or crops[0] is None:
        return None
    return crops[0] if all(c is not None and c.matches(crops[0]) for c in crops) else None
