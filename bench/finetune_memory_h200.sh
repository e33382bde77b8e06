#!/usr/bin/env bash
# Fine-tuning memory settings of pi0.5 (issue 21) in one device call: builds, runs the GPU tests
# of the policy, then `ember bench policy` (pi05, bf16 parameters, varlen, libero stream) at a
# global batch of 32 per setting: one batch of 32, 2 x 16 accumulated, each with and without
# --gradient_checkpointing, and the batch of 16 for scale; peak memory and samples/s per run.
#
#   bash bench/finetune_memory_h200.sh            (carry .deps; writes under $OUT)
#
# Environment: RUNS (default below: "batch:accumulation:checkpointing" triples, in order),
# DEADLINE_S=540 (no new run starts after this many seconds), STEPS=6, WARMUP=2.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
start=$SECONDS
deadline="${DEADLINE_S:-540}"
mkdir -p "$out"
bash "$root/bench/gpu_build.sh" ember model_policy_gpu_test || exit 1
ember="$root/build-gpu/bin/ember"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
for t in model_policy_gpu_test; do
  "$root/build-gpu/bin/$t" 2>&1 | tee "$out/$t.log" | grep -E "^\[  (PASSED|FAILED) |SKIPPED" || true
done
for run in ${RUNS:-16:1:0 32:1:0 32:1:1 16:2:1 16:2:0}; do
  IFS=: read -r batch accum ckpt <<<"$run"
  left=$((deadline - (SECONDS - start)))
  ((left > 45)) || { echo "finetune_memory_h200.sh: deadline: $run not run"; continue; }
  flags=(--batch_size "$batch" --gradient_accumulation_steps "$accum")
  ((ckpt)) && flags+=(--gradient_checkpointing)
  timeout "$left" "$ember" bench policy --preset pi05 --attention varlen --stream libero --device cuda \
    --warmup "${WARMUP:-2}" --steps "${STEPS:-5}" --param_dtype bf16 "${flags[@]}" \
    2>>"$out/policy.err" | grep '^{' | tee -a "$out/finetune_memory.jsonl"
done
echo "finetune_memory_h200.sh: $((SECONDS - start)) s"
