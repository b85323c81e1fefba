"""The one error handler of every command (issue 14, item 8): a user's mistake is one line
``error: ...`` on stderr and exit code 2, Ctrl-C exits 130 and SIGTERM 143, never a traceback.

Set ``FF_TRACEBACK=1`` to see the traceback of a handled error (for bug reports).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from fairforensics.configs import ConfigError
from fairforensics.detectors import CheckpointError
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.deepfakebench import WeightsError
from fairforensics.preprocessing.demo_dataset import DemoDataError
from fairforensics.preprocessing.video import MediaReadError


class UserInputError(ConfigError):
    """A command-line argument that cannot work (an unknown name, a missing option)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that ``finally`` blocks and Ctrl-C cleanups run."""

    signum = signal.SIGTERM


#: Errors that describe the user's input, not a bug: shown as one line, exit code 2.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ConfigError,
    ValueError,
    CheckpointError,
    WeightsError,
    PretrainedWeightsError,
    DemoDataError,
    MediaReadError,
    OSError,
)


def describe(exc: BaseException) -> str:
    """One line for ``exc``: an OS error names its file and what to do."""
    if isinstance(exc, OSError) and exc.filename is not None:
        reason = exc.strerror or type(exc).__name__
        hint = {
            FileNotFoundError: "check the path",
            PermissionError: "choose a path you can write, or fix its permissions",
            NotADirectoryError: "a file stands where a folder is needed; choose another path",
            IsADirectoryError: "a folder stands where a file is needed; choose another path",
        }.get(type(exc), "check the path")
        return f"{exc.filename}: {reason}; {hint}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def run_cli(
    main: Callable[[Sequence[str] | None], int | None], argv: list[str] | None = None
) -> NoReturn:
    """Run a command's ``main(argv)`` and exit: its return code, 2 for :data:`USER_ERRORS`
    (one line on stderr), 130 for Ctrl-C and 143 for SIGTERM."""
    if hasattr(signal, "SIGTERM") and signal.getsignal(signal.SIGTERM) in (
        signal.SIG_DFL,
        None,
    ):
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        code = main(argv)
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        name = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
        detail = str(exc) if type(exc) in (KeyboardInterrupt, Terminated) else ""
        print(f"stopped ({name})" + (f": {detail}" if detail else ""), file=sys.stderr)
        sys.exit(128 + int(signum))
    except USER_ERRORS as exc:
        if os.environ.get("FF_TRACEBACK"):
            raise
        print(f"error: {describe(exc)}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code or 0)


def add_import_argument(
    parser: argparse.ArgumentParser,
    help: str = "import a module that registers detectors first (repeatable)",
) -> None:
    """``--import MODULE`` (repeatable, into ``args.imports``), the option every command has."""
    parser.add_argument(
        "--import", dest="imports", action="append", default=[], metavar="MODULE", help=help
    )
