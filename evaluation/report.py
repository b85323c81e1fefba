"""One static HTML page per evaluation: tables, figures and extra sections (fairness, metamorphic).

Images are linked by paths relative to the report, so the folder can be moved or zipped as is.
Other packages add their own sections as :class:`Section` (title plus HTML snippets, image
paths or ``.html`` files whose body is embedded).
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from fairforensics.evaluation.tables import Table
from fairforensics.preprocessing.files import atomic_write_text

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".svg", ".gif", ".webp"}
_STYLE = """
body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f0f0f0} td:first-child,td:nth-child(2){text-align:left}
caption{font-weight:bold;text-align:left;padding:4px 0}
figure{display:inline-block;margin:0.5em} img{max-width:560px}
figcaption{font-size:12px;color:#555} .meta{font-size:12px;color:#555}
"""


@dataclass
class Section:
    """A titled part of the report.

    ``items``: each is a :class:`Table`, a path to an image (linked), a path to an ``.html`` file
    (its ``<body>`` content embedded), or a string of HTML.
    """

    title: str
    items: Sequence[Table | str | Path] = field(default_factory=list)
    text: str = ""


def _as_section(section: Section | tuple) -> Section:
    if isinstance(section, Section):
        return section
    title, items = section
    return Section(str(title), [items] if isinstance(items, (str, Path, Table)) else list(items))


def _render_item(item: Table | str | Path, base: Path) -> str:
    if isinstance(item, Table):
        return item.to_html()
    path = (
        Path(item)
        if isinstance(item, Path) or (isinstance(item, str) and "<" not in item)
        else None
    )
    if path is not None and path.suffix.lower() in IMAGE_SUFFIXES:
        if not path.is_file():
            raise FileNotFoundError(f"report: image {path} not found")
        rel = Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()
        name = html.escape(path.stem)
        img = f'<img src="{html.escape(rel)}" alt="{name}">'
        return f"<figure>{img}<figcaption>{name}</figcaption></figure>"
    if path is not None and path.suffix.lower() in {".html", ".htm"}:
        if not path.is_file():
            raise FileNotFoundError(f"report: HTML fragment {path} not found")
        text = path.read_text(encoding="utf-8")
        lower = text.lower()
        start, end = lower.find("<body"), lower.rfind("</body>")
        if start >= 0 and end > start:
            text = text[text.index(">", start) + 1 : end]
        return text
    if path is not None and isinstance(item, Path):
        raise ValueError(f"report: cannot embed {path} (use an image or an .html file)")
    return str(item)


def render_report(
    title: str,
    sections: Sequence[Section | tuple],
    base: str | Path,
    meta: dict | None = None,
) -> str:
    """The HTML text; image links are made relative to the folder ``base``."""
    base = Path(base)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    info = dict(meta or {})
    info.setdefault("generated", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    parts.append(
        "<p class='meta'>"
        + "<br>".join(
            f"<b>{html.escape(str(k))}</b>: {html.escape(str(v))}" for k, v in info.items()
        )
        + "</p>"
    )
    toc = []
    body = []
    for n, sec in enumerate(map(_as_section, sections)):
        anchor = f"s{n}"
        toc.append(f"<li><a href='#{anchor}'>{html.escape(sec.title)}</a></li>")
        body.append(f"<h2 id='{anchor}'>{html.escape(sec.title)}</h2>")
        if sec.text:
            body.append(f"<p>{html.escape(sec.text)}</p>")
        body.extend(_render_item(item, base) for item in sec.items)
    parts += ["<ul>", *toc, "</ul>", *body, "</body></html>"]
    return "\n".join(parts)


def write_report(
    path: str | Path,
    title: str,
    sections: Sequence[Section | tuple],
    extra_sections: Sequence[Section | tuple] = (),
    meta: dict | None = None,
) -> Path:
    """Write the report atomically. ``extra_sections`` (e.g. fairness, metamorphic results, as
    ``(title, [html or image paths])``) come after the evaluation's own sections."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, render_report(title, [*sections, *extra_sections], path.parent, meta))
    return path
