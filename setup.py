"""Packaging: the repository's top-level folders install as subpackages of the one import name
``fairforensics`` (``detectors/`` -> ``fairforensics.detectors``); metadata is in pyproject.toml."""

from setuptools import find_namespace_packages, find_packages, setup

#: repository folders that become ``fairforensics.<folder>``
SUBPACKAGES = (
    "configs",
    "preprocessing",
    "detectors",
    "training",
    "evaluation",
    "fairness",
    "benchmarks",
)

setup(
    packages=[
        *find_packages(include=["fairforensics", "fairforensics.*"]),
        *(
            f"fairforensics.{name}"
            # namespace search: data-only folders (configs/detectors/, models/mtcnn/) are packages too
            for name in find_namespace_packages(
                include=[f"{p}{s}" for p in SUBPACKAGES for s in ("", ".*")],
                exclude=["*__pycache__"],
            )
        ),
        "fairforensics.docs",  # the guides (docs/*.md), so help texts can point to them
    ],
    package_dir={
        **{f"fairforensics.{name}": name for name in SUBPACKAGES},
        "fairforensics.docs": "docs",
    },
)
