"""FairForensics: benchmark deepfake and face presentation-attack detectors, with fairness
measured by default. The one import name; its subpackages are ``configs``, ``preprocessing``,
``detectors``, ``training``, ``evaluation``, ``fairness``, ``benchmarks`` and ``cli`` (the commands),
e.g. ``from fairforensics.detectors import build_detector``. ``fairforensics.detect(paths, run=...)`` or
``fairforensics.detect(paths, model=...)`` scores videos and images
(:func:`fairforensics.evaluation.detection.detect`); ``fairforensics.load_model(ref)`` loads a
model package from a folder or ``hf:OWNER/NAME[@REV]``
(:func:`fairforensics.evaluation.model_package.load.load_model`)."""

from pathlib import Path

_HERE = Path(__file__).resolve().parent
if not (_HERE / "detectors").is_dir() and (_HERE.parent / "detectors" / "__init__.py").is_file():
    # a source checkout (no install needed, e.g. ``python scripts/train.py`` or PYTHONPATH=.): the
    # subpackages are the repository's top-level folders beside this one. An installed copy
    # (wheel or editable) has them inside, or mapped by the install's own finder.
    __path__.append(str(_HERE.parent))  # noqa: F821 - the package's module search path


def __getattr__(name: str):
    """``fairforensics.detect`` and ``fairforensics.load_model``: imported on first use, so
    ``import fairforensics`` stays light (no torch until a function needs it)."""
    if name == "detect":
        from fairforensics.evaluation.detection import detect

        return detect
    if name == "load_model":
        from fairforensics.evaluation.model_package.load import load_model

        return load_model
    raise AttributeError(f"module 'fairforensics' has no attribute {name!r}")
