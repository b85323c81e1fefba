#!/usr/bin/env bash
# Preprocessing on a GPU machine, in one run: NVDEC decoding (PyAV, decode.device=cuda) and
# batched MTCNN face detection on the GPU (face.device=cuda, face.batch_size frames per batch)
# beside the CPU paths. Writes JSON (one file per run) into $1 (default $OUT or
# ./bench_gpu_preprocess). First the tests (decoding: kept frames identical to a sequential
# decode, and the cuda path; batched detection: equal to per-frame detection, and on cuda), then
# the FF++-like benchmark of docs/preprocessing.md "Speed": dlib HOG with each decoder, then
# MTCNN on the CPU, on the GPU, and on the GPU with NVDEC decoding. With face.device=cuda every
# worker process (WORKERS, default one per core) holds its own CUDA context on the one GPU.
set -euo pipefail
out="${1:-${OUT:-bench_gpu_preprocess}}"
mkdir -p "$out"
py="${PYTHON:-python}"
workers="${WORKERS:-$(nproc)}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi -L | tee "$out/gpu.txt" || true
"$py" -c "import av.codec.hwaccel as h; print('ffmpeg hw devices:', h.hwdevices_available())" | tee -a "$out/gpu.txt"
"$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$out/gpu.txt"
OMP_NUM_THREADS=1 "$py" -m pytest tests/test_preprocess_decode.py tests/test_preprocess_gpu_detect.py \
    tests/test_mtcnn.py -q -rs >"$out/tests.txt" 2>&1 || { tail -30 "$out/tests.txt"; exit 1; }
grep -i "skipped.*cuda" "$out/tests.txt" || true
tail -1 "$out/tests.txt"
bench() {
    local name="$1"
    shift
    "$py" scripts/bench_preprocess.py --cases ff_like --cache-dir "$out/videos" --workers "$workers" \
        "$@" >"$out/$name.json" 2>"$out/$name.log" || { tail -20 "$out/$name.log"; return 1; }
    "$py" -c "import json,sys; d=json.load(open(sys.argv[1]))['cases']['ff_like']; p=d['pipeline']; s=p['stage_cpu_s_per_frame']; print(sys.argv[2], {k: p[k] for k in ('frames_per_s', 'cpu_s_per_frame', 'faces_found', 'frames')}, 'decode', s['decode'], 'detect', s['detect'], d.get('speedup_cpu_per_frame'))" "$out/$name.json" "$name"
}
bench cpu_decode --repeat 4 --no-baseline
bench cuda_decode --repeat 4 --no-baseline --set decode.device=cuda
grep -h "could not decode" "$out"/cuda_decode.log | head -3 || true
# MTCNN: on the CPU frame by frame (its default), on the GPU in batches of 32 (its default)
bench mtcnn_cpu --repeat 4 --no-baseline --set face.detector=mtcnn
bench mtcnn_cuda --repeat 4 --no-baseline --set face.detector=mtcnn --set face.device=cuda
bench mtcnn_cuda_cuda_decode --repeat 4 --no-baseline --set face.detector=mtcnn \
    --set face.device=cuda --set decode.device=cuda
bench with_baseline
rm -rf "$out/videos"
