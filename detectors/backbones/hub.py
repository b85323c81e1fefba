"""Where timm's hub weights of a model would come from, whether they are already on this machine,
and whether they could be downloaded: ``pretrained: timm`` without a network then fails at once
instead of after a minute of retries (issue 31, item 5).

timm reads the Hugging Face hub when the model's pretrained config names an ``hf_hub_id``, else
its ``url`` through ``torch.hub``'s cache. ``HF_HUB_OFFLINE=1`` means "no downloads" for both.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

#: seconds a connection to the download host may take before it counts as unreachable
PROBE_TIMEOUT_S = 5.0
#: the files timm's ``load_state_dict_from_hf`` looks for, in its order
HF_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class HubSource:
    """Where timm would download a model's pretrained weights from."""

    model: str
    url: str  # what timm downloads, for messages and the reachability probe
    cached: Path | None  # the local copy timm would use without downloading, if any
    where: str  # the cache folder searched, for messages


def hub_source(name: str) -> HubSource | None:
    """The hub weights of timm model ``name`` (None when timm has none for it)."""
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(name)
    if cfg is None:
        return None
    if cfg.hf_hub_id:
        return _hf_source(name, cfg.hf_hub_id, cfg.hf_hub_filename)
    if cfg.url:
        import torch.hub

        folder = Path(torch.hub.get_dir()) / "checkpoints"
        local = folder / os.path.basename(urlparse(cfg.url).path)
        return HubSource(name, cfg.url, local if local.is_file() else None, str(folder))
    return None


def _hf_source(name: str, hub_id: str, filename: str | None) -> HubSource:
    from huggingface_hub import constants, try_to_load_from_cache

    repo, _, revision = hub_id.partition("@")
    cached = None
    for file in (filename,) if filename else HF_FILES:
        found = try_to_load_from_cache(
            repo, file, cache_dir=constants.HF_HUB_CACHE, revision=revision or None
        )
        if isinstance(found, str):
            cached = Path(found)
            break
    url = f"{constants.ENDPOINT.rstrip('/')}/{repo}"
    return HubSource(name, url, cached, constants.HF_HUB_CACHE)


def offline() -> bool:
    """Whether downloads are switched off (``HF_HUB_OFFLINE``, as huggingface_hub reads it)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def unreachable(url: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why ``url``'s host (or the HTTPS proxy that would carry the request) cannot be reached
    within ``timeout`` seconds, or None when a TCP connection opens. Name resolution counts
    towards the timeout (it runs in a thread)."""
    parsed = urlparse(url)
    host, port = parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(parsed.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        via = urlparse(proxy if "://" in proxy else f"http://{proxy}")
        host, port = via.hostname or "", via.port or 80
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(f"{host}:{port}: {exc.strerror or exc}")

    probe = threading.Thread(target=connect, daemon=True)
    probe.start()
    probe.join(timeout)
    return outcome[0] if outcome else f"{host}:{port}: no answer within {timeout:g} s"


def download_blocker(source: HubSource) -> str | None:
    """Why the weights of ``source`` cannot be had now (not cached, and offline or the host
    unreachable), or None when they are cached or a download can start."""
    if source.cached is not None:
        return None
    if offline():
        return "HF_HUB_OFFLINE is set"
    reason = unreachable(source.url)
    return None if reason is None else f"cannot connect to {reason}"
