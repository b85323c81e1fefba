"""MTCNN (preprocessing/mtcnn.py) against dlib on real photos, its weights, and the CLI with it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from skimage.transform import SimilarityTransform

from fairforensics.preprocessing.align import align_face, five_points, template
from fairforensics.preprocessing.faces import FaceAnalyzer, dlib_box_from_mtcnn
from fairforensics.preprocessing.index import read_index
from fairforensics.preprocessing.mtcnn import MTCNN, NETS, WEIGHTS_DIR, load_net
from tests.testdata import DATA, FACE_RECOGNITION, SHARED, SILENT_FACE, VIDEOS, shared

REPO = Path(__file__).resolve().parents[1]
PAD = SILENT_FACE
FACENET = SHARED / "data" / "faces" / "facenet_pytorch"
# the repository's photos (7 faces), plus 4 portraits from ../shared where it is present
EXTRA = [FACENET / "test_images" / n / "1.jpg"
         for n in ("angelina_jolie", "kate_siegel", "paul_rudd", "shea_whigham")]  # fmt: skip
PHOTOS = [
    PAD / "image_T1.jpg",  # bona fide
    PAD / "image_F1.jpg",  # printed photo
    PAD / "image_F2.jpg",  # replay (EXIF-rotated; cv2 applies the rotation)
    FACE_RECOGNITION / "obama.jpg",
    FACE_RECOGNITION / "biden.jpg",
    FACE_RECOGNITION / "two_people.jpg",
    *(p for p in EXTRA if p.is_file()),
]
MAX_SIDE = 640  # both detectors see the same 640 px copy, the preprocessing default


def load_rgb(path: Path) -> np.ndarray:
    if not path.is_file():
        pytest.skip(f"needs {path} (../shared beside the checkout)")
    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    area = lambda r: (r[2] - r[0]) * (r[3] - r[1])  # noqa: E731
    return inter / (area(a) + area(b) - inter)


@pytest.fixture(scope="module")
def faces() -> list[tuple[str, np.ndarray, list, list]]:
    """Per photo: (name, 640 px copy, dlib HOG's (box, 68 points), MTCNN's (box, 5 points))."""
    # the colour scan: MTCNN_BOX_SIDE was fitted against it (the grey scan, the preprocessing
    # default, lands on another pyramid level on some of these faces: box IoU 0.98 on average)
    hog = FaceAnalyzer("hog", upsample=0, detect_max_side=None, retry_upsample=1, detect_on="rgb")
    mtcnn = FaceAnalyzer("mtcnn", detect_max_side=None)
    out = []
    for path in PHOTOS:
        rgb = load_rgb(path)
        s = MAX_SIDE / max(rgb.shape[:2])
        if s < 1:
            rgb = cv2.resize(rgb, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
        dlib_faces = [(b, hog.landmarks(rgb, b)) for b in hog.detect(rgb)]
        out.append((f"{path.parent.name}/{path.name}", rgb, dlib_faces, mtcnn.detect_five(rgb)))
    return out


def matched(dlib_box, mtcnn_faces):
    """The MTCNN face whose (dlib-convention) box overlaps dlib's box most, and that IoU."""
    best = max(mtcnn_faces, key=lambda f: iou(f[0], dlib_box), default=None)
    return best, (iou(best[0], dlib_box) if best else 0.0)


def test_finds_every_face_dlib_finds(faces):
    """Every dlib face has an MTCNN face whose dlib-convention box (``dlib_box_from_mtcnn``, a
    fixed conversion) overlaps it with IoU >= 0.7 (issue 19; on these photos the lowest is
    0.71). Over the 83 faces of ../shared/data's photos the median is 0.86, and faces cut by the
    border go lower (docs/preprocessing.md): dlib's own box moves by as much with its pyramid
    level (next test)."""
    overlaps = []
    for name, _, dlib_faces, mtcnn_faces in faces:
        assert dlib_faces, f"dlib found no face in {name}; the photo set changed"
        for box, _ in dlib_faces:
            _, overlap = matched(box, mtcnn_faces)
            assert overlap >= 0.7, f"{name}: MTCNN box IoU {overlap:.2f} with dlib's {box}"
            overlaps.append(overlap)
    assert len(overlaps) == len(PHOTOS) + 1  # two_people.jpg holds two
    assert np.mean(overlaps) >= 0.8 and np.median(overlaps) >= 0.8


