#!/usr/bin/env bash
# The FP8 measurements of bench/results/fp8_h200_2026-12-01.md in one device call: builds, runs
# the FP8 GPU tests, times each linear layer in bf16 and FP8 (`ember bench fp8_linear`), then
# `ember bench policy --fp8` (bf16 and FP8 side by side on the same batches) per stream and
# batch size, each bounded by a deadline so that what finished comes back.
#
#   bash bench/fp8_h200.sh            (carry .deps; writes under $OUT)
#
# Environment: RUNS="libero:16 community:16 libero:32" (stream:batch, in order), DEADLINE_S=560
# (seconds since the start after which no new run begins), STEPS=8, WARMUP=2.
# Device-time cost: the default took 288 s of command on a fresh nvidia-h200 (2026-12-01:
# build, tests, layer timings and the three stream:batch pairs, each pair two pi05 models built
# and run), 480 s of the lease with the machine's start.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
start=$SECONDS
deadline="${DEADLINE_S:-560}"
mkdir -p "$out"
bash "$root/bench/gpu_build.sh" ember fp8_linear_gpu_test || exit 1
ember="$root/build-gpu/bin/ember"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/device.txt"
"$root/build-gpu/bin/fp8_linear_gpu_test" 2>&1 | tee "$out/fp8_linear_gpu_test.log" | grep -E "OK|FAILED|SKIPPED|PASSED"
for preset in pi05 small; do
  timeout 120 "$ember" bench fp8_linear --preset "$preset" --device cuda --batch_size 16 2>&1 | tee -a "$out/fp8_linear.jsonl"
done
for run in ${RUNS:-libero:16 community:16 libero:32}; do
  left=$((deadline - (SECONDS - start)))
  ((left > 60)) || { echo "fp8_h200.sh: deadline: $run not run"; continue; }
  stream="${run%%:*}" batch="${run##*:}"
  timeout "$left" "$ember" bench policy --preset pi05 --attention varlen --stream "$stream" --device cuda \
    --batch_size "$batch" --warmup "${WARMUP:-2}" --steps "${STEPS:-8}" --param_dtype bf16 --fp8 \
    2>"$out/policy_${stream}_${batch}.err" | tee -a "$out/policy_fp8.jsonl"
done
echo "fp8_h200.sh: $((SECONDS - start)) s"
