"""MTCNN face detector: the P-Net, R-Net, O-Net cascade of Zhang et al. 2016.

"Joint Face Detection and Alignment using Multi-task Cascaded Convolutional Networks" (IEEE
Signal Processing Letters 23(10)), the detector paper 001 (fairness in face PAD) crops its faces
with. Section II.A of that paper: an image pyramid; P-Net proposes candidate windows with their
bounding-box regression; non-maximum suppression (NMS) merges overlapping candidates; R-Net
rejects false candidates and refines the boxes; O-Net refines them again and outputs five facial
landmarks (eye centres, nose tip, mouth corners). Thresholds (0.6, 0.7, 0.7), minimum face size
20, pyramid factor 0.709, NMS per pyramid scale (IoU 0.5) and across scales (IoU 0.7),
candidates squared ("rerec"), pixels normalised as ``(x - 127.5) / 128`` and a final NMS on
intersection over the smaller box ("Min", 0.7) are those of the authors' released code
(``detect_face.m``).

The rest of the pipeline is facenet-pytorch's (2.6.0, ``models/utils/detect_face.py``), whose
weights these are, so that its users get its boxes: every pyramid level is resampled from the
full image, ``int(side * scale + 1)`` pixels, with torch's area interpolation in float32; a
candidate is cropped to the part of it inside the image (truncated to whole pixels) and that
part is stretched to 24x24 or 48x48 with the same resampling, where the original pads with
zeros; boxes stay float between stages, where the original truncates them; the IoU of the first
two stages' NMS has no ``+1`` pixel areas. On its own outputs for the photos and frames of
``tests/data`` (``../shared/parity/mtcnn/``) all 120 faces match in the same order, boxes and
points within 5.3e-4 px (the fixture's 3 decimals), probabilities within 5.1e-7
(``tests/test_mtcnn.py``).

Weights: the MIT-licensed P/R/O-Net weights from facenet-pytorch, vendored unchanged in
``preprocessing/models/mtcnn/`` (origin and licence there) and loaded strictly with
``torch.load(..., weights_only=True)``; nothing is downloaded. Those weights were converted
from Caffe models trained on transposed images, hence the ``permute(0, 3, 2, 1)`` before each
dense layer.

Coordinates: the cascade runs in the 1-based pixel coordinates of the original code; results
are returned 0-based (pixel ``(0, 0)`` is the top-left pixel), boxes as inclusive
``x1, y1, x2, y2``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchvision.ops import batched_nms, nms

from fairforensics.preprocessing.faces import check_rgb

WEIGHTS_DIR = Path(str(resources.files(__package__))) / "models" / "mtcnn"  # package data
THRESHOLDS = (0.6, 0.7, 0.7)
MIN_FACE_SIZE = 20
SCALE_FACTOR = 0.709


def _prelu(act: nn.PReLU, x: Tensor) -> Tensor:
    """PReLU of a channels_last (N, C, H, W) map as a (N*H*W, C) matrix: same values, about
    twice as fast on a CPU as PReLU on the 4-d channels_last tensor (measured, torch 2.x)."""
    n, c, h, w = x.shape
    flat = x.permute(0, 2, 3, 1).reshape(-1, c)
    return F.prelu(flat, act.weight).view(n, h, w, c).permute(0, 3, 1, 2)


class PNet(nn.Module):
    """Proposal network: fully convolutional, one 12x12 window per output cell (stride 2)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 10, 3)
        self.prelu1 = nn.PReLU(10)
        self.conv2 = nn.Conv2d(10, 16, 3)
        self.prelu2 = nn.PReLU(16)
        self.conv3 = nn.Conv2d(16, 32, 3)
        self.prelu3 = nn.PReLU(32)
        self.conv4_1 = nn.Conv2d(32, 2, 1)  # non-face / face
        self.conv4_2 = nn.Conv2d(32, 4, 1)  # box regression

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Face probability (N, H', W') and box regression (N, 4, H', W')."""
        x = F.max_pool2d(_prelu(self.prelu1, self.conv1(x)), 2, 2, ceil_mode=True)
        x = _prelu(self.prelu3, self.conv3(_prelu(self.prelu2, self.conv2(x))))
        return self.conv4_1(x).softmax(dim=1)[:, 1], self.conv4_2(x)


class RNet(nn.Module):
    """Refinement network on 24x24 crops."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 28, 3)
        self.prelu1 = nn.PReLU(28)
        self.conv2 = nn.Conv2d(28, 48, 3)
        self.prelu2 = nn.PReLU(48)
        self.conv3 = nn.Conv2d(48, 64, 2)
        self.prelu3 = nn.PReLU(64)
        self.dense4 = nn.Linear(576, 128)
        self.prelu4 = nn.PReLU(128)
        self.dense5_1 = nn.Linear(128, 2)  # non-face / face
        self.dense5_2 = nn.Linear(128, 4)  # box regression

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Face probability (N,) and box regression (N, 4)."""
        x = F.max_pool2d(_prelu(self.prelu1, self.conv1(x)), 3, 2, ceil_mode=True)
        x = F.max_pool2d(_prelu(self.prelu2, self.conv2(x)), 3, 2, ceil_mode=True)
        x = _prelu(self.prelu3, self.conv3(x)).permute(0, 3, 2, 1).flatten(1)
        x = self.prelu4(self.dense4(x))
        return self.dense5_1(x).softmax(dim=1)[:, 1], self.dense5_2(x)


class ONet(nn.Module):
    """Output network on 48x48 crops: face probability, box regression, five landmarks."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3)
        self.prelu1 = nn.PReLU(32)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.prelu2 = nn.PReLU(64)
        self.conv3 = nn.Conv2d(64, 64, 3)
        self.prelu3 = nn.PReLU(64)
        self.conv4 = nn.Conv2d(64, 128, 2)
        self.prelu4 = nn.PReLU(128)
        self.dense5 = nn.Linear(1152, 256)
        self.prelu5 = nn.PReLU(256)
        self.dense6_1 = nn.Linear(256, 2)  # non-face / face
        self.dense6_2 = nn.Linear(256, 4)  # box regression
        self.dense6_3 = nn.Linear(256, 10)  # 5 x coordinates, then 5 y coordinates

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Face probability (N,), box regression (N, 4), landmarks relative to the crop (N, 10)."""
        x = F.max_pool2d(_prelu(self.prelu1, self.conv1(x)), 3, 2, ceil_mode=True)
        x = F.max_pool2d(_prelu(self.prelu2, self.conv2(x)), 3, 2, ceil_mode=True)
        x = F.max_pool2d(_prelu(self.prelu3, self.conv3(x)), 2, 2, ceil_mode=True)
        x = _prelu(self.prelu4, self.conv4(x)).permute(0, 3, 2, 1).flatten(1)
        x = self.prelu5(self.dense5(x))
        return self.dense6_1(x).softmax(dim=1)[:, 1], self.dense6_2(x), self.dense6_3(x)


NETS: dict[str, type[nn.Module]] = {"pnet": PNet, "rnet": RNet, "onet": ONet}


def load_net(kind: str, path: str | Path | None = None) -> nn.Module:
    """One of the three networks with its weights loaded strictly, in eval mode, without grads.

    ``path`` defaults to the vendored ``preprocessing/models/mtcnn/<kind>.pt``. A missing file,
    a file that is not a state dict, or any missing, unexpected or mis-shaped key is an error.
    """
    if kind not in NETS:
        raise ValueError(f"MTCNN network must be one of {tuple(NETS)}, got {kind!r}")
    path = Path(path) if path is not None else WEIGHTS_DIR / f"{kind}.pt"
    if not path.is_file():
        raise RuntimeError(
            f"MTCNN weights {path} are missing; reinstall the package (they ship as package "
            "data in preprocessing/models/mtcnn/)"
        )
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise RuntimeError(f"MTCNN weights {path}: expected a state dict, got {type(state)}")
    net = NETS[kind]()
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0:2]
        raise RuntimeError(f"MTCNN weights {path} do not fit {kind}: {' '.join(first)}") from None
    return net.eval().requires_grad_(False)


@cache
def _nets(device: str) -> tuple[nn.Module, nn.Module, nn.Module]:
    """The three networks on ``device``, loaded once per process.

    channels_last: with 3-32 channels the NCHW convolutions and ceil-mode max-pooling are about
    twice as slow on a CPU (measured with torch 2.x, one thread).
    """
    return tuple(  # type: ignore[return-value]
        load_net(kind).to(device, memory_format=torch.channels_last) for kind in NETS
    )


def _use_threads(n: int | None) -> None:
    """Set torch's intra-op threads for this process to ``n`` (None: leave them).

    Not restored after a call: switching the thread count back and forth around every frame
    made detection about 20% slower (measured). Preprocessing runs one video per process.
    """
    if n is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)


def _to_net(images: np.ndarray, device: str) -> Tensor:
    """float32 (N, H, W, 3) RGB in [0, 255] to (N, 3, H, W) channels_last in [-1, 1) on
    ``device``, as the cascade expects (``images`` is normalised in place)."""
    images -= np.float32(127.5)  # in place: the callers' arrays are fresh
    images *= np.float32(0.0078125)
    return torch.from_numpy(images).to(device).permute(0, 3, 1, 2)


# On a CPU, a network sees at most this many input pixels per call: the activations of larger
# batches leave the caches and every layer slows down (16 frames of 640x360 in one batch: 0.056
# CPU s per frame against 0.046 frame by frame; in chunks of 2**16 pixels 0.037, 2**14 0.043,
# 2**18 0.041; one thread). A GPU takes each batch whole.
CPU_CHUNK_PIXELS = 1 << 16


def _forward(net: nn.Module, x: Tensor) -> tuple[Tensor, ...]:
    """``net(x)``, on a CPU in chunks of at most ``CPU_CHUNK_PIXELS`` input pixels."""
    rows = max(1, CPU_CHUNK_PIXELS // (x.shape[2] * x.shape[3]))
    if x.device.type != "cpu" or len(x) <= rows:
        return net(x)
    parts = [net(x[i : i + rows]) for i in range(0, len(x), rows)]
    return tuple(torch.cat(p) for p in zip(*parts, strict=True))


# Resampling: torch's ``interpolate(mode="area")`` (adaptive average pooling), as
# facenet-pytorch resamples every pyramid level and every crop: output pixel i averages input
# pixels floor(i * n / m) to ceil((i + 1) * n / m) - 1. Computed here from summed-area tables
# (cv2.integral) with exact integer sums and torch's float32 ``sum / rows / columns``: the same
# values (bit for bit with torch 2.14; tests/test_mtcnn.py), and on a CPU (one thread) 3.6 ms
# instead of 16.6 ms for the 10 levels of an 853x480 photo, 3.0 ms instead of 8.5 ms for the
# 336 R-Net crops of multiface.jpg at 640 px: all crops of a stage in one gather.


def _windows(start: np.ndarray, length: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """First and one-past-last input index averaged into each of ``size`` outputs, (..., size)
    each, for spans of ``length`` input pixels from ``start``."""
    i = np.arange(size)
    length = length[..., None]
    return start[..., None] + i * length // size, start[..., None] - (-(i + 1) * length // size)


INT32_MAX = np.iinfo(np.int32).max


def _tables(images: list[np.ndarray]) -> np.ndarray:
    """Summed-area tables of the images, (N, H + 1, W + 1, 3): int32 where no sum can overflow
    it (up to 8.4 megapixels), else float64 (exact for integers up to 2**53)."""
    h, w = images[0].shape[:2]
    small = 255 * h * w <= INT32_MAX
    out = np.empty((len(images), h + 1, w + 1, 3), np.int32 if small else np.float64)
    for rgb, table in zip(images, out, strict=True):
        cv2.integral(rgb, sum=table, sdepth=cv2.CV_32S if small else cv2.CV_64F)
    return out


def _mean(sums: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """torch's area average: float32 ``sum / rows / cols``."""
    out = sums.astype(np.float32)
    out /= rows.astype(np.float32)
    out /= cols.astype(np.float32)
    return out


