"""The SHA-256 manifest of a bundle folder (``manifest.json``): every file but the manifest,
by its POSIX path relative to the folder, sorted. :func:`manifest_mismatch` names the first
difference in one line; the SHA-256 of ``manifest.json`` itself is the bundle's identity."""

from __future__ import annotations

import json
from pathlib import Path

from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.verify import hash_tree, scan_tree, sha256_file

MANIFEST = "manifest.json"
FORMAT = "fairforensics-manifest/1"


def write_manifest(folder: str | Path) -> str:
    """Write ``folder/manifest.json`` (every other file's SHA-256); returns its own SHA-256."""
    root = Path(folder)
    files = scan_tree(root, skip=[root / MANIFEST])
    digests = hash_tree(root, files, workers=2, progress=False)
    data = {"format": FORMAT, "algorithm": "sha256", "files": {f: digests[f] for f in files}}
    write_json(root / MANIFEST, data, indent=1)
    return sha256_file(root / MANIFEST)


def read_bundle_json(path: Path, what: str, fmt: str) -> dict:
    """The JSON object at ``path`` (a bundle's ``what``: manifest, bundle.json) whose
    ``format`` is ``fmt``; missing, unreadable or foreign: a ``ValueError`` naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no {what} (not a bundle of `fairforensics submit`)") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable {what} ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise ValueError(f"{path}: not a {fmt} file")
    return data


def read_manifest(folder: str | Path) -> dict[str, str]:
    """``{relative path: SHA-256}`` of ``folder/manifest.json``; a missing or malformed manifest
    is a ``ValueError`` naming it."""
    path = Path(folder) / MANIFEST
    data = read_bundle_json(path, "manifest", FORMAT)
    files = data.get("files")
    if data.get("algorithm") != "sha256" or not isinstance(files, dict):
        raise ValueError(f"{path}: not a SHA-256 manifest of {FORMAT}")
    return {str(k): str(v) for k, v in files.items()}


def manifest_mismatch(folder: str | Path) -> str | None:
    """The first difference between ``folder`` and its manifest in sorted path order (a file
    changed, absent or not listed) as one line, or None when every file matches."""
    root = Path(folder)
    expected = read_manifest(root)
    present = scan_tree(root, skip=[root / MANIFEST])
    have = set(present)
    problems: dict[str, str] = {}
    for rel in sorted(set(expected) - have):
        problems[rel] = f"{rel}: in the manifest, absent"
    for rel in present:
        if rel not in expected:
            problems[rel] = f"{rel}: present, not in the manifest"
    common = [f for f in present if f in expected]
    digests = hash_tree(root, common, workers=2, progress=False)
    for rel in common:
        if digests[rel] != expected[rel]:
            problems[rel] = f"{rel}: SHA-256 differs from the manifest (changed after submission)"
    return problems[min(problems)] if problems else None


def manifest_sha256(folder: str | Path) -> str:
    """The SHA-256 of ``folder/manifest.json``: the bundle's identity and cache key."""
    return sha256_file(Path(folder) / MANIFEST)
