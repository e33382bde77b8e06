#!/usr/bin/env bash
# The FP8 measurements of bench/results/fp8_h200_2026-12-01b.md in one device call: builds, runs
# the FP8 GPU tests, times each linear layer and the fused MLP in bf16 and FP8 (`ember bench
# fp8_linear`), then `ember bench policy --fp8` (bf16 and FP8 side by side on the same batches)
# per stream and batch size, and the quality comparison (`ember train` pi05, bf16 parameters, the
# same seed and LIBERO-like data, with and without --policy.fp8), each bounded by a deadline so
# that what finished comes back.
#
#   bash bench/fp8_h200.sh            (carry .deps; writes under $OUT)
#
# Environment: RUNS="libero:16 community:16 libero:32 community:32" (stream:batch, in order),
# QUALITY_AFTER=2 (the quality runs start after this many RUNS), TRAIN_STEPS=120, TRAIN_BATCH=8,
# DEADLINE_S=320 (seconds since the start after which no new run begins), STEPS=6, WARMUP=2.
# Files under $OUT (at most 8 come back): configure.log, build.log, run.log (device, tests,
# errors), fp8_linear.jsonl, policy_fp8.jsonl, quality_bf16.jsonl, quality_fp8.jsonl.
# Device-time cost: 321 s of command (build 85 s) and ~350 s of device time with the machine's
# start on a fresh nvidia-h200 (2026-12-01, commit 9c6226f: tests, layer timings, libero:16,
# community:16, both quality runs of 120 steps; the deadline stopped libero:32's FP8 arm).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
start=$SECONDS
deadline="${DEADLINE_S:-320}"
log="$out/run.log"
mkdir -p "$out"
left() { echo $((deadline - (SECONDS - start))); }
bash "$root/bench/gpu_build.sh" ember fp8_linear_gpu_test libero_like_tool || exit 1
bin="$root/build-gpu/bin"
ember="$bin/ember"
data=/tmp/fp8_libero_like
# the quality runs' data, written while the GPU tests and benches run (CPU only)
"$bin/libero_like_tool" "$data" --episodes 40 --frames 50 >>"$log" 2>&1 &
maker=$!
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$log"
echo "built at $((SECONDS - start)) s" | tee -a "$log"
"$bin/fp8_linear_gpu_test" >>"$log" 2>&1
grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) " "$log"
timeout 90 "$ember" bench fp8_linear --preset pi05 --device cuda --batch_size 16 --warmup 3 --repeats 10 2>>"$log" |
  tee -a "$out/fp8_linear.jsonl"

quality() {
  wait "$maker" || { echo "fp8_h200.sh: libero_like_tool failed" | tee -a "$log"; return; }
  for arm in bf16 fp8; do
    (($(left) > 40)) || { echo "fp8_h200.sh: deadline: quality $arm not run" | tee -a "$log"; continue; }
    local extra=()
    [[ $arm == fp8 ]] && extra=(--policy.fp8=true)
    rm -rf "/tmp/fp8_run_$arm"
    timeout "$(left)" "$ember" train --dataset.root="$data" --output_dir="/tmp/fp8_run_$arm" --policy.preset=pi05 \
      --policy.param_dtype=bf16 --device=cuda --steps="${TRAIN_STEPS:-120}" --batch_size="${TRAIN_BATCH:-8}" \
      --log_freq=5 --seed=0 --save_checkpoint=false "${extra[@]}" >>"$log" 2>&1
    cp "/tmp/fp8_run_$arm/metrics.jsonl" "$out/quality_$arm.jsonl" 2>/dev/null
    echo "quality $arm done at $((SECONDS - start)) s" | tee -a "$log"
  done
}

n=0
for run in ${RUNS:-libero:16 community:16 libero:32 community:32}; do
  ((n++ == ${QUALITY_AFTER:-2})) && quality && quality_done=1
  stream="${run%%:*}" batch="${run##*:}"
  # a pair (bf16 and FP8) took 45-55 s at batch 16 (2026-12-01): start one only where it can finish
  (($(left) > 3 * batch)) || { echo "fp8_h200.sh: deadline: $run not run" | tee -a "$log"; continue; }
  timeout "$(left)" "$ember" bench policy --preset pi05 --attention varlen --stream "$stream" --device cuda \
    --batch_size "$batch" --warmup "${WARMUP:-2}" --steps "${STEPS:-6}" --param_dtype bf16 --fp8 \
    2>>"$log" | tee -a "$out/policy_fp8.jsonl"
  echo "$run done at $((SECONDS - start)) s" | tee -a "$log"
done
[[ -n "${quality_done:-}" ]] || quality
echo "fp8_h200.sh: $((SECONDS - start)) s" | tee -a "$log"
