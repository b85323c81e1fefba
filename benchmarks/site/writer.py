"""Writes the site's pages (one frame: title, navigation, the local style sheet, the inlined
sorting script, relative links only) and the JSON of every table a page shows (``tables/<name>.json``, linked under it,
listed in ``tables/index.json``)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from fairforensics.benchmarks.board_html import SORT_SCRIPT, table_html
from fairforensics.benchmarks.site.assets import CSS
from fairforensics.evaluation.results import slug
from fairforensics.evaluation.tables import Table
from fairforensics.preprocessing.files import atomic_write_text, write_json


def esc(value: Any) -> str:
    """HTML-escaped text of ``value``."""
    return html.escape(str(value), quote=True)


class SiteWriter:
    """The pages and tables of one site folder."""

    def __init__(
        self, out: Path, benchmark: str, header: str, pages: dict[str, str] | None = None
    ) -> None:
        self.out = out
        self.benchmark = benchmark
        #: the line under every page's title (date, counts, settings); ``{up}``: the way up
        #: from the page to the site's folder
        self.header = header
        self.tables: dict[str, str] = {}  # name -> title of every table written
        self.pages = pages or {}  # detector -> its page (under the site folder)

    def table(self, table: Table, name: str, depth: int) -> str:
        """The table's sortable HTML (each detector linked to its page) with a link to its JSON
        (written once per name)."""
        name = slug(name)
        text = table.to_json()
        path = self.out / "tables" / f"{name}.json"
        if name in self.tables:
            if path.read_text(encoding="utf-8") != text + "\n":
                raise ValueError(f"two different tables named {name}")
        else:
            atomic_write_text(path, text + "\n")
            self.tables[name] = table.title
        up = "../" * depth
        links = {name: up + page for name, page in self.pages.items()}
        return (
            table_html(table, links)
            + f"<p class='json'><a href='{up}tables/{name}.json'>JSON</a></p>"
        )

    def page(self, rel: str, title: str, parts: list[str]) -> Path:
        """Write the page ``rel`` (a path under the site folder) holding ``parts``."""
        up = "../" * rel.count("/")
        nav = (
            f"<nav><a href='{up}index.html'>Leaderboard</a>"
            f"<a href='{up}index.html#testsets'>Test sets</a>"
            f"<a href='{up}index.html#detectors'>Detectors</a>"
            f"<a href='{up}changelog.html'>Changelog</a>"
            f"<a href='{up}tables/index.json'>Tables (JSON)</a></nav>"
        )
        page = (
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{esc(title)} - {esc(self.benchmark)}</title>"
            f"<link rel='stylesheet' href='{up}{CSS}'><script>{SORT_SCRIPT}</script></head>"
            f"<body><h1>{esc(title)}</h1><p class='meta'>{self.header.replace('{up}', up)}</p>{nav}"
            f"{''.join(parts)}</body></html>\n"
        )
        path = self.out / rel
        atomic_write_text(path, page)
        return path

    def index_of_tables(self) -> None:
        """``tables/index.json``: every table's file and title."""
        listing = [{"file": f"{n}.json", "title": t} for n, t in sorted(self.tables.items())]
        write_json(self.out / "tables" / "index.json", listing)