def test_dlib_box_itself_moves_with_upsampling(faces):
    _, rgb, ((box0, _),), _ = faces[0]
    (box1,) = FaceAnalyzer("hog", upsample=1, detect_max_side=None).detect(rgb)
    assert iou(box0, box1) < 0.7


def test_five_points_match_dlib_landmarks(faces):
    for name, _, dlib_faces, mtcnn_faces in faces:
        for box, lm68 in dlib_faces:
            (_, points), _ = matched(box, mtcnn_faces)
            side = box[2] - box[0]
            err = np.linalg.norm(points - five_points(lm68), axis=1) / side
            # eye centres, nose tip 30, mouth corners 48/54: within 8% of the face's side
            # (measured: at most 7%, shea_whigham's mouth corners; 2.5% median, 3.9% 95th
            # percentile over 83 faces of ../shared/data)
            assert err.max() < 0.08, f"{name}: point errors / face side {err.round(3)}"


def test_crops_from_both_detectors_align_alike(faces):
    """dlib's 68 points found in the MTCNN box give the same aligned crop as in dlib's box."""
    hog = FaceAnalyzer("hog")
    size, scale = 128, 1.3
    for name, rgb, dlib_faces, mtcnn_faces in faces:
        for box, lm68 in dlib_faces:
            (mbox, points), _ = matched(box, mtcnn_faces)
            crop_d, _, lm_d = align_face(rgb, lm68, size, scale)
            crop_m, _, lm_m = align_face(rgb, hog.landmarks(rgb, mbox), size, scale)
            shift = np.linalg.norm(five_points(lm_m) - five_points(lm_d), axis=1)
            assert shift.max() < 0.03 * size, f"{name}: aligned points differ by {shift.round(1)}"
            diff = np.abs(crop_m.astype(np.int16) - crop_d.astype(np.int16)).mean()
            assert diff < 12, f"{name}: aligned crops differ by {diff:.1f} grey levels on average"
            # aligning on MTCNN's own five points instead (same template, same least-squares
            # similarity) moves dlib's aligned points by little
            dst = template(size, scale)
            if hasattr(SimilarityTransform, "from_estimate"):  # scikit-image >= 0.26
                matrix = SimilarityTransform.from_estimate(points, dst).params[:2]
            else:
                own = SimilarityTransform()
                assert own.estimate(points, dst)
                matrix = own.params[:2]
            moved = five_points(lm68) @ matrix[:, :2].T + matrix[:, 2]
            shift = np.linalg.norm(moved - five_points(lm_d), axis=1)
            assert shift.max() < 0.06 * size, f"{name}: MTCNN-aligned points {shift.round(1)}"


def test_raw_mtcnn_output_is_consistent(faces):
    name, rgb, _, _ = faces[0]
    boxes, scores, points = MTCNN().detect(rgb)
    assert boxes.shape == (1, 4) and scores.shape == (1,) and points.shape == (1, 5, 2)
    assert scores[0] > 0.99 and boxes.dtype == np.float32
    x1, y1, x2, y2 = boxes[0]
    assert ((points[0, :, 0] > x1) & (points[0, :, 0] < x2)).all()
    assert ((points[0, :, 1] > y1) & (points[0, :, 1] < y2)).all()
    left_eye, right_eye, nose, mouth_l, mouth_r = points[0]
    assert left_eye[0] < right_eye[0] and mouth_l[0] < mouth_r[0]
    assert max(left_eye[1], right_eye[1]) < nose[1] < min(mouth_l[1], mouth_r[1])
    # the dlib-convention box is the fixed conversion of those five points
    (box, pts), *_ = FaceAnalyzer("mtcnn", detect_max_side=None).detect_five(rgb)
    np.testing.assert_allclose(pts, points[0], atol=1e-4)
    assert iou(box, dlib_box_from_mtcnn(boxes[0], points[0])) > 0.98  # up to rounding to pixels


