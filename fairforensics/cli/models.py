"""List the known public checkpoints of the detectors (the zoo): where each is published, its
licence, the export preset that imports it and whether a package of it is checked here.

  fairforensics models [--detector NAME] [--json]

Nothing is downloaded: download a file from where it is published, then
``fairforensics export --detector DETECTOR --weights FILE --preset PRESET --out DIR``.
"""

from __future__ import annotations

import argparse
import json

from fairforensics.cli.errors import UserInputError, run_cli
from fairforensics.cli.helptext import guide


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("models"),
    )
    p.add_argument("--detector", help="only the checkpoints of this registered detector")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from fairforensics.configs.zoo import zoo  # no torch: the zoo is data

    entries = [e for e in zoo() if args.detector in (None, e.detector)]
    if not entries:
        raise UserInputError(f"--detector {args.detector!r}: no known public checkpoint")
    if args.json:
        print(json.dumps([e.to_json() for e in entries], indent=2))
        return 0
    rows = [("detector", "file", "preset", "licence", "checked here", "published")]
    rows += [(e.detector, e.file, e.preset, e.licence, "yes" if e.checked else "no", e.published)
             for e in entries]  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1])
    print(f"\n{len(entries)} checkpoints; import one: fairforensics export --detector DETECTOR "
          "--weights FILE --preset PRESET --out DIR")  # fmt: skip
    return 0


if __name__ == "__main__":
    run_cli(main)
