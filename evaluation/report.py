"""One static HTML page per evaluation: tables, figures and extra sections (fairness, metamorphic).

Images are linked by paths relative to the report, so the folder can be moved or zipped as is.
Other packages add their own sections as :class:`Section` (title plus HTML snippets, image
paths or ``.html`` files whose body is embedded). Beside ``report.html`` lies
``report.parts.json`` (its title, header and rendered sections), so that a later command can add
or replace a section without redoing the evaluation (:func:`add_sections`; ``scripts/fairness.py``
adds its tables to the report of the evaluation its predictions come from).
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fairforensics.evaluation.tables import Table
from fairforensics.preprocessing.files import atomic_write_text, write_json
from fairforensics.preprocessing.rundir import build_time

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".svg", ".gif", ".webp"}
# Fits a 1400-pixel window (tests/test_report_layout.py): a table wider than the page scrolls
# inside itself, a figure shows at its own size up to the page's width.
_STYLE = """
body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px;display:block;max-width:100%;
overflow-x:auto}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f0f0f0} td:first-child,td:nth-child(2){text-align:left}
caption{font-weight:bold;text-align:left;padding:4px 0}
figure{display:inline-block;margin:0.5em;max-width:100%} img{max-width:100%;height:auto}
figcaption{font-size:12px;color:#555} .meta{font-size:12px;color:#555;overflow-wrap:anywhere}
tr.baseline td{color:#777;font-style:italic;background:#fafafa}
tr.sep td{text-align:left;color:#555;font-style:italic;border-top:2px solid #888}
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


def relative_to(path: str | Path, base: str | Path) -> str:
    """``path`` relative to the folder ``base`` (POSIX), so a moved folder keeps its links;
    absolute where no relative path exists (another drive on Windows)."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), Path(base).resolve())).as_posix()
    except ValueError:
        return Path(path).resolve().as_posix()


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
        rel = relative_to(path, base)
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


def render_sections(sections: Sequence[Section | tuple], base: str | Path) -> list[dict[str, str]]:
    """Each section as ``{"title", "html"}``; image links relative to the folder ``base``."""
    parts = []
    for sec in map(_as_section, sections):
        body = [f"<p>{html.escape(sec.text)}</p>"] if sec.text else []
        body.extend(_render_item(item, Path(base)) for item in sec.items)
        parts.append({"title": sec.title, "html": "\n".join(body)})
    return parts


def _page(title: str, meta: dict[str, str], parts: Sequence[dict[str, str]]) -> str:
    head = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<p class='meta'>"
        + "<br>".join(f"<b>{html.escape(k)}</b>: {html.escape(v)}" for k, v in meta.items())
        + "</p>",
    ]
    toc, body = [], []
    for n, part in enumerate(parts):
        anchor = f"s{n}"
        toc.append(f"<li><a href='#{anchor}'>{html.escape(part['title'])}</a></li>")
        body += [f"<h2 id='{anchor}'>{html.escape(part['title'])}</h2>", part["html"]]
    return "\n".join([*head, "<ul>", *toc, "</ul>", *body, "</body></html>"])


def _meta_text(meta: dict | None) -> dict[str, str]:
    """``meta`` as text, with the time the report is generated: ``SOURCE_DATE_EPOCH`` (seconds
    since 1970, the reproducible-builds convention) when set, so that a rerun's report is the
    same file, else now."""
    info = {str(k): str(v) for k, v in (meta or {}).items()}
    info.setdefault("generated", build_time().strftime("%Y-%m-%d %H:%M UTC"))
    return info


def render_report(
    title: str,
    sections: Sequence[Section | tuple],
    base: str | Path,
    meta: dict | None = None,
) -> str:
    """The HTML text; image links are made relative to the folder ``base``."""
    return _page(title, _meta_text(meta), render_sections(sections, base))


def parts_path(report: str | Path) -> Path:
    """``report.parts.json`` beside ``report.html``: what :func:`add_sections` re-renders from."""
    report = Path(report)
    return report.with_name(report.stem + ".parts.json")


def _write(path: Path, title: str, meta: dict[str, str], parts: list[dict[str, str]]) -> None:
    write_json(parts_path(path), {"title": title, "meta": meta, "sections": parts})
    atomic_write_text(path, _page(title, meta, parts))


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
    parts = render_sections([*sections, *extra_sections], path.parent)
    _write(path, title, _meta_text(meta), parts)
    return path


def add_sections(path: str | Path, sections: Sequence[Section | tuple]) -> Path:
    """Add ``sections`` to the report at ``path`` (one with the same title is replaced in place),
    re-rendered from its ``report.parts.json``; links stay relative to the report's folder."""
    path = Path(path)
    try:
        saved = json.loads(parts_path(path).read_text(encoding="utf-8"))
        title, meta, parts = saved["title"], saved["meta"], list(saved["sections"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{path}: cannot add a section, {parts_path(path).name} is missing or unreadable "
            f"({type(exc).__name__}); write the report again (scripts/test.py) first"
        ) from None
    for part in render_sections(sections, path.parent):
        at = [n for n, old in enumerate(parts) if old["title"] == part["title"]]
        if at:
            parts[at[0]] = part
        else:
            parts.append(part)
    _write(path, title, meta, parts)
    return path
