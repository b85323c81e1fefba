"""The commands: ``fairforensics <verb> [args]`` or ``ff-<verb> [args]`` once installed, and
``python scripts/<verb>.py [args]`` in a checkout (thin wrappers of these modules).

The library is the one package ``fairforensics`` (its subpackages are the repository's folders),
so neither the working directory nor another distribution can shadow part of it.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

from fairforensics.cli.errors import run_cli

#: verb -> module of this package with ``main(argv) -> int``.
VERBS = {
    "preprocess": "preprocess",
    "train": "train",
    "test": "test",
    "fairness": "fairness",
    "metamorphic": "metamorphic",
    "benchmark": "benchmark",
    "detect": "detect",
    "demographics": "demographics",
    "combine": "combine",
    "detectors": "detectors",
    "perturb": "perturb",
    "robustness": "robustness",
    "export": "export",
    "models": "models",
    "audit": "audit",
    "verify": "verify",
    "calibrate": "calibrate",
    "submit": "submit",
    "board": "board",
}

USAGE = "usage: fairforensics {" + ",".join(VERBS) + "} [ARGS ...]   (--help after a verb)"


def help_text() -> str:
    """``fairforensics --help``: every verb with one line, where configs and guides are."""
    from fairforensics.cli.helptext import docs_dir, summary

    width = max(map(len, VERBS))
    verbs = "\n".join(f"  {verb:<{width}}  {summary(verb)}" for verb in VERBS)
    return (
        f"{USAGE}\n\nBenchmark deepfake and face presentation-attack detectors, with fairness "
        f"measured by default.\n\ncommands (also installed as ff-<command>):\n{verbs}\n\n"
        "A --config takes a YAML file or the name of a config shipped with the package (e.g.\n"
        "fairforensics preprocess --config FF-c23); a file in the working folder wins.\n"
        f"guides: {docs_dir()}\n"
    )


def run_verb(verb: str, argv: list[str] | None = None) -> NoReturn:
    """Run one command with the shared error handling (:func:`run_cli`)."""
    module = importlib.import_module(f"fairforensics.cli.{VERBS[verb]}")
    run_cli(module.main, argv)


def main(argv: list[str] | None = None) -> NoReturn:
    """``fairforensics <verb> [args]``."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(help_text(), end="", file=sys.stdout if args else sys.stderr)
        sys.exit(0 if args else 2)
    if args[0] not in VERBS:
        print(f"error: unknown command {args[0]!r}; {USAGE}", file=sys.stderr)
        sys.exit(2)
    sys.argv[0] = f"fairforensics {args[0]}"
    run_verb(args[0], args[1:])


def preprocess() -> NoReturn:
    """``ff-preprocess``."""
    run_verb("preprocess")


def train() -> NoReturn:
    """``ff-train``."""
    run_verb("train")


def test() -> NoReturn:
    """``ff-test``."""
    run_verb("test")


def fairness() -> NoReturn:
    """``ff-fairness``."""
    run_verb("fairness")


def metamorphic() -> NoReturn:
    """``ff-metamorphic``."""
    run_verb("metamorphic")


def benchmark() -> NoReturn:
    """``ff-benchmark``."""
    run_verb("benchmark")


def detect() -> NoReturn:
    """``ff-detect``."""
    run_verb("detect")


def demographics() -> NoReturn:
    """``ff-demographics``."""
    run_verb("demographics")


def combine() -> NoReturn:
    """``ff-combine``."""
    run_verb("combine")


def detectors() -> NoReturn:
    """``ff-detectors``."""
    run_verb("detectors")


def perturb() -> NoReturn:
    """``ff-perturb``."""
    run_verb("perturb")


def robustness() -> NoReturn:
    """``ff-robustness``."""
    run_verb("robustness")


def export() -> NoReturn:
    """``ff-export``."""
    run_verb("export")


def models() -> NoReturn:
    """``ff-models``."""
    run_verb("models")


def audit() -> NoReturn:
    """``ff-audit``."""
    run_verb("audit")


def verify() -> NoReturn:
    """``ff-verify``."""
    run_verb("verify")


def calibrate() -> NoReturn:
    """``ff-calibrate``."""
    run_verb("calibrate")


def submit() -> NoReturn:
    """``ff-submit``."""
    run_verb("submit")


def board() -> NoReturn:
    """``ff-board``."""
    run_verb("board")
