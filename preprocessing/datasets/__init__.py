"""Dataset modules ("rearrange"): each reads one dataset family's official layout and splits.

Importing this package registers every module; ``build_listing(type, root, options)`` runs one.
"""

from fairforensics.preprocessing.datasets import (  # noqa: F401
    celebdfpp,
    deepfake,
    df40,
    faceforensics,
    generic,
    pad,
)
from fairforensics.preprocessing.datasets.base import (
    DatasetLayoutError,
    Listing,
    SourceItem,
    build_listing,
    dataset_options,
    list_dataset_types,
    register_dataset,
)

__all__ = [
    "DatasetLayoutError",
    "Listing",
    "SourceItem",
    "build_listing",
    "dataset_options",
    "list_dataset_types",
    "register_dataset",
]