@pytest.mark.extended
def test_several_faces_and_downscaled_detection():
    rgb = load_rgb(shared("data", "faces", "facenet_pytorch", "multiface.jpg"))
    boxes, scores, _ = MTCNN().detect(rgb)
    assert len(boxes) >= 5 and (np.diff(scores) <= 0).all()  # best first
    full = FaceAnalyzer("mtcnn", detect_max_side=None).detect(rgb)
    small = FaceAnalyzer("mtcnn", detect_max_side=600).detect(rgb)  # mapped back to full size
    assert len(small) >= 5
    for box in small:
        assert max(iou(box, b) for b in full) > 0.7


def test_no_face_and_empty_images_give_no_box():
    rng = np.random.default_rng(0)
    for img in (
        np.zeros((0, 0, 3), np.uint8),
        np.zeros((11, 40, 3), np.uint8),  # smaller than P-Net's window at any scale
        np.full((120, 160, 3), 128, np.uint8),
        rng.integers(0, 256, (120, 160, 3), dtype=np.uint8),
    ):
        boxes, scores, points = MTCNN().detect(img)
        assert boxes.shape == (0, 4) and scores.shape == (0,) and points.shape == (0, 5, 2)
    assert FaceAnalyzer("mtcnn", retry_upsample=1).detect(np.full((64, 64, 3), 90, np.uint8)) == []


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.zeros((32, 32), np.uint8), "HxWx3"),
        (np.zeros((32, 32, 3), np.float32), "uint8"),
        ([[0, 0, 0]], "HxWx3"),
    ],
)
def test_bad_images_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        MTCNN().detect(bad)


def test_bad_options_raise():
    for kwargs, match in [
        ({"min_face_size": 0}, "min_face_size"),
        ({"thresholds": (0.6, 0.7)}, "thresholds"),
        ({"thresholds": (0.6, 0.7, 1.5)}, "thresholds"),
        ({"factor": 1.0}, "factor"),
        ({"threads": 0}, "threads"),
    ]:
        with pytest.raises(ValueError, match=match):
            MTCNN(**kwargs)


def test_pyramid_scales_follow_the_original():
    scales = MTCNN().scales(480, 640)  # 12/20 = 0.6, then x0.709 while the short side >= 12 px
    assert scales[0] == pytest.approx(0.6) and np.allclose(np.diff(np.log(scales)), np.log(0.709))
    assert 480 * scales[-1] >= 12 > 480 * scales[-1] * 0.709
    assert MTCNN(min_face_size=10).scales(480, 640)[0] == pytest.approx(1.2)


def test_vendored_weights_load_strictly(tmp_path):
    expected = {"pnet": 6632, "rnet": 100178, "onet": 389040}  # parameters of Zhang et al.'s nets
    for kind in NETS:
        state = torch.load(WEIGHTS_DIR / f"{kind}.pt", map_location="cpu", weights_only=True)
        net = load_net(kind)
        assert set(state) == set(net.state_dict())
        assert sum(p.numel() for p in net.parameters()) == expected[kind]
        assert not net.training and not any(p.requires_grad for p in net.parameters())
    assert (WEIGHTS_DIR / "LICENSE").read_text().startswith("MIT License")

    state = torch.load(WEIGHTS_DIR / "rnet.pt", map_location="cpu", weights_only=True)
    missing = tmp_path / "missing.pt"
    torch.save({k: v for k, v in state.items() if k != "dense4.bias"}, missing)
    with pytest.raises(RuntimeError, match=r"missing\.pt.*dense4\.bias"):
        load_net("rnet", missing)
    extra = tmp_path / "extra.pt"
    torch.save({**state, "dense9.weight": torch.zeros(1)}, extra)
    with pytest.raises(RuntimeError, match="extra.pt"):
        load_net("rnet", extra)
    with pytest.raises(RuntimeError, match="do not fit onet"):  # R-Net's shapes are not O-Net's
        load_net("onet", WEIGHTS_DIR / "rnet.pt")
    notdict = tmp_path / "list.pt"
    torch.save([torch.zeros(1)], notdict)
    with pytest.raises(RuntimeError, match="state dict"):
        load_net("pnet", notdict)
    with pytest.raises(RuntimeError, match="missing"):
        load_net("pnet", tmp_path / "absent.pt")
    with pytest.raises(ValueError, match="pnet"):
        load_net("qnet")


