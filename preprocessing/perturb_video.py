"""Perturbations of whole videos: DeeperForensics-1.0's video compression (VC) and any chain of
perturbations over every frame of a video, with PyAV (FFmpeg's libraries, no ffmpeg binary).

VC is the reference's ``ffmpeg -i IN -crf PARAM -y OUT``: the decoded frames go to libx264 in
their own pixel format (no RGB round trip) with the encoder's defaults (preset medium, CRF
``PARAM``), timestamps kept. Two choices differ from an ffmpeg command: x264 runs on one thread
(the command's thread count follows the machine, and x264's output with it), and an audio stream
is copied, not re-encoded to AAC. Frames perturbed frame by frame are written losslessly
(:data:`LOSSLESS`): FFV1 for ``.mkv``/``.avi``, lossless RGB H.264 (``libx264rgb``, QP 0) for
``.mp4``/``.mov``/``.m4v``, which most players outside FFmpeg cannot show.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.configs.filemode import atomic_path
from fairforensics.preprocessing.perturbations import (
    Perturbation,
    PerturbationError,
    perturb_frame,
)
from fairforensics.preprocessing.video import MediaReadError

logger = logging.getLogger(__name__)

#: output suffix -> (codec, pixel format, options) for losslessly written frames
LOSSLESS: dict[str, tuple[str, str, dict[str, str]]] = {
    ".mkv": ("ffv1", "bgr0", {}),
    ".avi": ("ffv1", "bgr0", {}),
    ".mp4": ("libx264rgb", "rgb24", {"qp": "0"}),
    ".mov": ("libx264rgb", "rgb24", {"qp": "0"}),
    ".m4v": ("libx264rgb", "rgb24", {"qp": "0"}),
}
H264_SUFFIXES = frozenset(LOSSLESS)  # containers that take the H.264 of VC
ENCODER_THREADS = 1  # x264's output depends on its thread count: one, on every machine


class VideoPerturbError(MediaReadError):
    """A video that cannot be decoded, re-encoded or written."""


@dataclass
class VideoSource:
    """The video stream of an opened file: its frames in presentation order, and what an
    encoder needs to keep its size, rate and timestamps."""

    container: Any
    stream: Any
    width: int
    height: int
    rate: Fraction | None
    time_base: Fraction
    audio: Any = None
    audio_packets: list = field(default_factory=list)

    def frames(self, keep_audio: bool = False) -> Iterator[Any]:
        """Decoded ``av.VideoFrame``s in presentation order (one pass over the file); with
        ``keep_audio`` the audio packets met on the way are kept in :attr:`audio_packets`."""
        import av

        streams = [self.stream] + ([self.audio] if keep_audio and self.audio else [])
        last = None
        try:
            for packet in self.container.demux(streams):
                if packet.stream is self.audio:
                    if packet.size:
                        self.audio_packets.append(packet)
                    continue
                for frame in packet.decode():
                    last = _stamp(frame, last, self.time_base)
                    yield frame
        except av.error.FFmpegError as exc:
            raise VideoPerturbError(f"cannot decode the video: {exc}") from exc

    def close(self) -> None:
        self.container.close()


def _stamp(frame: Any, last: int | None, time_base: Fraction) -> int:
    """Give ``frame`` a timestamp after ``last`` (decoders may leave it empty) and reset its
    picture type, so an encoder chooses its own keyframes as an ffmpeg command does."""
    pts = frame.pts if frame.pts is not None else (0 if last is None else last + 1)
    if last is not None and pts <= last:
        pts = last + 1
    frame.pts = pts
    frame.time_base = time_base
    frame.pict_type = 0  # AV_PICTURE_TYPE_NONE
    return pts


def open_video(path: str | Path | io.BytesIO) -> VideoSource:
    """Open a video (a path or an in-memory file) for :meth:`VideoSource.frames`."""
    import av

    try:
        container = av.open(path if isinstance(path, io.BytesIO) else str(path))
    except (av.error.FFmpegError, OSError) as exc:
        raise VideoPerturbError(f"{path}: cannot open the video ({exc})") from exc
    if not container.streams.video:
        container.close()
        raise VideoPerturbError(f"{path}: no video stream")
    stream = container.streams.video[0]
    stream.codec_context.thread_count = 1
    rate = stream.average_rate or stream.guessed_rate
    audio = container.streams.audio[0] if container.streams.audio else None
    return VideoSource(
        container,
        stream,
        stream.codec_context.width,
        stream.codec_context.height,
        Fraction(rate) if rate else None,
        Fraction(stream.time_base),
        audio,
    )


class VideoEncoder:
    """One output video: H.264 at a CRF (VC), or the lossless codec of the suffix, with an
    optional audio stream copied from a template."""

    def __init__(
        self,
        target: str | Path | io.BytesIO,
        source: VideoSource,
        crf: int | None,
        suffix: str,
        pix_fmt: str | None = None,
        audio: Any = None,
    ) -> None:
        """``audio``: an input audio stream, copied (lossless outputs) or re-encoded to AAC at
        the encoder's defaults (VC, as the reference's ffmpeg command does)."""
        import av

        self.target = target
        self.container = av.open(
            target if isinstance(target, io.BytesIO) else str(target),
            "w",
            format="mp4" if isinstance(target, io.BytesIO) else None,
            options={"fflags": "+bitexact"},  # no random ids or dates: the same input, same bytes
        )
        if crf is None:
            codec, fmt, options = LOSSLESS[suffix]
        else:
            codec, options = "libx264", {"crf": str(crf)}
            formats = {f.name for f in av.codec.Codec("libx264", "w").video_formats}
            fmt = pix_fmt if pix_fmt in formats else "yuv420p"
        self.stream = self.container.add_stream(codec, rate=source.rate, options=options)
        cc = self.stream.codec_context
        cc.width, cc.height, cc.pix_fmt = source.width, source.height, fmt
        cc.time_base = source.time_base
        self.stream.time_base = source.time_base
        cc.thread_count = ENCODER_THREADS
        if crf is not None and source.stream is not None:
            src = source.stream.codec_context
            for name in ("color_range", "color_primaries", "color_trc", "colorspace"):
                setattr(cc, name, getattr(src, name))
        self.audio = None
        self.reencode_audio = crf is not None
        if audio is not None:
            try:
                if self.reencode_audio:
                    self.audio = self.container.add_stream(
                        "aac", rate=audio.codec_context.sample_rate
                    )
                    self.audio.codec_context.layout = audio.codec_context.layout
                else:
                    self.audio = self.container.add_stream_from_template(audio)
            except (ValueError, av.error.FFmpegError) as exc:
                logger.warning("%s: audio left out (%s)", target, exc)
        self.video_packets: list = []
        self.audio_packets: list = []
        self.frames = 0

    def encode(self, frame: Any) -> None:
        """Encode one ``av.VideoFrame`` (converted to the encoder's pixel format)."""
        self.video_packets.extend(self.stream.encode(frame))
        self.frames += 1

    def close(self, audio_packets: Sequence = ()) -> None:
        """Flush the encoder and write the packets, audio interleaved by time."""
        self.video_packets.extend(self.stream.encode(None))
        packets = [(p, self.stream) for p in self.video_packets]
        if self.audio is not None:
            if self.reencode_audio:
                audio_packets = self._reencode(audio_packets)
            packets += [(p, self.audio) for p in audio_packets]
        packets.sort(
            key=lambda ps: float((ps[0].dts if ps[0].dts is not None else 0) * ps[0].time_base)
        )
        for packet, stream in packets:
            packet.stream = stream
            self.container.mux(packet)
        self.container.close()

    def _reencode(self, packets: Sequence) -> list:
        out: list = []
        for packet in packets:
            for frame in packet.decode():
                out.extend(self.audio.encode(frame))
        out.extend(self.audio.encode(None))
        return out


def _rgb_step(step: Perturbation, rng: np.random.Generator) -> Callable[[Any], Any]:
    import av

    def apply(frame: Any) -> Any:
        rgb = perturb_frame(frame.to_ndarray(format="rgb24"), step, rng)
        out = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        out.pts, out.time_base, out.pict_type = frame.pts, frame.time_base, 0
        return out

    return apply


def compress_in_memory(frames: Iterator[Any], source: VideoSource, crf: int) -> io.BytesIO:
    """VC of a stream of frames into an in-memory MP4 (read back with :func:`open_video` or
    ``read_frames_pyav``)."""
    buffer = io.BytesIO()
    encoder = VideoEncoder(buffer, source, crf, ".mp4", source.stream.codec_context.pix_fmt)
    for frame in frames:
        encoder.encode(frame)
    encoder.close()
    buffer.seek(0)
    return buffer


def _chain_frames(
    source: VideoSource, chain: Sequence[Perturbation], rng: np.random.Generator, keep_audio: bool
) -> tuple[Iterator[Any], list[VideoSource]]:
    """The frames of ``source`` through every step of ``chain`` (VC steps in memory)."""
    frames = source.frames(keep_audio=keep_audio)
    opened: list[VideoSource] = []
    for step in chain:
        if step.type == "VC":
            buffer = compress_in_memory(frames, source, int(step.param))
            decoded = open_video(buffer)
            opened.append(decoded)
            frames = decoded.frames()
        else:
            frames = map(_rgb_step(step, rng), frames)
    return frames, opened


def perturb_video_file(
    input_path: str | Path,
    output_path: str | Path,
    chain: Sequence[Perturbation],
    rng: np.random.Generator,
) -> int:
    """Perturb every frame of a video with ``chain`` (in order) and write ``output_path``
    (atomically); returns the number of frames written. A chain ending in VC writes that H.264
    encode (audio re-encoded to AAC, as the reference's command); any other writes the perturbed
    frames losslessly (audio copied)."""
    output_path = Path(output_path)
    suffix = output_path.suffix.lower()
    if suffix not in H264_SUFFIXES:
        raise VideoPerturbError(
            f"{output_path}: cannot write a perturbed video as {suffix or 'a file without suffix'}; "
            f"use {', '.join(sorted(H264_SUFFIXES))}"
        )
    if not chain:
        raise PerturbationError("no perturbation given")
    import av

    source = open_video(input_path)
    opened = [source]
    try:
        last_vc = chain[-1].type == "VC"
        frames, more = _chain_frames(source, chain[:-1] if last_vc else chain, rng, True)
        opened += more
        crf = int(chain[-1].param) if last_vc else None
        pix_fmt = source.stream.codec_context.pix_fmt if len(chain) == 1 else None
        with atomic_path(output_path, suffix) as tmp:
            encoder = VideoEncoder(tmp, source, crf, suffix, pix_fmt, source.audio)
            try:
                for frame in frames:
                    encoder.encode(frame)
                encoder.close(source.audio_packets)
            finally:
                encoder.container.close()
            if encoder.frames == 0:
                raise VideoPerturbError(f"{input_path}: no frame could be decoded")
        return encoder.frames
    except av.error.FFmpegError as exc:
        raise VideoPerturbError(f"{input_path}: cannot re-encode the video ({exc})") from exc
    finally:
        for video in opened:
            video.close()
