#!/usr/bin/env bash
# One session's GPU benchmarks on a 2-GPU H200 machine (device kind nvidia-h200-x2, 32 cores),
# in two calls that share the machine's /tmp. GPU 1 + cores 16-31 run the simulation pipeline
# while GPU 0 + cores 0-15 run the policy and 1-GPU benchmarks, so neither waits for the other;
# the 2-GPU runs come last, alone on the machine.
#   part1: build; [GPU 1] collect ember10 demonstrations, train `small` on them (<= 10 min);
#          [GPU 0] model_policy_gpu_test, pi05 training on a LIBERO-like dataset, bench policy
#   part2: [GPU 1] eval the part1 policy on ember10 (50 trials/task);
#          [GPU 0] 1-GPU data-parallel baselines; then the 2-GPU runs (NCCL) and their efficiency
# Logs under $OUT. Run from the repository root with .deps and .gl carried (bench/README.md).
set -uo pipefail
out="${OUT:-/tmp/ember-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
data=/tmp/ember-libero-like
case "${1:?part1|part2}" in
  part1)
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    EMBER_TARGETS="ember libero_like_tool model_policy_gpu_test" bash bench/gpu_policy.sh build || exit 1
    (
      export CUDA_VISIBLE_DEVICES=1
      taskset -c 16-31 bash bench/gpu_sim_train.sh collect &&
        TRAIN_SECONDS="${TRAIN_SECONDS:-360}" STEPS="${SIM_STEPS:-4000}" SAVE=500 taskset -c 16-31 bash bench/gpu_sim_train.sh train
    ) >"$out/sim_part1.log" 2>&1 &
    (
      export CUDA_VISIBLE_DEVICES=0
      taskset -c 0-15 bash bench/gpu_policy.sh test
      DATA=$data STEPS=60 taskset -c 0-15 bash bench/gpu_policy.sh train
      PRESETS=pi05 STEPS=10 WARMUP=3 taskset -c 0-15 bash bench/gpu_policy.sh bench
    ) >"$out/policy_part1.log" 2>&1 &
    wait
    tail -5 "$out/sim_part1.log" "$out/policy_part1.log" ;;
  part2)
    (CUDA_VISIBLE_DEVICES=1 taskset -c 16-31 bash bench/gpu_sim_train.sh eval) >"$out/eval_part2.log" 2>&1 &
    (
      export CUDA_VISIBLE_DEVICES=0 PHASE=1gpu WORKERS=7
      STEPS=300 LOG_FREQ=50 taskset -c 0-15 bash bench/dist_scaling.sh $data small
      STEPS=50 LOG_FREQ=10 taskset -c 0-15 bash bench/dist_scaling.sh $data pi05
    ) >"$out/dist_1gpu.log" 2>&1
    wait
    export PHASE=2gpu WORKERS=7 ZERO=1
    STEPS=300 LOG_FREQ=50 bash bench/dist_scaling.sh $data small >"$out/dist_2gpu.log" 2>&1
    STEPS=50 LOG_FREQ=10 bash bench/dist_scaling.sh $data pi05 >>"$out/dist_2gpu.log" 2>&1
    tail -3 "$out/eval_part2.log"; cat "$out/dist_scaling.jsonl" ;;
esac
