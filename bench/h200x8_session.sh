#!/usr/bin/env bash
# Issue #8's runs on one 8-GPU (or 4-GPU) H200 machine (device kind nvidia-h200-x8 / -x4), in calls
# that share the machine's /tmp (each under the device tool's 10-minute limit). Run from the
# repository root with .deps and .gl carried on the first call, nothing carried after it.
#   a: build; the LIBERO-like dataset; small at per-GPU batch 128 on 1, 2, 4, 8 GPUs, with and
#      without ZeRO-1.
#   b: pi05 (bf16 parameters) at per-GPU batch 32 on 1, 2, 4 GPUs, with and without ZeRO-1.
#   c: pi05 (bf16 parameters) on 8 GPUs, with and without ZeRO-1, against b's 1-GPU run.
#   d: pi05 with fp32 master weights at per-GPU batch 32 on 1 and 8 GPUs.
# GPUS overrides the list (default "2 4 8", or "2 4" on a 4-GPU machine). EMBER_COMMIT names the
# commit in the results (the copied tree's .git is stale). Logs and JSON lines under $OUT.
set -uo pipefail
out="${OUT:-/tmp/ember-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
data=/tmp/ember-libero-like
ngpu="$(nvidia-smi -L 2>/dev/null | wc -l)"
default_gpus="2 4 8"
((ngpu < 8)) && default_gpus="2 4"
gpus="${GPUS:-$default_gpus}"
cores="$(nproc)"
case "${1:?a|b|c|d}" in
  a)
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    EMBER_TARGETS="ember libero_like_tool" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
    build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1
    # small at batch 128 needs about 24 loader threads for one GPU; each of N ranks gets its share
    OUT="$out/small" WORKERS=24 BATCH=128 STEPS=100 LOG_FREQ=20 PHASE=1gpu bash bench/dist_scaling.sh $data small >>"$out/small.log" 2>&1
    for n in $gpus; do
      OUT="$out/small" GPUS="$n" WORKERS=$((cores / n - 1 < 16 ? cores / n - 1 : 16)) BATCH=128 STEPS=100 LOG_FREQ=20 ZERO=1 \
        PHASE=multi bash bench/dist_scaling.sh $data small >>"$out/small.log" 2>&1
    done
    cat "$out/small/dist_scaling.jsonl" ;;
  b)
    OUT="$out/pi05" GPUS="${gpus% 8}" WORKERS=7 BATCH=32 STEPS=40 LOG_FREQ=10 ZERO=1 EXTRA="--policy.param_dtype=bf16" \
      bash bench/dist_scaling.sh $data pi05 >>"$out/pi05.log" 2>&1
    cat "$out/pi05/dist_scaling.jsonl" ;;
  c)
    OUT="$out/pi05" GPUS=8 WORKERS=7 BATCH=32 STEPS=40 LOG_FREQ=10 ZERO=1 EXTRA="--policy.param_dtype=bf16" PHASE=multi \
      bash bench/dist_scaling.sh $data pi05 >>"$out/pi05.log" 2>&1
    cat "$out/pi05/dist_scaling.jsonl" ;;
  d)
    OUT="$out/pi05_fp32" GPUS=8 WORKERS=7 BATCH=32 STEPS=40 LOG_FREQ=10 bash bench/dist_scaling.sh $data pi05 >>"$out/pi05_fp32.log" 2>&1
    cat "$out/pi05_fp32/dist_scaling.jsonl" ;;
esac
