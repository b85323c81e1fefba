"""Where a ``--model`` reference lies: a folder, or ``hf:OWNER/NAME[@REVISION]`` on the Hugging
Face Hub, fetched through ``huggingface_hub`` into its cache (a revision, a branch, tag or
commit, pins the files; ``HF_HUB_OFFLINE=1`` or no network reads the cache only).

``config.json`` is fetched first; the other files are then taken from the same commit (its
snapshot folder in the cache), so a branch that moves in between cannot mix two versions, and a
cached package costs one request (none for a revision that is a commit hash already cached:
huggingface_hub reads those from the cache)."""

from __future__ import annotations

from pathlib import Path

from fairforensics.evaluation.model_package.schema import (
    CARD_FILE,
    CONFIG_FILE,
    WEIGHTS_FILE,
    PackageError,
)

PREFIX = "hf:"


def parse_hub_ref(ref: str) -> tuple[str, str | None]:
    """``hf:OWNER/NAME[@REV]`` -> (``OWNER/NAME``, ``REV`` or None)."""
    repo, _, revision = ref[len(PREFIX) :].partition("@")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise PackageError(f"--model {ref}: expected hf:OWNER/NAME[@REVISION]")
    return repo, revision or None


def resolve_model_ref(ref: str | Path) -> Path:
    """The local folder of a package reference (a Hub reference is downloaded into, or read
    from, ``huggingface_hub``'s cache)."""
    text = str(ref)
    if not text.startswith(PREFIX):
        return Path(text).expanduser()
    repo, revision = parse_hub_ref(text)
    # a commit hash already cached is read without a request (huggingface_hub's own rule)
    config = _fetch(text, repo, CONFIG_FILE, revision)
    folder = config.parent  # snapshots/<commit>/
    for name in (WEIGHTS_FILE, CARD_FILE):
        if not (folder / name).is_file():
            # the card is for readers: the package loads without it
            _fetch(text, repo, name, folder.name, missing_ok=name == CARD_FILE)
    return folder


def _fetch(
    ref: str,
    repo: str,
    name: str,
    revision: str | None,
    *,
    missing_ok: bool = False,
) -> Path | None:
    """``name`` of ``repo`` at ``revision`` through ``huggingface_hub``; None when missing and
    ``missing_ok``; every failure a one-line :class:`PackageError` naming the repository."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{repo}@{revision or 'main'}"
    try:
        return Path(hf_hub_download(repo, name, revision=revision))
    except LocalEntryNotFoundError:  # first: it is also an EntryNotFoundError
        if missing_ok:
            return None
        raise PackageError(
            f"--model {ref}: {where} is not in the Hugging Face cache and the Hub cannot be "
            "reached (HF_HUB_OFFLINE=1 or no network); download it once online"
        ) from None
    except RevisionNotFoundError:
        raise PackageError(f"--model {ref}: {repo} has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        raise PackageError(
            f"--model {ref}: no repository {repo} on the Hub (or it is private: log in with "
            "huggingface-cli login)"
        ) from None
    except EntryNotFoundError:
        if missing_ok:
            return None
        raise PackageError(f"--model {ref}: {where} has no {name}") from None
    except (HfHubHTTPError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PackageError(f"--model {ref}: cannot fetch {where}: {first}") from None