def _pyramid_level(tables: np.ndarray, height: int, width: int) -> np.ndarray:
    """Every image area-resampled to ``height`` x ``width``, float32 (N, height, width, 3)."""
    h, w = tables.shape[1] - 1, tables.shape[2] - 1
    r0, r1 = _windows(np.array(0), np.array(h), height)
    c0, c1 = _windows(np.array(0), np.array(w), width)
    rows = np.take(tables, r1, axis=1) - np.take(tables, r0, axis=1)
    sums = np.take(rows, c1, axis=2) - np.take(rows, c0, axis=2)
    return _mean(sums, (r1 - r0)[:, None, None], (c1 - c0)[None, :, None])


def _clip(boxes: Tensor, height: int, width: int) -> tuple[np.ndarray, ...]:
    """The in-image part of each (1-based, inclusive) box after truncating it to whole pixels,
    as 0-based ``x0, y0, x1, y1`` with exclusive ends (empty where it lies outside)."""
    x1, y1, x2, y2 = boxes.to("cpu").trunc().to(torch.int64).numpy().T
    return (
        np.maximum(x1, 1) - 1,
        np.maximum(y1, 1) - 1,
        np.minimum(x2, width),
        np.minimum(y2, height),
    )


def _crops(tables: np.ndarray, boxes: Tensor, ids: np.ndarray, size: int) -> np.ndarray:
    """The in-image part of box ``k`` of ``images[ids[k]]`` stretched to size x size by area
    resampling, float32 (K, size, size, 3); every box must hold at least one pixel."""
    _, h1, w1, _ = tables.shape
    x0, y0, x1, y1 = _clip(boxes, h1 - 1, w1 - 1)
    r0, r1 = _windows(y0, y1 - y0, size)
    c0, c1 = _windows(x0, x1 - x0, size)
    # flat row indices of the four corners of every output pixel's window in the tables
    top, bottom = ((ids[:, None] * h1 + r) * w1 for r in (r0, r1))
    flat = tables.reshape(-1, 3)

    def corner(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return np.take(flat, rows[:, :, None] + cols[:, None, :], axis=0)

    sums = corner(bottom, c1) - corner(top, c1) - corner(bottom, c0) + corner(top, c0)
    return _mean(sums, (r1 - r0)[:, :, None, None], (c1 - c0)[:, None, :, None])


def _nonempty(boxes: Tensor, height: int, width: int) -> Tensor:
    """Which boxes keep at least one pixel inside the image (the others cannot be cropped)."""
    x0, y0, x1, y1 = _clip(boxes, height, width)
    return torch.from_numpy((x1 > x0) & (y1 > y0)).to(boxes.device)


def _nms(boxes: Tensor, scores: Tensor, threshold: float, groups: Tensor | None = None) -> Tensor:
    """NMS on intersection over union of the boxes as they are (torchvision's: no ``+1``
    pixel areas), within each group if given; kept indices, best first."""
    if groups is None:
        return nms(boxes, scores, threshold)
    return batched_nms(boxes, scores, groups, threshold)


def _nms_each(boxes: Tensor, scores: Tensor, ids: Tensor, threshold: float) -> Tensor:
    """``_nms`` within each image, one call per image: with float boxes, batched_nms's
    per-group coordinate offsets would round them, and batches would differ from single
    images. Kept indices, image by image, best first."""
    keep = [mine[_nms(boxes[mine], scores[mine], threshold)]
            for mine in (torch.nonzero(ids == i)[:, 0] for i in ids.unique().tolist())]  # fmt: skip
    return torch.cat(keep) if keep else torch.zeros(0, dtype=torch.long, device=boxes.device)


def _nms_min(boxes: Tensor, scores: Tensor, threshold: float) -> Tensor:
    """NMS on intersection over the smaller box ("Min" in the original), kept indices.

    Candidates are taken from the end of numpy's ``argsort`` of the float32 scores, as
    facenet-pytorch does: O-Net's probabilities often tie at 1.0 in float32, and that sort
    (not stable) decides which of the tied boxes is kept.
    """
    order = torch.from_numpy(np.argsort(scores.numpy())[::-1].copy())
    areas = (boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)
    keep = []
    while order.numel():
        i, rest = order[0], order[1:]
        keep.append(i)
        iw = (torch.minimum(boxes[i, 2], boxes[rest, 2]) - torch.maximum(boxes[i, 0], boxes[rest, 0]) + 1).clamp(min=0)  # fmt: skip
        ih = (torch.minimum(boxes[i, 3], boxes[rest, 3]) - torch.maximum(boxes[i, 1], boxes[rest, 1]) + 1).clamp(min=0)  # fmt: skip
        overlap = iw * ih / torch.minimum(areas[i], areas[rest])
        order = rest[overlap <= threshold]
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long)


