"""The site's style sheet (the sweep's leaderboard page's, :mod:`benchmarks.board_html`, with the
site's additions), a local file, so the pages load nothing from a network; the sorting script is
inlined in every page (:mod:`benchmarks.site.writer`)."""

from __future__ import annotations

from pathlib import Path

from fairforensics.benchmarks.board_html import STYLE
from fairforensics.preprocessing.files import atomic_write_text

CSS = "assets/site.css"

#: A wide table scrolls inside itself; long words (hashes, paths) wrap: no page is wider than
#: its window.
_SITE_STYLE = """
table{display:block;max-width:100%;overflow-x:auto}
img{max-width:100%;height:auto} pre{white-space:pre-wrap;overflow-wrap:anywhere;
background:#f7f7f7;padding:0.8em;font-size:12px}
nav{font-size:13px;margin:0.5em 0 1em} nav a{margin-right:0.8em}
p,li,dd{overflow-wrap:anywhere} dt{font-weight:bold;font-size:13px} dd{margin:0 0 0.4em 1em}
.json{font-size:11px;margin-top:-0.8em}
"""


def write_assets(out: Path) -> None:
    """``assets/site.css`` under the site folder ``out``."""
    atomic_write_text(out / CSS, STYLE.lstrip() + _SITE_STYLE.lstrip())