def test_nets_output_shapes():
    pnet, rnet, onet = (load_net(k) for k in NETS)
    prob, reg = pnet(torch.zeros(2, 3, 12, 16))
    assert prob.shape == (2, 1, 3) and reg.shape == (2, 4, 1, 3)
    prob, reg = rnet(torch.zeros(3, 3, 24, 24))
    assert prob.shape == (3,) and reg.shape == (3, 4)
    prob, reg, marks = onet(torch.zeros(3, 3, 48, 48))
    assert prob.shape == (3,) and reg.shape == (3, 4) and marks.shape == (3, 10)
    assert ((prob >= 0) & (prob <= 1)).all()


@pytest.mark.slow
def test_preprocess_cli_casia_layout_with_mtcnn(tmp_path):
    """scripts/preprocess.py on a tiny CASIA-FASD tree made of the PAD photos, offline."""
    photos = {"1": "image_T1.jpg", "3": "image_F1.jpg", "7": "image_F2.jpg"}  # bona fide, attacks
    root = tmp_path / "CASIA-FASD"
    for split in ("train_release", "test_release"):
        for name, photo in photos.items():
            rgb = load_rgb(PAD / photo)
            bgr = cv2.resize(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), None, fx=0.5, fy=0.5)
            path = root / split / "1" / f"{name}.avi"
            path.parent.mkdir(parents=True, exist_ok=True)
            h, w = bgr.shape[:2]
            writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 5, (w, h))
            for _ in range(2):
                writer.write(bgr)
            writer.release()
    out = tmp_path / "out"
    cmd = [sys.executable, str(REPO / "scripts" / "preprocess.py"),
           "--config", str(REPO / "configs" / "preprocess" / "CASIA-FASD.yaml"),
           "--set", "face.detector=mtcnn", "--set", f"dataset.root={root}",
           "--set", f"output.root={out}", "--set", "sampling.num_frames=2",
           "--set", "align.size=64", "--set", "dataset.options.val_fraction=0.0",
           "--workers", "1", "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    index = read_index(out / "CASIA-FASD.json", check_files=True)
    assert len(index.videos) == 6
    assert {(v.label, v.method) for v in index.videos} == {
        (0, "bonafide"), (1, "warped_photo"), (1, "video_replay")}  # fmt: skip
    for v in index.videos:
        assert len(v.frames) == 2 and len(v.landmarks) == 2, v.id
        crop = cv2.imread(str(out / v.frames[0]))
        assert crop.shape == (64, 64, 3)
        lm = np.load(out / v.landmarks[0])
        assert lm.shape == (68, 2)
        np.testing.assert_allclose(five_points(lm), template(64, 1.3), atol=64 * 0.08)


def test_box_helpers_hand_computed():
    from fairforensics.preprocessing.mtcnn import _nms, _nms_min, _regress, _square

    boxes = torch.tensor([[0.0, 0.0, 9.0, 9.0], [0.0, 0.0, 4.0, 4.0], [20.0, 0.0, 29.0, 19.0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    # IoU on the boxes as they are (facenet-pytorch's): areas 81 and 16, intersection 16, IoU
    # 0.198 keeps box 1 at 0.2 (the original's +1 areas give 25 / 100 = 0.25, which would drop
    # it); Min-NMS uses +1 areas: overlap 25 / 25 = 1.0 drops box 1
    assert _nms(boxes, scores, 0.2).tolist() == [0, 1, 2]
    assert _nms(boxes, scores, 0.19).tolist() == [0, 2]
    assert _nms_min(boxes, scores, 0.7).tolist() == [0, 2]
    assert _square(boxes[2:]).tolist() == [[15.0, 0.0, 34.0, 19.0]]  # 9x19 -> 19x19, same centre
    reg = torch.tensor([[0.1, -0.1, 0.2, 0.0]])
    torch.testing.assert_close(_regress(boxes[:1], reg), torch.tensor([[1.0, -1.0, 11.0, 9.0]]))
    torch.testing.assert_close(
        _regress(boxes[:1], reg, plus_one=False), torch.tensor([[0.9, -0.9, 10.8, 9.0]])
    )


def test_upsample_halves_the_minimum_face_size(monkeypatch):
    from fairforensics.preprocessing import mtcnn as mtcnn_module

    sizes = []

    class Spy(MTCNN):
        def __init__(self, min_face_size: float = 20, **kwargs) -> None:
            sizes.append(min_face_size)
            super().__init__(min_face_size, **kwargs)

    monkeypatch.setattr(mtcnn_module, "MTCNN", Spy)
    blank = np.full((64, 64, 3), 90, np.uint8)  # no face: every retry runs
    assert FaceAnalyzer("mtcnn", upsample=1, retry_upsample=2).detect(blank) == []
    assert sizes == [10, 5, 2.5]


@pytest.mark.parametrize(
    "name", ["CASIA-FASD", "Replay-Attack", "MSU-MFSD", "OULU-NPU-P1", "HKBU-MARs", "SWFFD"]
)
def test_pad_configs_use_mtcnn_as_paper_001(name):
    from fairforensics.preprocessing.config import load_preprocess_config

    path = REPO / "configs" / "preprocess" / f"{name}.yaml"
    assert load_preprocess_config(path).face.detector == "mtcnn"
    assert "paper 001" in path.read_text()


def assert_same_detections(batch, singles) -> None:
    """Per image: the same number of faces in the same order, values within float rounding
    (boxes stay float between stages, as in facenet-pytorch, so the batched convolutions'
    rounding reaches them: measured up to 1.2e-4 px, a few float32 steps at 300 px)."""
    assert len(batch) == len(singles)
    for got, want in zip(batch, singles, strict=True):
        for a, b in zip(got, want, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype == np.float32
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-3)


def letterbox(rgb: np.ndarray, side: int) -> np.ndarray:
    """``rgb`` shrunk to fit a side x side grey square, aspect ratio kept, top-left aligned."""
    s = side / max(rgb.shape[:2])
    small = cv2.resize(rgb, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
    out = np.full((side, side, 3), 128, np.uint8)
    out[: small.shape[0], : small.shape[1]] = small
    return out


def hamilton_frames(n: int = 8) -> list[np.ndarray]:
    """``n`` frames spread over the repository's 640x360 Hamilton clip (RGB)."""
    from fairforensics.preprocessing.video import read_frames

    frames = read_frames(VIDEOS / "short_hamilton_clip.mp4", list(range(0, 8 * 30, 30))[:n])
    return [frames[i] for i in sorted(frames)]


def test_detect_batch_equals_detect_on_photos_of_one_size():
    """The repository's PAD and face photos letterboxed into 480x480 (one size, as a video's
    frames), with a black frame and a noise frame among them: per image the same boxes, scores
    and points as ``detect`` (count and order included)."""
    images = [letterbox(load_rgb(p), 480) for p in PHOTOS[:6]]
    images.insert(2, np.zeros((480, 480, 3), np.uint8))
    images.append(np.random.default_rng(0).integers(0, 256, (480, 480, 3), dtype=np.uint8))
    mtcnn = MTCNN()
    singles = [mtcnn.detect(im) for im in images]
    batch = mtcnn.detect_batch(images)
    assert_same_detections(batch, singles)
    counts = [len(b) for b, _, _ in batch]
    assert counts[2] == 0 and counts[-1] == 0 and sum(counts) >= 7  # two_people.jpg has 2


def test_detect_batch_equals_detect_on_video_frames():
    frames = hamilton_frames(8)
    mtcnn = MTCNN()
    batch = mtcnn.detect_batch(frames)
    assert_same_detections(batch, [mtcnn.detect(f) for f in frames])
    assert sum(len(b) for b, _, _ in batch) >= 8
    # a batch of one is detect itself, and batches of any split agree
    assert_same_detections(mtcnn.detect_batch(frames[:3]) + mtcnn.detect_batch(frames[3:]), batch)


def test_detect_batch_edge_cases():
    mtcnn = MTCNN()
    assert mtcnn.detect_batch([]) == []
    tiny = mtcnn.detect_batch([np.zeros((11, 40, 3), np.uint8)] * 3)  # below P-Net's window
    assert [b.shape for b, _, _ in tiny] == [(0, 4)] * 3
    with pytest.raises(ValueError, match="one size"):
        mtcnn.detect_batch([np.zeros((64, 64, 3), np.uint8), np.zeros((64, 80, 3), np.uint8)])
    with pytest.raises(ValueError, match="uint8"):
        mtcnn.detect_batch([np.zeros((64, 64, 3), np.uint8), np.zeros((64, 64, 3), np.float32)])
    with pytest.raises(ValueError, match="HxWx3"):
        mtcnn.detect_batch([np.zeros((64, 64), np.uint8)])


def test_detect_batch_sets_threads_and_runs_without_autograd(monkeypatch):
    from fairforensics.preprocessing import mtcnn as mtcnn_module

    seen = []
    real = mtcnn_module.MTCNN._cascade

    def spy(self, images):
        seen.append((torch.get_num_threads(), torch.is_inference_mode_enabled()))
        return real(self, images)

    monkeypatch.setattr(mtcnn_module.MTCNN, "_cascade", spy)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        MTCNN(threads=1).detect_batch([np.zeros((64, 64, 3), np.uint8)] * 2)
        assert seen == [(1, True)]
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_detect_batch_on_cuda_matches_the_cpu():
    """On the GPU the convolutions round differently (cuDNN may use TF32, torch's default): the
    same faces, boxes and points within a pixel of the CPU's."""
    frames = hamilton_frames(8) + [np.zeros((360, 640, 3), np.uint8)]
    cpu = MTCNN().detect_batch(frames)
    gpu = MTCNN(device="cuda").detect_batch(frames)
    for (bc, sc, pc), (bg, sg, pg) in zip(cpu, gpu, strict=True):
        assert bc.shape == bg.shape
        np.testing.assert_allclose(bg, bc, atol=1.0)
        np.testing.assert_allclose(sg, sc, atol=0.01)
        np.testing.assert_allclose(pg, pc, atol=1.0)


def test_cpu_chunks_give_the_batch_results(monkeypatch):
    """On a CPU the networks run in chunks of ``CPU_CHUNK_PIXELS``: any chunking (here one
    frame or crop per call, and everything in one call) gives the same detections."""
    from fairforensics.preprocessing import mtcnn as mtcnn_module

    frames = hamilton_frames(4)
    chunked = MTCNN().detect_batch(frames)
    for pixels in (1, 1 << 40):
        monkeypatch.setattr(mtcnn_module, "CPU_CHUNK_PIXELS", pixels)
        assert_same_detections(MTCNN().detect_batch(frames), chunked)


# --- facenet-pytorch's own outputs (issue 23): the weights are its, so are the boxes users expect

FACENET_SUBSET = DATA / "mtcnn" / "facenet_pytorch_2.6.0_subset.json"


def fixture_images(entries: list[dict]) -> list[np.ndarray]:
    """The RGB images of facenet-pytorch fixture entries as the project loads them (cv2 for
    photos, PyAV for video frames), each checked against the fixture's pixel hash."""
    from fairforensics.preprocessing.video import read_frames

    wanted: dict[str, list[int]] = {}
    for e in entries:
        if "frame_index" in e:
            wanted.setdefault(e["path"], []).append(e["frame_index"])
    frames = {path: read_frames(REPO / path, sorted(ks)) for path, ks in wanted.items()}
    out = []
    for e in entries:
        if "frame_index" in e:
            rgb = frames[e["path"]][e["frame_index"]]
        else:
            rgb = cv2.cvtColor(
                cv2.imread(str(REPO / e["path"]), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB
            )
        digest = hashlib.sha256(np.ascontiguousarray(rgb).tobytes()).hexdigest()
        assert digest == e["pixels_sha256"], f"{e['path']}: not the pixels the fixture saw"
        out.append(rgb)
    return out


def against_facenet(entries: list[dict]) -> tuple[list[dict], list[str]]:
    """Our detections against facenet-pytorch's per entry, faces matched greedily by box IoU
    (>= 0.5, best first; the fixture README's comparison): one row per matched face with the
    largest |difference| of its box and points (px) and of its prob, and whether it has the
    same place in the output order; and the unmatched faces on either side."""
    mtcnn = MTCNN()
    rows, unmatched = [], []
    for e, rgb in zip(entries, fixture_images(entries), strict=True):
        name = e["path"] + (f"#{e['frame_index']}" if "frame_index" in e else "")
        boxes, probs, points = mtcnn.detect(rgb)
        boxes, points = boxes + 1, points + 1  # facenet-pytorch's 1-based pixel coordinates
        ref = e["faces"]
        pairs = sorted(
            ((iou(r["box"], b), i, j) for i, r in enumerate(ref) for j, b in enumerate(boxes)),
            reverse=True,
        )
        seen_ref, seen_ours = set(), set()
        for overlap, i, j in pairs:
            if overlap < 0.5 or i in seen_ref or j in seen_ours:
                continue
            seen_ref.add(i)
            seen_ours.add(j)
            r = ref[i]
            rows.append({
                "face": f"{name} face {i}", "group": e.get("group"), "ref": r,
                "box": float(np.abs(boxes[j] - np.array(r["box"])).max()),
                "points": float(np.abs(points[j] - np.array(r["points"])).max()),
                "prob": abs(float(probs[j]) - r["prob"]), "same_place": i == j,
            })  # fmt: skip
        unmatched += [f"{name}: facenet-pytorch's face {i}" for i in range(len(ref)) if i not in seen_ref]  # fmt: skip
        unmatched += [f"{name}: our box {boxes[j]}" for j in range(len(boxes)) if j not in seen_ours]  # fmt: skip
    return rows, unmatched


def within_tolerance(row: dict) -> bool:
    """The fixture's tolerance: box and points within 1 px, prob within 1e-3."""
    return row["box"] <= 1 and row["points"] <= 1 and row["prob"] <= 1e-3


def test_reproduces_facenet_pytorch_on_images_of_tests_data():
    """facenet-pytorch 2.6.0's boxes, points and probs on 6 images of tests/data (8 faces, from
    ../shared/parity/mtcnn/): a tie at prob 1.0 that the Min-NMS order settles, weak faces
    (one lost by NMS with +1 pixel areas), and faces cut by the border of a photo, a tight crop
    and a video frame. Each needs facenet-pytorch's pipeline (the original's was off by up to
    54 px and missed 2 of the faces). Measured: every value within 5.3e-4 px (the fixture's 3
    decimals) and 5e-7 in prob."""
    subset = json.loads(FACENET_SUBSET.read_text())
    rows, unmatched = against_facenet(subset["images"])
    assert not unmatched and len(rows) == 8
    for row in rows:
        assert within_tolerance(row) and row["same_place"], row


@pytest.mark.extended
def test_reproduces_facenet_pytorch_on_its_fixture():
    """The criterion of ../shared/parity/mtcnn/README.md over all of it (103 photos of
    tests/data, 8 video frames, 120 faces): every face matched and no other, at least 90% within
    1 px (box and points) and 1e-3 (prob), median box difference at most 0.01 px, and the
    faces outside the tolerance flip-prone (johns crops, a large float64_delta or prob < 0.8).
    Measured: 120 of 120 within 5.3e-4 px and 5.1e-7, the float64-flip-prone faces included."""
    fixture = json.loads(shared("parity", "mtcnn", "facenet_pytorch_2.6.0.json").read_text())
    rows, unmatched = against_facenet(fixture["images"])
    assert not unmatched
    assert len(rows) == 120 and all(r["same_place"] for r in rows)  # facenet-pytorch's order
    within = [r for r in rows if within_tolerance(r)]
    assert len(within) >= 0.9 * len(rows), f"{len(within)} of {len(rows)} within tolerance"
    assert np.median([r["box"] for r in rows]) <= 0.01
    for r in rows:
        flip_prone = (
            r["group"] == "dlib_johns_tight_crops"
            or r["ref"]["float64_delta"]["box_px"] > 0.01
            or r["ref"]["prob"] < 0.8
        )
        assert within_tolerance(r) or flip_prone, r


def test_area_resampling_equals_torch_interpolate():
    """Pyramid levels and crops from summed-area tables are torch's ``interpolate(mode="area")``
    in float32 on the full image and on the in-image part of each box (bit for bit with torch
    2.14; allowed: float32 rounding), as facenet-pytorch resamples them."""
    import torch.nn.functional as F

    from fairforensics.preprocessing.mtcnn import _crops, _pyramid_level, _tables

    rgb = load_rgb(PAD / "image_F2.jpg")[::3, ::3]  # 427 x 320, odd ratios to every size below
    tables = _tables([rgb, rgb[::-1].copy()])
    full = torch.from_numpy(np.stack([rgb, rgb[::-1]])).permute(0, 3, 1, 2).float()

    def area(x: torch.Tensor, size: tuple[int, int]) -> np.ndarray:
        return F.interpolate(x, size=size, mode="area").permute(0, 2, 3, 1).numpy()

    for size in ((257, 193), (37, 29), (12, 13)):
        np.testing.assert_allclose(
            _pyramid_level(tables, *size), area(full, size), atol=1e-4, rtol=0
        )
    h, w = rgb.shape[:2]
    # 1-based inclusive float boxes: inside, across the top-left and the bottom-right borders,
    # smaller than the crop (upsampled), and one pixel
    boxes = torch.tensor([[10.7, 20.2, 150.9, 160.4], [-30.5, -8.0, 40.3, 70.9],
                          [w - 50.2, h - 20.6, w + 35.8, h + 64.1], [100.0, 90.0, 109.9, 99.3],
                          [5.0, 5.0, 5.0, 5.0]])  # fmt: skip
    ids = np.array([0, 1, 0, 1, 0])
    got = _crops(tables, boxes, ids, 24)
    for k, (x1, y1, x2, y2) in enumerate(boxes.trunc().long().tolist()):
        part = full[
            ids[k] : ids[k] + 1, :, max(y1, 1) - 1 : min(y2, h), max(x1, 1) - 1 : min(x2, w)
        ]
        np.testing.assert_allclose(got[k : k + 1], area(part, (24, 24)), atol=1e-4, rtol=0)


def test_float64_tables_give_the_same_detections(monkeypatch):
    """Images too large for int32 sums (over 8.4 megapixels) use float64 tables: same faces."""
    from fairforensics.preprocessing import mtcnn as mtcnn_module

    rgb = load_rgb(FACE_RECOGNITION / "two_people.jpg")
    want = MTCNN().detect(rgb)
    monkeypatch.setattr(mtcnn_module, "INT32_MAX", 0)
    assert mtcnn_module._tables([rgb]).dtype == np.float64
    assert_same_detections([MTCNN().detect(rgb)], [want])
    assert len(want[0]) == 2


def test_a_box_outside_the_image_scores_zero():
    """A candidate with no pixel inside its image cannot be cropped: prob 0 (and no crop), the
    others score as on their own."""
    from fairforensics.preprocessing.mtcnn import _nets, _tables

    rgb = load_rgb(PAD / "image_T1.jpg")
    mtcnn = MTCNN()
    rnet = _nets("cpu")[1]
    tables = _tables([rgb])
    h, w = rgb.shape[:2]
    inside = torch.tensor([[200.0, 250.0, 400.0, 450.0]])
    outside = torch.tensor([[-60.0, 10.0, 0.9, 70.0], [w + 1.0, 5.0, w + 40.0, 44.0]])
    with torch.inference_mode():
        alone = mtcnn._score(rnet, tables, inside, torch.zeros(1, dtype=torch.long), 24)
        mixed = mtcnn._score(rnet, tables, torch.cat([outside[:1], inside, outside[1:]]),
                             torch.zeros(3, dtype=torch.long), 24)  # fmt: skip
    assert mixed[0][[0, 2]].tolist() == [0.0, 0.0] and (mixed[1][[0, 2]] == 0).all()
    torch.testing.assert_close(mixed[0][1:2], alone[0])
    torch.testing.assert_close(mixed[1][1:2], alone[1])


def test_fit_script_for_the_dlib_box_side(capsys):
    """scripts/fit_mtcnn_box_side.py on the PAD photos and obama.jpg: every dlib face found,
    the constant near the best factor. On 83 faces of ../shared/data it gives 0.925, mean IoU
    0.8367 against 0.8366 at MTCNN_BOX_SIDE = 0.92 (docs/preprocessing.md)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fit_box_side", REPO / "scripts" / "fit_mtcnn_box_side.py")  # fmt: skip
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    photos = [*PHOTOS[:3], FACE_RECOGNITION / "obama.jpg"]
    assert script.main(["--images", *map(str, photos)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["faces"] == 4 and report["current_side"] == 0.92
    assert 0.85 <= report["best_side"] <= 1.0
    assert report["iou_at_current"]["mean"] >= report["iou_at_best"]["mean"] - 0.02
    assert report["iou_at_current"]["min"] >= 0.7
