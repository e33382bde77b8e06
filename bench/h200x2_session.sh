#!/usr/bin/env bash
# One session's GPU work on a 2-GPU H200 machine (device kind nvidia-h200-x2, 32 cores), in three
# calls that share the machine's /tmp (each under the device tool's 10-minute limit).
#   a: build this tree (build-gpu) and the previous commit's (.prev/base -> build-base, for
#      before/after ratios); [GPU 1, cores 16-31] collect ember10 demonstrations;
#      [GPU 0, cores 0-15] the LIBERO-like dataset, then `small` on 1 GPU with both builds;
#      then `small` on 2 GPUs with both builds (data-parallel scaling, before and after).
#   b: train `small` on the demonstrations for at most TRAIN_SECONDS (default 540) on each GPU:
#      GPU 1 without image transforms (run sim_a), GPU 0 with them (run sim_b).
#   c: evaluate both on ember10, 50 trials per task; then a profiled pi05 bench and pi05 on 1
#      and 2 GPUs with this build.
#   d: (a fresh machine) both builds again, then `small` on 1 and 2 GPUs with each build, every
#      run alone on the machine (before/after ratios without the collect running beside them),
#      and a profiled pi05 bench (varlen) summarised by bench/trace_summary.py.
# Logs under $OUT. Run from the repository root with .deps, .gl and .prev carried.
set -uo pipefail
out="${OUT:-/tmp/ember-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
data=/tmp/ember-libero-like
root="$(pwd)"
build_both() {
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  EMBER_TARGETS="${1:-ember libero_like_tool}" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 &
  (
    cd .prev/base && mkdir -p .deps && cp -r "$root/.deps/debs" .deps/ &&
      OUT="$out/base" EMBER_TARGETS="ember" bash bench/gpu_policy.sh build
  ) >"$out/build_base.log" 2>&1 &
  wait
  tail -n 3 "$out/build.log" "$out/build_base.log"
  [[ -x build-gpu/bin/ember ]]
}
case "${1:?a|b|c|d}" in
  a)
    build_both || exit 1
    (
      export CUDA_VISIBLE_DEVICES=1
      EPISODES="${EPISODES:-50}" taskset -c 16-31 bash bench/gpu_sim_train.sh collect
    ) >"$out/sim_collect.log" 2>&1 &
    (
      export CUDA_VISIBLE_DEVICES=0 PHASE=1gpu WORKERS=7 STEPS=300 LOG_FREQ=50
      taskset -c 0-15 build-gpu/bin/libero_like_tool $data --episodes 400 --frames 50 2>&1 | tail -1
      taskset -c 0-15 bash bench/dist_scaling.sh $data small
      [[ -x .prev/base/build-gpu/bin/ember ]] &&
        OUT="$out/base" EMBER=.prev/base/build-gpu/bin/ember taskset -c 0-15 bash bench/dist_scaling.sh $data small
    ) >"$out/dist_1gpu.log" 2>&1 &
    wait
    export PHASE=2gpu WORKERS=7 STEPS=300 LOG_FREQ=50
    bash bench/dist_scaling.sh $data small >"$out/dist_2gpu.log" 2>&1
    [[ -x .prev/base/build-gpu/bin/ember ]] &&
      OUT="$out/base" EMBER=.prev/base/build-gpu/bin/ember bash bench/dist_scaling.sh $data small >>"$out/dist_2gpu.log" 2>&1
    tail -n 4 "$out/sim_collect.log"
    cat "$out/dist_scaling.jsonl" "$out/base/dist_scaling.jsonl" 2>&1 ;;
  b)
    secs="${TRAIN_SECONDS:-540}"
    (CUDA_VISIBLE_DEVICES=1 RUN=sim_a TRAIN_SECONDS=$secs taskset -c 16-31 bash bench/gpu_sim_train.sh train) >"$out/train_a.log" 2>&1 &
    (CUDA_VISIBLE_DEVICES=0 RUN=sim_b TRAIN_SECONDS=$secs TRAIN_EXTRA="--dataset.image_transforms.enable=true" \
      taskset -c 0-15 bash bench/gpu_sim_train.sh train) >"$out/train_b.log" 2>&1 &
    wait
    tail -n 4 "$out/train_a.log" "$out/train_b.log" ;;
  c)
    (CUDA_VISIBLE_DEVICES=1 RUN=sim_a taskset -c 16-31 bash bench/gpu_sim_train.sh eval) >"$out/eval_a.log" 2>&1 &
    (CUDA_VISIBLE_DEVICES=0 RUN=sim_b taskset -c 0-15 bash bench/gpu_sim_train.sh eval) >"$out/eval_b.log" 2>&1 &
    wait
    tail -n 14 "$out/eval_a.log" "$out/eval_b.log"
    (
      export CUDA_VISIBLE_DEVICES=0
      build-gpu/bin/ember bench policy --preset pi05 --stream libero --device cuda --batch_size 16 --warmup 3 --steps 6 \
        --profile "$out/profile_pi05" 2>&1 | tail -3
      python3 bench/trace_summary.py "$out"/profile_pi05/*.json --steps 6 2>&1 | head -60
    ) >"$out/profile_pi05.log" 2>&1
    STEPS=50 LOG_FREQ=10 WORKERS=7 PHASE=all bash bench/dist_scaling.sh $data pi05 >"$out/dist_pi05.log" 2>&1
    cat "$out/dist_scaling.jsonl" ;;
  d)
    build_both || exit 1
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1
    export WORKERS=7 STEPS=300 LOG_FREQ=50
    for phase in 1gpu 2gpu; do
      PHASE=$phase bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
      OUT="$out/base" EMBER=.prev/base/build-gpu/bin/ember PHASE=$phase bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    done
    cat "$out/dist_scaling.jsonl" "$out/base/dist_scaling.jsonl"
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/ember bench policy --preset pi05 --stream libero --attention varlen --device cuda \
      --batch_size 16 --warmup 3 --steps 6 --profile "$out/profile_pi05" >"$out/profile_pi05.log" 2>&1
    python3 bench/trace_summary.py "$out"/profile_pi05/*varlen*.json --steps 6 >>"$out/profile_pi05.log" 2>&1
    rm -rf "$out/profile_pi05"
    tail -n 70 "$out/profile_pi05.log" ;;
esac
