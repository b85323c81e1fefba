"""Decode only the kept frames of a video with PyAV (FFmpeg), pixel-identical to a full decode.

Frame ``i`` is the ``i``-th frame in presentation order, i.e. the ``i``-th frame a sequential
decode yields, found by its timestamp: a first pass demuxes the packets (no decoding) and sorts
their presentation timestamps. A kept frame needs only the packets from the keyframe before it
up to its own packet (decode order); in that range the frames nobody references are discarded
by the decoder (``skip_frame = NONREF``), and packets outside every such range are never
decoded: the reader seeks to the next range's keyframe when it is far, else demuxes past them.
The decoder is drained and flushed before each jump, so it restarts as at the file's start.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from pathlib import Path

import numpy as np

SEEK_GAP = 64  # packets not needed before a range: seek instead of demuxing past them


class UnindexableVideo(ValueError):
    """The video has packets without timestamps, duplicate timestamps or no keyframe."""


def _index(container, stream) -> tuple[list[int], list[bool]]:
    """Presentation timestamps and keyframe flags of the packets, in decode order."""
    pts: list[int] = []
    key: list[bool] = []
    for packet in container.demux(stream):
        if packet.size == 0:
            continue
        if packet.pts is None:
            raise UnindexableVideo("a packet has no timestamp")
        pts.append(packet.pts)
        key.append(bool(packet.is_keyframe))
    if len(set(pts)) != len(pts):
        raise UnindexableVideo("duplicate packet timestamps")
    if pts and not key[0]:
        raise UnindexableVideo("the first packet is not a keyframe")
    return pts, key


def _ranges(pts: list[int], key: list[bool], targets: list[int]) -> list[tuple[int, int]]:
    """Merged decode-order ranges [start keyframe, target packet] that the targets need."""
    pos = {p: j for j, p in enumerate(pts)}
    keys = [j for j, k in enumerate(key) if k]
    spans = []
    for t in targets:
        end = pos[t]
        k = bisect.bisect_right(keys, end) - 1
        while k > 0 and pts[keys[k]] > t:  # a leading frame of an open GOP: the GOP before
            k -= 1
        spans.append((keys[max(k, 0)], end))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _rgb(frame) -> np.ndarray:
    """RGB uint8, contiguous (FFmpeg pads rows of some widths)."""
    return np.ascontiguousarray(frame.to_ndarray(format="rgb24"))


def read_frames_pyav(
    path: str | Path, indices: list[int] | None, threads: int = 1, device: str = "cpu"
) -> dict[int, np.ndarray]:
    """``{frame number: RGB uint8}`` for ``indices`` (``None``: every frame).

    ``device``: ``cpu``, or an FFmpeg hardware decoder type (``cuda``: NVDEC) whose frames
    are copied back to memory. Frames past the last packet are missing from the result.
    Raises ``UnindexableVideo`` or ``av.error.FFmpegError`` when the file cannot be decoded
    this way (for a hardware device: when the device cannot be opened).
    """
    import av

    hwaccel = None
    if device != "cpu":
        from av.codec.hwaccel import HWAccel

        hwaccel = HWAccel(device, allow_software_fallback=False)
    with av.open(str(path), hwaccel=hwaccel) as container:
        if not container.streams.video:
            raise UnindexableVideo("no video stream")
        stream = container.streams.video[0]
        cc = stream.codec_context
        cc.thread_count = max(threads, 1)
        cc.thread_type = "AUTO" if threads > 1 else "SLICE"
        if indices is None:
            return {i: _rgb(f) for i, f in enumerate(container.decode(stream))}
        pts, key = _index(container, stream)
        order = sorted(pts)
        want = {order[i]: i for i in indices if 0 <= i < len(order)}
        if not want:
            return {}
        return _decode(container, stream, pts, _ranges(pts, key, sorted(want)), want)


def _decode(container, stream, pts, ranges, want) -> dict[int, np.ndarray]:
    cc = stream.codec_context
    pos = {p: j for j, p in enumerate(pts)}
    out: dict[int, np.ndarray] = {}

    def receive(frames) -> None:
        for frame in frames:
            if frame.pts is None:
                raise UnindexableVideo("a decoded frame has no timestamp")
            if frame.pts in want:
                out[want[frame.pts]] = _rgb(frame)

    demux: Iterator | None = None
    nxt = 0  # decode position of the packet ``demux`` yields next
    for start, end in ranges:
        if demux is not None and start > nxt:  # a jump: restart the decoder at the keyframe
            receive(cc.decode(None))
            cc.flush_buffers()
        if demux is None or start - nxt > SEEK_GAP:
            container.seek(pts[start], stream=stream, backward=True, any_frame=False)
            demux, nxt = container.demux(stream), -1
        for packet in demux:
            if packet.size == 0:
                continue
            j = pos.get(packet.pts)
            if j is None:
                raise UnindexableVideo(f"packet timestamp {packet.pts} not seen when indexing")
            if j > start and nxt <= start:
                raise UnindexableVideo(f"seeking to timestamp {pts[start]} went past it")
            nxt = j + 1
            if j < start:
                continue
            cc.skip_frame = "DEFAULT" if packet.pts in want else "NONREF"
            receive(cc.decode(packet))
            if j >= end:
                break
    cc.skip_frame = "DEFAULT"
    receive(cc.decode(None))
    return out
