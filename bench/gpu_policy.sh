#!/usr/bin/env bash
# On the H200 machine (device tool): builds ember against the node's libtorch and the carried
# bundle (.deps), runs the policy's GPU test, then `ember bench policy` for the pi05 and small
# presets on both streams. Logs and JSON lines go to ${OUT:-/tmp/ember-out}.
#   bash bench/gpu_policy.sh [build|test|bench|train|all]
# train: writes a LIBERO-shaped dataset (tests/tools/libero_like_tool: two 256x256 PNG cameras,
# state 8, action 7, 40 tasks) and trains the pi05 preset on it for a few dozen steps, for the
# trainer's samples/s, MFU and data-wait fraction (build with EMBER_TARGETS including
# libero_like_tool).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
mkdir -p "$out"
build="$root/build-gpu"
what="${1:-all}"
if [[ "$what" == build || "$what" == all ]]; then
  prefix="$("$root/scripts/gpu-unpack.sh" /tmp/ember-deps)"
  torch_prefix="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix;$torch_prefix" -DEMBER_PYTHON="$(command -v python3)" \
    ${EMBER_CMAKE_EXTRA:-} > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
  ninja -C "$build" ${EMBER_TARGETS:-ember model_policy_gpu_test model_policy_test train_test} > "$out/build.log" 2>&1 || { grep -A5 -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
  echo "built"
fi
if [[ "$what" == test || "$what" == all ]]; then
  "$build/bin/model_policy_gpu_test" 2>&1 | tee "$out/model_policy_gpu_test.log" | tail -5
fi
if [[ "$what" == bench || "$what" == all ]]; then
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
  for preset in ${PRESETS:-pi05 small}; do
    for stream in libero community; do
      "$build/bin/ember" bench policy --preset "$preset" --stream "$stream" --device cuda \
        --batch_size "${BATCH:-16}" --warmup "${WARMUP:-3}" --steps "${STEPS:-10}" 2>&1 | tee -a "$out/policy_bench.jsonl"
    done
  done
fi
if [[ "$what" == train ]]; then
  data="${DATA:-/tmp/ember-libero-like}"
  [[ -d "$data" ]] || "$build/bin/libero_like_tool" "$data" --episodes "${EPISODES:-400}" --frames 50 2>&1 | tail -1 | tee "$out/libero_like.log"
  rm -rf /tmp/ember-train-pi05
  "$build/bin/ember" train --dataset.root="$data" --output_dir=/tmp/ember-train-pi05 --device=cuda --policy.preset="${PRESET:-pi05}" \
    --dataset.image_size=224 --steps="${STEPS:-60}" --log_freq=10 --save_checkpoint=false --batch_size="${BATCH:-16}" \
    --num_workers="${WORKERS:-14}" --optimizer.lr=2.5e-5 2>&1 | tail -8 | tee "$out/train_${PRESET:-pi05}.log"
  cp /tmp/ember-train-pi05/metrics.jsonl "$out/train_${PRESET:-pi05}_metrics.jsonl"
fi
