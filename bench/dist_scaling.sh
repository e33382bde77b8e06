#!/usr/bin/env bash
# Data-parallel scaling on one node: `ember train` on 1 GPU, then the same per-GPU batch on N GPUs
# (GPUS, default 2) through `ember launch --nproc_per_node N` (NCCL), optionally also with ZeRO-1.
# Reads each run's metrics.jsonl (samples_per_s, the first log window skipped as warm-up) and
# prints one JSON line per configuration with the scaling efficiency = samples/s on N GPUs /
# (N x samples/s on 1), the step's extra time on N GPUs outside the data wait, peak memory.
#
#   bench/dist_scaling.sh DATASET_ROOT [PRESET...]
#
# DATASET_ROOT: a LeRobot dataset (on nodes without FFmpeg: one with `image` cameras, e.g. from
# `ember sim collect --camera_dtype image --image_size 224 ...`). PRESET: small, pi05 (default:
# both). Environment:
#   EMBER=build-gpu/bin/ember   the binary       OUT=/tmp/ember-out   logs, metrics, results
#   RUNS=/tmp/ember-dist-runs   output_dirs      STEPS=60  LOG_FREQ=10
#   BATCH (per GPU; default small 128, pi05 32, others 16)
#   WORKERS (loader threads per rank; default ember's: the host's cores shared among its ranks)
#   ZERO=1                      also run each multi-GPU count with --dist.zero=1
#   EXTRA='...'                 more `ember train` flags
#   DEVICE=cuda                 cpu: ranks on Gloo (the script's own test, tiny preset)
#   EMBER_COMMIT=abc1234        the commit recorded in the results (default: git rev-parse HEAD)
#   GPUS="2 4 8"                the multi-GPU runs (one process per GPU; default 2)
#   PHASE=all|1gpu|multi        1gpu: only the 1-GPU run; multi (or 2gpu): only the GPUS runs,
#                               compared with the 1-GPU metrics an earlier PHASE=1gpu left in OUT
# Runs write no checkpoint (--save_checkpoint=false): pi05's would be ~40 GB per run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="${1:?usage: bench/dist_scaling.sh DATASET_ROOT [PRESET...]}"
shift
presets=("$@")
((${#presets[@]})) || presets=(small pi05)
ember="${EMBER:-$root/build-gpu/bin/ember}"
out="${OUT:-/tmp/ember-out}"
runs="${RUNS:-/tmp/ember-dist-runs}"
steps="${STEPS:-60}" log_freq="${LOG_FREQ:-10}"
mkdir -p "$out" "$runs"
export NCCL_NVLS_ENABLE=0
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo unknown)"
# EMBER_COMMIT: the commit to record (the device tool's copy of the tree carries a stale .git)
commit="${EMBER_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}"

# mean samples_per_s (and the last peak_mem_gb) over the log windows after the first
summarize() {
  python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if len(rows) < 2:
    sys.exit(f"{sys.argv[1]}: {len(rows)} log windows; need at least 2 (raise STEPS or lower LOG_FREQ)")
rest = rows[1:]
sps = sum(r["samples_per_s"] for r in rest) / len(rest)
mem = max((r.get("peak_mem_gb", 0) for r in rest), default=0)
step_s = sum(r.get("step_time_s", 0) for r in rest) / len(rest)
wait = sum(r.get("data_wait_frac", 0) for r in rest) / len(rest)
print(f"{sps:.3f} {mem:.3f} {step_s:.5f} {wait:.5f}")
PY
}

# run NAME NPROC [flags...]: one training run into $out/NAME
run() {
  local name=$1 nproc=$2
  shift 2
  rm -rf "${runs:?}/$name"
  local train=(train --dataset.root="$data" --output_dir="$runs/$name" --policy.preset="$preset" --device="${DEVICE:-cuda}"
               --steps="$steps" --log_freq="$log_freq" --save_checkpoint=false --batch_size="$batch"
               ${WORKERS:+--num_workers="$WORKERS"} "$@" ${EXTRA:-})
  echo "== $name: $nproc GPU(s)" >&2
  if ((nproc == 1)); then
    "$ember" "${train[@]}" >"$out/$name.log" 2>&1 || { tail -20 "$out/$name.log"; return 1; }
  else
    "$ember" launch --nproc_per_node "$nproc" -- "$ember" "${train[@]}" >"$out/$name.log" 2>&1 ||
      { tail -20 "$out/$name.log"; return 1; }
  fi
  grep -m1 "optimizer state per rank" "$out/$name.log" >&2 || true
  cp "$runs/$name/metrics.jsonl" "$out/$name.metrics.jsonl"
  rm -rf "${runs:?}/$name"
}

phase="${PHASE:-all}"
[[ "$phase" == 2gpu ]] && phase=multi  # the old name of the multi-GPU phase
read -r -a gpus <<<"${GPUS:-2}"
for preset in "${presets[@]}"; do
  # per-GPU batch: BATCH, else the preset's (small 128, the batch its ember10 recipe trains with;
  # pi05 32; others 16)
  case "$preset" in small) batch="${BATCH:-128}" ;; pi05) batch="${BATCH:-32}" ;; *) batch="${BATCH:-16}" ;; esac
  [[ "$phase" == multi ]] || run "${preset}_1gpu" 1
  [[ "$phase" == 1gpu ]] && continue
  read -r sps1 mem1 st1 w1 < <(summarize "$out/${preset}_1gpu.metrics.jsonl")
  configs=()
  for n in "${gpus[@]}"; do
    run "${preset}_${n}gpu" "$n"
    configs+=("$n ${n}gpu $(summarize "$out/${preset}_${n}gpu.metrics.jsonl")")
    if [[ "${ZERO:-0}" == 1 ]]; then
      run "${preset}_${n}gpu_zero1" "$n" --dist.zero=1
      configs+=("$n ${n}gpu_zero1 $(summarize "$out/${preset}_${n}gpu_zero1.metrics.jsonl")")
    fi
  done
  for c in "${configs[@]}"; do
    read -r n name sps mem st w <<<"$c"
    python3 - "$preset" "$name" "$n" "$sps1" "$mem1" "$st1" "$sps" "$mem" "$st" "$w1" "$w" "$batch" "$steps" "$gpu" "$commit" <<'PY' | tee -a "$out/dist_scaling.jsonl"
import json, sys
preset, name, n, s1, m1, t1, s2, m2, t2, w1, w2, batch, steps, gpu, commit = sys.argv[1:]
n = int(n)
s1, m1, t1, s2, m2, t2, w1, w2 = map(float, (s1, m1, t1, s2, m2, t2, w1, w2))
print(json.dumps({"bench": "dist_scaling", "device": gpu, "commit": commit, "preset": preset, "config": name, "gpus": n,
                  "per_gpu_batch": int(batch), "steps": int(steps),
                  "samples_per_s_1gpu": round(s1, 2), f"samples_per_s_{n}gpu": round(s2, 2),
                  "scaling_efficiency": round(s2 / (n * s1), 4),
                  "step_time_s_1gpu": round(t1, 4), f"step_time_s_{n}gpu": round(t2, 4),
                  # the N-GPU step's extra time: exposed communication and its slowing of the
                  # kernels it overlaps (the data wait is apart)
                  "extra_step_s": round(t2 * (1 - w2) - t1 * (1 - w1), 4),
                  "peak_mem_gb_1gpu": m1, f"peak_mem_gb_{n}gpu_rank0": m2,
                  "data_wait_frac_1gpu": w1, f"data_wait_frac_{n}gpu": w2}))
PY
  done
done
