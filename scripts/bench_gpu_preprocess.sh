#!/usr/bin/env bash
# Preprocessing with NVDEC decoding (PyAV, decode.device=cuda) beside the CPU decoder, in one run:
# writes JSON into $1 (default $OUT or ./bench_gpu_preprocess). First the decode tests (kept frames
# identical to a sequential decode, and the cuda path), then the FF++-like benchmark of
# docs/preprocessing.md "Speed" with each decoder (face detection stays dlib HOG on the CPU).
set -euo pipefail
out="${1:-${OUT:-bench_gpu_preprocess}}"
mkdir -p "$out"
py="${PYTHON:-python}"
workers="${WORKERS:-$(nproc)}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi -L | tee "$out/gpu.txt" || true
"$py" -c "import av.codec.hwaccel as h; print('ffmpeg hw devices:', h.hwdevices_available())" | tee -a "$out/gpu.txt"
OMP_NUM_THREADS=1 "$py" -m pytest tests/test_preprocess_decode.py -q >"$out/tests.txt" 2>&1 || { tail -30 "$out/tests.txt"; exit 1; }
tail -1 "$out/tests.txt"
bench() {
    local name="$1"
    shift
    "$py" scripts/bench_preprocess.py --cases ff_like --cache-dir "$out/videos" --workers "$workers" \
        "$@" >"$out/$name.json" 2>"$out/$name.log" || { tail -20 "$out/$name.log"; return 1; }
    "$py" -c "import json,sys; d=json.load(open(sys.argv[1]))['cases']['ff_like']; p=d['pipeline']; print(sys.argv[2], {k: p[k] for k in ('frames_per_s', 'cpu_s_per_frame', 'faces_found', 'frames')}, p['stage_cpu_s_per_frame']['decode'], d.get('speedup_cpu_per_frame'))" "$out/$name.json" "$name"
}
bench cpu_decode --repeat 4 --no-baseline
bench cuda_decode --repeat 4 --no-baseline --set decode.device=cuda
grep -h "could not decode" "$out"/cuda_decode.log | head -3 || true
bench with_baseline
rm -rf "$out/videos"
