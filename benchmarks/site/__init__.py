"""The board's static site (issue 49, items 3 and 5): one folder of HTML pages, their style and
sorting script, figures and the JSON of every table, built from admitted bundles
(:class:`benchmarks.submissions.admitted.AdmittedBundle`) with no network and no server, relative
links only (GitHub Pages subpaths, a Hugging Face static Space, ``file://``). Each bundle's
statistics are computed once and cached by its SHA-256; the same bundles give the same bytes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fairforensics.benchmarks.site.build import build
from fairforensics.benchmarks.site.summary import SiteSettings
from fairforensics.benchmarks.submissions.admitted import AdmittedBundle

__all__ = ["SiteSettings", "build_site"]


def build_site(
    bundles: list[AdmittedBundle],
    out: Path,
    *,
    benchmark: str,
    test_sets: list[str],
    refused: Sequence[tuple[str, str]] = (),
    cache_dir: Path | None = None,
) -> Path:
    """Write the site of ``bundles`` into ``out`` and return ``out/index.html``. ``refused``:
    (bundle name, one-line reason) pairs listed on the changelog; ``cache_dir``: where each
    bundle's summary is kept between builds (keyed by its SHA-256), so a rebuild reads no
    cached bundle's predictions."""
    return build(bundles, out, benchmark=benchmark, test_sets=test_sets, refused=refused,
                 cache_dir=cache_dir)  # fmt: skip
