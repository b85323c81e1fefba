"""The one error handler of every command (issue 14, item 8): a user's mistake is one line
``error: ...`` on stderr and exit code 2, Ctrl-C exits 130 and SIGTERM 143, never a traceback.

Set ``FF_TRACEBACK=1`` to see the traceback of a handled error (for bug reports).

The console log of every command (:func:`configure_logging`) shows each kind of warning once;
its repeats are counted and summarised in one line per kind when the command ends.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from fairforensics.configs import ConfigError


class UserInputError(ConfigError):
    """A command-line argument that cannot work (an unknown name, a missing option)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that ``finally`` blocks and Ctrl-C cleanups run."""

    signum = signal.SIGTERM


#: Errors that describe the user's input, not a bug: shown as one line, exit code 2. With them,
#: the library's errors of :data:`LIBRARY_USER_ERRORS` (see :func:`user_errors`).
USER_ERRORS: tuple[type[BaseException], ...] = (ConfigError, ValueError, OSError)

#: ``(module, class)`` of the library's errors that describe the user's input and are no
#: ValueError. They are looked up only in modules already imported: an error whose module was
#: never imported cannot have been raised, and the handler imports no detector (nor torch), so
#: ``--help`` and argument errors start fast (issue 31, item 4).
LIBRARY_USER_ERRORS: tuple[tuple[str, str], ...] = (
    ("fairforensics.detectors.weights", "CheckpointError"),
    ("fairforensics.detectors.deepfakebench", "WeightsError"),
    ("fairforensics.detectors.backbones", "PretrainedWeightsError"),
    ("fairforensics.preprocessing.demo_dataset", "DemoDataError"),
    ("fairforensics.preprocessing.video", "MediaReadError"),
    ("fairforensics.training.step", "NonFiniteLossError"),
    ("fairforensics.benchmarks.sweep", "SweepError"),
)


def user_errors() -> tuple[type[BaseException], ...]:
    """:data:`USER_ERRORS` and the classes of :data:`LIBRARY_USER_ERRORS` imported so far."""
    found = []
    for module, name in LIBRARY_USER_ERRORS:
        loaded = sys.modules.get(module)
        if loaded is not None:
            found.append(getattr(loaded, name))
    return (*USER_ERRORS, *found)


class RepeatFilter(logging.Filter):
    """Pass the first warning of each kind, count the others for :meth:`summary`. A kind is the
    logger and the message with its paths and numbers blanked (``skipped a/1.mp4: file not
    found`` and ``skipped b/2.mp4: file not found`` are one kind, another reason another)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[tuple[str, str], int] = {}
        self.first: dict[tuple[str, str], str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING or getattr(record, "repeat_summary", False):
            return True
        message = record.getMessage()
        key = (record.name, _NUMBER.sub("#", _PATH.sub("<path>", message)))
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.counts[key] == 1:
            self.first[key] = record.getMessage()
            return True
        return False

    def summary(self) -> list[str]:
        """One line per repeated kind: how many more, and the first of them."""
        return [
            f"{n - 1} more warning{'s' if n > 2 else ''} like: {_shorten(self.first[key])}"
            for key, n in self.counts.items()
            if n > 1
        ]


def _shorten(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


_PATH = re.compile(r"[^\s'\"(),;]*[/\\][^\s'\"(),;]*")  # a token with a path separator
_NUMBER = re.compile(r"\d+(?:\.\d+)?")

#: the filter on the console handler that :func:`configure_logging` made (reset each time)
REPEATS = RepeatFilter()


def configure_logging(**kwargs: Any) -> None:
    """``logging.basicConfig(**kwargs)`` with :data:`REPEATS` on the console handler it makes
    (nothing changes when the root logger already has handlers, e.g. under pytest)."""
    global REPEATS
    root = logging.getLogger()
    fresh = not root.handlers
    logging.basicConfig(**kwargs)
    REPEATS = RepeatFilter()
    if fresh:
        for handler in root.handlers:
            handler.addFilter(REPEATS)


def _summarise_repeats() -> None:
    for line in REPEATS.summary():
        logging.getLogger("fairforensics").warning(line, extra={"repeat_summary": True})


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
    # a KeyError's str() is the repr of its key: show the message itself
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def run_cli(
    main: Callable[[Sequence[str] | None], int | None], argv: list[str] | None = None
) -> NoReturn:
    """Run a command's ``main(argv)`` and exit: its return code, 2 for :func:`user_errors`
    (one line on stderr), 130 for Ctrl-C and 143 for SIGTERM."""
    if hasattr(signal, "SIGTERM") and signal.getsignal(signal.SIGTERM) in (
        signal.SIG_DFL,
        None,
    ):
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        try:
            code = main(argv)
        finally:
            _summarise_repeats()
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        name = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
        detail = str(exc) if type(exc) in (KeyboardInterrupt, Terminated) else ""
        print(f"stopped ({name})" + (f": {detail}" if detail else ""), file=sys.stderr)
        sys.exit(128 + int(signum))
    except Exception as exc:
        if not isinstance(exc, user_errors()) or os.environ.get("FF_TRACEBACK"):
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
