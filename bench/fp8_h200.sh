#!/usr/bin/env bash
# The FP8 measurements of bench/results/fp8_h200_2026-12-01c.md in one or two device calls, each
# run bounded by a deadline so that what finished comes back.
#
#   bash bench/fp8_h200.sh            (carry .deps; writes under $OUT)
#   MODE=quality bash bench/fp8_h200.sh
#
# MODE=figures (default): builds, runs the FP8 GPU tests, times each linear layer and the fused MLP
# in bf16 and FP8 with both quantisation kernels, each quantisation alone with its TB/s (`ember
# bench fp8_linear`), then `ember bench policy --fp8` (bf16 and FP8 on the same batches) per entry
# of POLICY_RUNS, the first with the staged kernel beside the vector one and a profile of 2 extra
# steps per run, summarised by bench/trace_summary.py (the FP8 step in parts).
# MODE=quality: builds (a no-op on a warm machine), then `ember train` pi05 (bf16 parameters, the
# same seed and LIBERO-like data) without and with --policy.fp8.
#
# Environment: POLICY_RUNS (";"-separated `ember bench policy` flags, in order; default below),
# TRAIN_STEPS=120, TRAIN_BATCH=8, DEADLINE_S=280 (seconds since the start after which no new run
# begins and a running one is stopped), STEPS=6, WARMUP=2. MODE=quality only: PARALLEL=1 runs the
# two arms at once on the one GPU (their losses do not depend on it; their speed figures then
# mean nothing); EMBER_BIN=DIR takes ember and libero_like_tool from DIR (bench/node_wrap.sh's
# wrappers) instead of building.
# Files under $OUT (at most 8 come back): configure.log, build.log, run.log (device, tests, run
# times, errors), fp8_linear.jsonl, policy_fp8.jsonl, trace_summary.txt; quality_bf16.jsonl and
# quality_fp8.jsonl (MODE=quality).
# Device-time cost (2026-12-01, bench/results/fp8_h200_2026-12-01c.md): MODE=figures with
# DEADLINE_S=250 took 241 s of command (build 100 s, tests 4 s, fp8_linear 2 s, the first POLICY_RUNS
# entry 123 s; the deadline stopped the other two) and ~270 s of device time on a fresh
# nvidia-h200; `ember train` runs ~7.1 steps/s at batch 8 after ~20 s of start-up per arm.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
start=$SECONDS
deadline="${DEADLINE_S:-280}"
log="$out/run.log"
mkdir -p "$out"
left() { echo $((deadline - (SECONDS - start))); }
stamp() { echo "$* at $((SECONDS - start)) s" | tee -a "$log"; }
# the build lives outside the tree, so that a second call on the same (warm) machine finds it even
# when the tree is carried again (a carried folder replaces the one there, build-gpu/ included);
# MODE=quality then skips the build when the sources are those it was built from (REBUILD=1: always)
export BUILD_DIR="${BUILD_DIR:-/tmp/ember-build-fp8}"
bin="$BUILD_DIR/bin"
sources="$(cd "$root" && find src CMakeLists.txt cmake -type f | sort | xargs cat | sha1sum | cut -d' ' -f1)"
if [[ "${MODE:-figures}" == quality && -n "${EMBER_BIN:-}" ]]; then
  bin="$EMBER_BIN"
  echo "fp8_h200.sh: ember from $bin: not built" | tee -a "$log"
elif [[ "${MODE:-figures}" == quality && "${REBUILD:-0}" != 1 && -x "$bin/ember" && -x "$bin/libero_like_tool" &&
      "$(cat "$BUILD_DIR/fp8_sources.sha1" 2>/dev/null)" == "$sources" ]]; then
  echo "fp8_h200.sh: the build of these sources is there: not rebuilt" | tee -a "$log"
else
  bash "$root/bench/gpu_build.sh" ember fp8_linear_gpu_test libero_like_tool || exit 1
  echo "$sources" >"$BUILD_DIR/fp8_sources.sha1"
fi
ember="$bin/ember"
data=/tmp/fp8_libero_like
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$log"
stamp built

if [[ "${MODE:-figures}" == quality ]]; then
  [[ -f "$data/meta/info.json" ]] || "$bin/libero_like_tool" "$data" --episodes 40 --frames 50 >>"$log" 2>&1 ||
    { echo "fp8_h200.sh: libero_like_tool failed" | tee -a "$log"; exit 1; }
  stamp "data ready"
  quality_arm() {
    local arm=$1 extra=()
    [[ $arm == fp8 ]] && extra=(--policy.fp8=true)
    rm -rf "/tmp/fp8_run_$arm"
    timeout "$(left)" "$ember" train --dataset.root="$data" --output_dir="/tmp/fp8_run_$arm" --policy.preset=pi05 \
      --policy.param_dtype=bf16 --device=cuda --steps="${TRAIN_STEPS:-120}" --batch_size="${TRAIN_BATCH:-8}" \
      --log_freq=5 --seed=0 --save_checkpoint=false "${extra[@]}" >"$out/quality_$arm.log" 2>&1
    cp "/tmp/fp8_run_$arm/metrics.jsonl" "$out/quality_$arm.jsonl" 2>/dev/null
    stamp "quality $arm done"
  }
  for arm in bf16 fp8; do
    (($(left) > 40)) || { echo "fp8_h200.sh: deadline: quality $arm not run" | tee -a "$log"; continue; }
    if [[ "${PARALLEL:-0}" == 1 ]]; then quality_arm $arm & else quality_arm $arm; fi
  done
  wait
  exit 0
fi

# the quality runs' data (a later MODE=quality call on the same machine finds it), written while the
# GPU runs (CPU only)
"$bin/libero_like_tool" "$data" --episodes 40 --frames 50 >>"$log" 2>&1 &
"$bin/fp8_linear_gpu_test" >>"$log" 2>&1
grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) " "$log"
stamp tests
timeout 120 "$ember" bench fp8_linear --preset pi05 --device cuda --batch_size 16 --warmup 3 --repeats 10 2>>"$log" |
  tee -a "$out/fp8_linear.jsonl"
stamp "fp8_linear"

prof=/tmp/fp8_profile
default_runs="--stream libero --attention varlen --batch_size 16,32 --fp8_kernels vector,staged --profile $prof"
default_runs+=" --profile_after 2;--stream community --attention varlen --batch_size 16,32"
default_runs+=";--stream libero --attention padded --batch_size 16"
IFS=';' read -r -a policy_runs <<<"${POLICY_RUNS:-$default_runs}"
for flags in "${policy_runs[@]}"; do
  (($(left) > 30)) || { echo "fp8_h200.sh: deadline: '$flags' not run" | tee -a "$log"; continue; }
  # shellcheck disable=SC2086  # the flags are words
  timeout "$(left)" "$ember" bench policy --preset pi05 --device cuda --warmup "${WARMUP:-2}" \
    --steps "${STEPS:-6}" --param_dtype bf16 --fp8 $flags 2>>"$log" | tee -a "$out/policy_fp8.jsonl"
  stamp "policy '$flags' done"
done
for trace in "$prof"/*.json; do
  [[ -f "$trace" ]] || continue
  python3 "$root/bench/trace_summary.py" "$trace" --steps 2 --top 12 >>"$out/trace_summary.txt" 2>&1
done
stamp "fp8_h200.sh: done"
