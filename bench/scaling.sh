#!/usr/bin/env bash
# Data-parallel scaling of `ember train` on one node, 1..N GPUs through `ember launch`, and the
# 1-GPU training figures (samples/s, MFU, data wait, peak memory) on the way.
#
#   bash bench/scaling.sh N [PRESET...]          (PRESET: small, pi05; default: both)
#
# N: the largest GPU count (1 measures the 1-GPU run alone). The multi-GPU runs are 2, 4, 8, ...
# up to N, and N itself. Each run is bench/dist_scaling.sh's (the per-rank engine, also tested on
# CPU ranks in CI): the same per-GPU batch on every count, efficiency = samples/s on n GPUs /
# (n x samples/s on 1), the first log window skipped as warm-up, no checkpoints written.
# Environment (dist_scaling.sh's, with these defaults here):
#   DATA=/tmp/ember-libero-like  the dataset; written first when absent, by
#                                build-gpu/bin/libero_like_tool DATA --episodes 120 --frames 50
#                                (two 256x256 PNG cameras, state 8, action 7, 40 tasks: LIBERO's
#                                shapes, and no FFmpeg needed)
#   BATCH      per-GPU batch (dist_scaling.sh: small 128, pi05 32)
#   STEPS, LOG_FREQ  default small 100 / 20, pi05 40 / 10
#   WORKERS    loader threads per rank (default ember's: the host's cores shared among ranks)
#   PARAM_DTYPE=bf16|fp32  --policy.param_dtype (default: ember's, fp32 master weights)
#   ZERO=1     also each multi-GPU count with --dist.zero=1 (ZeRO-1)
#   EXTRA      more `ember train` flags, e.g. --dist.reduce_dtype=bf16
#   EMBER      the binary (default build-gpu/bin/ember; bench/gpu_build.sh builds it)
#   DEVICE=cpu ranks on Gloo instead (a check of the script itself, with the tiny preset)
# NCCL_NVLS_ENABLE=0 is set (the device README: NVLink multicast stays off).
# Device-time cost (estimates from the runs of 2026-11-30, not timed by this script): pi05 at
# batch 32, 40 steps, about 2 minutes per run; small at batch 128, 100 steps, about 1 minute;
# the dataset about a minute. N=2 with both presets: about 8 minutes (one call); on 8 GPUs
# split the presets over calls (`bash bench/scaling.sh 8 pi05`).
# Writes under $OUT (default /tmp/ember-out): dist_scaling.jsonl (one line per multi-GPU run),
# train_1gpu.jsonl (one line per preset's 1-GPU run), each run's log and metrics.jsonl.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
mkdir -p "$out"
n="${1:?usage: bench/scaling.sh N [PRESET...]}"
shift
presets=("$@")
((${#presets[@]})) || presets=(small pi05)
data="${DATA:-/tmp/ember-libero-like}"
export NCCL_NVLS_ENABLE=0
export EMBER="${EMBER:-$root/build-gpu/bin/ember}" OUT="$out"
export EXTRA="${PARAM_DTYPE:+--policy.param_dtype=$PARAM_DTYPE} ${EXTRA:-}"
user_steps="${STEPS:-}" user_log_freq="${LOG_FREQ:-}"
if [[ "${DEVICE:-cuda}" == cuda ]]; then
  ngpu="$(nvidia-smi -L 2>/dev/null | wc -l)"
  ((n <= ngpu)) || { echo "scaling.sh: $n GPUs asked for, $ngpu here" >&2; exit 2; }
fi
[[ -x "$EMBER" ]] || { echo "scaling.sh: $EMBER: not built (bench/gpu_build.sh)" >&2; exit 2; }

if [[ ! -d "$data" ]]; then
  "$(dirname "$EMBER")/libero_like_tool" "$data" --episodes 120 --frames 50 2>&1 | tail -n 1 || exit 1
fi
counts=()
for ((c = 2; c < n; c *= 2)); do counts+=("$c"); done
((n > 1)) && counts+=("$n")

for preset in "${presets[@]}"; do
  case "$preset" in small) s=100 f=20 ;; *) s=40 f=10 ;; esac
  export STEPS="${user_steps:-$s}" LOG_FREQ="${user_log_freq:-$f}"
  PHASE=1gpu bash "$root/bench/dist_scaling.sh" "$data" "$preset" >>"$out/scaling.log" 2>&1 ||
    { tail -n 20 "$out/scaling.log"; exit 1; }
  # the 1-GPU run's figures, over the log windows after the first
  python3 - "$out/${preset}_1gpu.metrics.jsonl" "$preset" <<'PY' | tee -a "$out/train_1gpu.jsonl"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][1:]
mean = lambda k: sum(r.get(k, 0) for r in rows) / len(rows)
print(json.dumps({"bench": "train_1gpu", "preset": sys.argv[2], "windows": len(rows),
                  "samples_per_s": round(mean("samples_per_s"), 2), "mfu": round(mean("mfu"), 4),
                  "data_wait_frac": round(mean("data_wait_frac"), 5), "step_time_s": round(mean("step_time_s"), 4),
                  "peak_mem_gb": round(max(r.get("peak_mem_gb", 0) for r in rows), 2)}))
PY
  if ((${#counts[@]})); then
    GPUS="${counts[*]}" PHASE=multi bash "$root/bench/dist_scaling.sh" "$data" "$preset" 2>>"$out/scaling.log" ||
      { tail -n 20 "$out/scaling.log"; exit 1; }
  fi
done
