"""Where a ``--model`` reference lies: a folder, or ``hf:OWNER/NAME[@REVISION]`` on the Hugging
Face Hub, fetched through ``huggingface_hub`` into its cache (a revision, a branch, tag or
commit, pins the files; ``HF_HUB_OFFLINE=1`` or no network reads the cache only)."""

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
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{repo}@{revision or 'main'}"
    files = {}
    for name in (CONFIG_FILE, WEIGHTS_FILE, CARD_FILE):
        try:
            files[name] = Path(hf_hub_download(repo, name, revision=revision))
        except LocalEntryNotFoundError:  # first: it is also an EntryNotFoundError
            raise PackageError(
                f"--model {text}: {where} is not in the Hugging Face cache and the Hub cannot be "
                "reached (HF_HUB_OFFLINE=1 or no network); download it once online"
            ) from None
        except RevisionNotFoundError:
            raise PackageError(f"--model {text}: {repo} has no revision {revision!r}") from None
        except RepositoryNotFoundError:
            raise PackageError(
                f"--model {text}: no repository {repo} on the Hub (or it is private: log in "
                "with huggingface-cli login)"
            ) from None
        except EntryNotFoundError:
            if name == CARD_FILE:  # the card is for readers; the package loads without it
                continue
            raise PackageError(f"--model {text}: {where} has no {name}") from None
        except (HfHubHTTPError, OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise PackageError(f"--model {text}: cannot fetch {where}: {first}") from None
    return files[CONFIG_FILE].parent
