#!/usr/bin/env bash
# The GPU throughput checks of docs/training.md "Speed", in one run: writes JSON into $1 (default
# $OUT or ./bench_gpu). Each JSON puts our step (AMP + channels_last) beside DeepfakeBench's fp32
# NCHW step on the same model and batch, and the real loader beside the synthetic batch. Then
# the memory and time of one training step of DeepfakeBench v2's image detectors, PG-FDD and every
# registered video detector at DeepfakeBench's batch (and clip) size (bf16), two JSON files
# (scripts/bench_detectors.py).
set -euo pipefail
out="${1:-${OUT:-bench_gpu}}"
mkdir -p "$out"
py="${PYTHON:-python}"
workers="${WORKERS:-$(($(nproc) - 2))}"
nvidia-smi -L | tee "$out/gpu.txt"
bench() {
    local name="$1"
    shift
    "$py" scripts/bench_train.py --device cuda --no-cache --num-workers "$workers" "$@" \
        >"$out/$name.json" 2>"$out/$name.log" || { tail -20 "$out/$name.log"; return 1; }
    "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], {k: d[k] for k in ('step_images_per_s', 'reference_step_images_per_s', 'step_speedup', 'train_images_per_s', 'loader_keeps_fraction')})" "$out/$name.json" "$name"
}
bench xception_bf16 --detector xception --batch-size 32 --precision bf16 --steps 20
bench xception_fp16 --detector xception --batch-size 32 --precision fp16 --steps 20
bench xception_fp32_nchw --detector xception --batch-size 32 --precision fp32 --no-channels-last --steps 20
bench meso4_bf16 --detector meso4 --batch-size 128 --precision bf16 --steps 20
# v2 image detectors and PG-FDD, then the video detectors: each in a fresh process; a failed one is reported in the JSON, the rest still run
v2_image="sbi sia multi_attention lrl rfm sladd pcl_xception lsda iid clip effort uia_vit pg_fdd"
# shellcheck disable=SC2086
"$py" scripts/bench_detectors.py --detectors $v2_image --device cuda --precision bf16 --steps 5 \
    >"$out/image_v2_detectors.json" 2>"$out/image_v2_detectors.log" || echo "v2 image detectors: some failed (see $out/image_v2_detectors.json)"
"$py" scripts/bench_detectors.py --detectors video --device cuda --precision bf16 --steps 5 \
    >"$out/video_detectors.json" 2>"$out/video_detectors.log" || echo "video detectors: some failed (see $out/video_detectors.json)"
for f in image_v2_detectors video_detectors; do
    "$py" -c "import json,sys; [print(r['detector'], {k: r.get(k) for k in ('batch_size', 'clip_size', 'step_memory_mb', 'step_s', 'error')}) for r in json.load(open(sys.argv[1]))]" "$out/$f.json"
done