def _square(boxes: Tensor) -> Tensor:
    """Grow each box to a square around its centre ("rerec")."""
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    side = torch.maximum(w, h)
    x1 = boxes[:, 0] + w * 0.5 - side * 0.5
    y1 = boxes[:, 1] + h * 0.5 - side * 0.5
    return torch.stack([x1, y1, x1 + side, y1 + side], dim=1)


def _regress(boxes: Tensor, reg: Tensor, plus_one: bool = True) -> Tensor:
    """Apply bounding-box regression offsets (relative to width/height) to (N, 4) boxes."""
    w = boxes[:, 2] - boxes[:, 0] + (1 if plus_one else 0)
    h = boxes[:, 3] - boxes[:, 1] + (1 if plus_one else 0)
    return boxes + reg * torch.stack([w, h, w, h], dim=1)


Detection = tuple[np.ndarray, np.ndarray, np.ndarray]  # boxes (N, 4), scores (N,), points (N, 5, 2)


class MTCNN:
    """Detect faces and their five landmarks in RGB images with the MTCNN cascade.

    ``min_face_size``: smallest face side in pixels searched (20 in the paper's code);
    ``thresholds``: face-probability thresholds of P-Net, R-Net and O-Net; ``factor``: ratio
    between pyramid scales; ``device``: where the networks run; ``threads``: torch intra-op
    threads of the process, set at the first detection (1: preprocessing parallelises over
    videos in processes; None: leave torch's setting).
    """

    def __init__(
        self,
        min_face_size: float = MIN_FACE_SIZE,
        thresholds: tuple[float, float, float] = THRESHOLDS,
        factor: float = SCALE_FACTOR,
        device: str = "cpu",
        threads: int | None = 1,
    ) -> None:
        if not min_face_size >= 1:
            raise ValueError(f"min_face_size must be >= 1 pixel, got {min_face_size!r}")
        if len(thresholds) != 3 or not all(0.0 <= t < 1.0 for t in thresholds):
            raise ValueError(f"thresholds must be three numbers in [0, 1), got {thresholds!r}")
        if not 0.0 < factor < 1.0:
            raise ValueError(f"factor must be in (0, 1), got {factor!r}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1 or None, got {threads!r}")
        self.min_face_size = float(min_face_size)
        self.thresholds = tuple(float(t) for t in thresholds)
        self.factor = float(factor)
        self.device = str(device)
        self.threads = threads

    def scales(self, height: int, width: int) -> list[float]:
        """Pyramid scales: the first maps ``min_face_size`` to P-Net's 12-pixel window."""
        scale = 12.0 / self.min_face_size
        side = min(height, width) * scale
        out = []
        while side >= 12:
            out.append(scale)
            scale *= self.factor
            side *= self.factor
        return out

    def detect(self, rgb: np.ndarray) -> Detection:
        """Boxes (N, 4: x1, y1, x2, y2), scores (N,) and landmarks (N, 5, 2: left eye, right
        eye, nose tip, left and right mouth corner, as seen in the image), best score first.

        An image too small for the smallest face (including an empty one) gives N = 0.
        """
        return self.detect_batch([rgb])[0]

    def detect_batch(self, images: list[np.ndarray]) -> list[Detection]:
        """``detect`` of each image, with the cascade run on all of them at once.

        For the kept frames of a video, e.g. on a GPU: P-Net runs once per pyramid level on the
        stacked images (N, 3, h, w), R-Net and O-Net once each on the crops of every image;
        proposals, thresholds and NMS stay per image. The results equal ``detect`` on each image
        (up to float rounding in the batched convolutions). The images must all have one size
        (a ValueError otherwise: call it once per size); an empty list gives ``[]``.
        """
        images = [check_rgb(rgb) for rgb in images]
        if not images:
            return []
        shapes = sorted({rgb.shape for rgb in images})
        if len(shapes) > 1:
            raise ValueError(
                f"detect_batch needs images of one size, got {len(shapes)} sizes {shapes[:3]}; "
                "call it once per size"
            )
        _use_threads(self.threads)
        with torch.inference_mode():
            found = self._cascade(images)
        # in the final NMS's pick order (best first, as facenet-pytorch returns them), 0-based
        return [
            (
                (boxes - 1).numpy().astype(np.float32),
                scores.numpy().astype(np.float32),
                (points - 1).numpy().astype(np.float32),
            )
            for boxes, scores, points in found
        ]

    def _cascade(self, images: list[np.ndarray]) -> list[tuple[Tensor, Tensor, Tensor]]:
        """Per image: boxes, scores and points (1-based, on the CPU) of the faces found, best
        first."""
        pnet, rnet, onet = _nets(self.device)
        tables = _tables(images)
        boxes, ids = self._propose(tables, pnet)
        if len(boxes):  # R-Net on 24x24 crops of the squared proposals
            prob, reg = self._score(rnet, tables, boxes, ids, 24)
            ok = prob > self.thresholds[1]
            boxes, ids, prob, reg = boxes[ok], ids[ok], prob[ok], reg[ok]
            keep = _nms_each(boxes, prob, ids, 0.7)
            boxes, ids = _square(_regress(boxes[keep], reg[keep])), ids[keep]
        if len(boxes):  # O-Net on 48x48 crops: final boxes and landmarks
            prob, reg, marks = self._score(onet, tables, boxes, ids, 48)
            ok = prob > self.thresholds[2]
            boxes, ids, prob, reg, marks = boxes[ok], ids[ok], prob[ok], reg[ok], marks[ok]
        if not len(boxes):
            return [(torch.zeros(0, 4), torch.zeros(0), torch.zeros(0, 5, 2))] * len(images)
        size = boxes[:, 2:] - boxes[:, :2] + 1  # (w, h)
        points = torch.stack([marks[:, :5], marks[:, 5:]], dim=2) * size[:, None]
        points = points + boxes[:, None, :2] - 1
        boxes, prob, points, ids = (t.cpu() for t in (_regress(boxes, reg), prob, points, ids))
        out = []
        for i in range(len(images)):
            mine = torch.nonzero(ids == i)[:, 0]
            keep = mine[_nms_min(boxes[mine], prob[mine], 0.7)]
            out.append((boxes[keep], prob[keep], points[keep]))
        return out

    def _score(
        self, net: nn.Module, tables: np.ndarray, boxes: Tensor, ids: Tensor, size: int
    ) -> tuple[Tensor, ...]:
        """``net`` on the size x size crops of the boxes; a box with no pixel inside its image
        gets probability 0 (facenet-pytorch leaves it out of the batch)."""
        inside = _nonempty(boxes, tables.shape[1] - 1, tables.shape[2] - 1)
        crops = _crops(tables, boxes[inside], ids[inside].cpu().numpy(), size)
        outputs = _forward(net, _to_net(crops, self.device))
        if bool(inside.all()):
            return outputs
        full = [torch.zeros(len(boxes), *o.shape[1:], device=o.device) for o in outputs]
        for f, o in zip(full, outputs, strict=True):
            f[inside] = o
        return tuple(full)

    def _propose(self, tables: np.ndarray, pnet: nn.Module) -> tuple[Tensor, Tensor]:
        """P-Net over the pyramid: squared candidate boxes (1-based, inclusive, float) and the
        index of the image each belongs to."""
        h, w = tables.shape[1] - 1, tables.shape[2] - 1
        scales = self.scales(h, w)
        found = []
        for level, scale in enumerate(scales):
            # every level from the full image, int(side * scale + 1) pixels (facenet-pytorch's)
            level_images = _pyramid_level(tables, int(h * scale + 1), int(w * scale + 1))
            prob, reg = _forward(pnet, _to_net(level_images, self.device))
            ns, ys, xs = torch.nonzero(prob >= self.thresholds[0], as_tuple=True)
            if not len(ys):
                continue
            cell = torch.stack([xs, ys, xs, ys], dim=1).float() * 2
            boxes = torch.floor((cell + torch.tensor([1.0, 1.0, 12.0, 12.0], device=cell.device)) / scale)  # fmt: skip
            score, offsets = prob[ns, ys, xs], reg.permute(0, 2, 3, 1)[ns, ys, xs]
            found.append((boxes, score, offsets, ns * len(scales) + level))
        if not found:
            return torch.zeros(0, 4), torch.zeros(0, dtype=torch.long)
        boxes, score, offsets, groups = (torch.cat(parts) for parts in zip(*found, strict=True))
        # NMS within each scale of each image, then across scales of each image; the boxes are
        # integers, so batched_nms's per-group coordinate offsets are exact
        keep = _nms(boxes, score, 0.5, groups=groups)
        boxes, score, offsets, ids = boxes[keep], score[keep], offsets[keep], groups[keep]
        ids = ids // len(scales)
        keep = _nms(boxes, score, 0.7, groups=ids)
        return _square(_regress(boxes[keep], offsets[keep], plus_one=False)), ids[keep]
