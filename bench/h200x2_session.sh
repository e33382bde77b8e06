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
#   e, f: (a fresh machine) small, then pi05, on 1 and 2 GPUs with this build, the previous
#      commit's, and variants (see each case); every run alone on the machine.
#   g, h: the same, small's runs twice and alternating (see each case).
#   i: (a fresh machine) pi05's `ember bench policy`, this build beside the previous commit's.
#   j: (a fresh machine) the GPU tests; --bf16_weights on and off (pi05 bench, small 1/2 GPUs).
#   k: (after j, nothing carried) small at per-GPU batch 128 with enough loader threads; pi05 on
#      1 and 2 GPUs with and without ZeRO-1.
#   l: (a fresh machine) this build and the previous commit's: `ember bench loader` at batch 128
#      (pinned, 8/16/24 threads) with each, then small at per-GPU batch 128 on 1 and 2 GPUs.
#   m: (after l, nothing carried) pi05 on 1 GPU and on 2 GPUs with --dist.reduce_dtype fp32 and bf16.
#   p: (a fresh machine) the GPU tests; `ember bench loader --attention padded` (mask now made on
#      the GPU); repeats of small at batch 128 and pi05 at batch 32 on 1 and 2 GPUs.
#   r: (a fresh machine) profiles for #4 and #7: pi05's bench, varlen and padded, summarised by
#      kind of kernel; pi05 `ember train --profile_steps=3` at per-GPU batch 16 on 1 GPU and on
#      2 GPUs (both ranks), summarised the same way (where the 2-GPU step's extra time goes).
#   s: (a fresh machine, .prev/base = the previous commit) both builds, the GPU tests, pi05's bench
#      with each build side by side (as i), the dataset; t: (after s, nothing carried) small at
#      batch 16 on 1 and 2 GPUs with each build, alternating.
#   u: (a fresh machine) the GPU tests; pi05's bench with fp32 master weights and bf16 parameters.
#   v: (after u, nothing carried) pi05 on 1 and 2 GPUs with bf16 parameters (batch 16, 32) and
#      fp32 master weights (batch 16).
#   w: (a fresh machine, .prev/base = the previous commit) pi05's bench (varlen), this build beside
#      the previous commit's, with bf16 parameters and fp32 master weights.
#   y: (a fresh machine, .prev/base = e2cb814) the fused CUDA kernels: GPU tests, pi05's bench
#      against the base (both streams, both parameter dtypes), profiles with idle gaps.
#   z: (a fresh machine, .prev/base = the previous commit; first 1db8045 for ember's AdamW kernel, then
#      9500a93 for the merged q/k/v products): GPU tests, pi05 varlen against
#      the base (both parameter dtypes), the full bench on both streams, a profile.
#   aa: (a fresh machine) the host's time per matrix product: pi05 with 3 and 40 warm-up steps and
#      with the prefix rounded up to multiples of 64 and 256 tokens (--prefix_multiple).
#   ab: (a fresh machine, .prev/base = the previous commit) GPU tests; pi05 varlen (bf16 parameters)
#      against the base on both streams, GPUs swapped; the full bench with 3 and 20 warm-up steps.
#   ad: (a fresh machine) GPU tests; profiles of pi05 varlen and padded with the host's lead over
#      the GPU (is the step host-bound, and where).
#   ae: (after ad with nothing carried, or a fresh machine with .deps and .gl) --prefix_multiple 0/64/256/1024 after 40 warm-up steps, and a
#      profile: does the GPU stop waiting once every matrix shape has been seen?
#   af: (a fresh machine) ad's profiles without the GPU tests, returned as they finish, with the
#      host's lead over the GPU by tenth of the step.
#   ag: (.deps and .gl carried) libero varlen and padded profiles with matrix-product shapes.
#   ah: (.deps and .gl carried) --prefix_multiple 0 against 8 (an even, aligned token count).
#   ai: cuBLASLt's candidate kernels timed against its first choice (bench/cublaslt_candidates.cu).
#   aj: (.deps and .gl carried) the full bench at batch 16 and 32 with the defaults (warmed shapes).
#   ac: (a fresh machine) this build's full pi05 bench at batch 16 and 32, with the host's queue time.
#   x: (a fresh machine, .prev/base = bb8dbe6) the vision tower's change (patch embedding as a
#      matrix product, FlashAttention for its attention): GPU tests, pi05's bench against the
#      base on both streams, a community-stream profile by launching operator.
# Logs under $OUT. Run from the repository root with .deps, .gl and .prev carried.
set -uo pipefail
out="${OUT:-/tmp/ember-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
# the steps below were written when bench/dist_scaling.sh's per-GPU batch defaulted to 16
export BATCH="${BATCH:-16}"
data=/tmp/ember-libero-like
root="$(pwd)"
build_both() {
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  EMBER_TARGETS="${1:-ember libero_like_tool}" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 &
  (
    # its own prefix for the bundle: two dpkg -x into one folder at once race
    cd .prev/base && mkdir -p .deps && cp -r "$root/.deps/debs" .deps/ &&
      sed -i 's|/tmp/ember-deps|/tmp/ember-deps-base|' bench/gpu_policy.sh &&
      OUT="$out/base" EMBER_TARGETS="ember" bash bench/gpu_policy.sh build
  ) >"$out/build_base.log" 2>&1 &
  wait
  tail -n 3 "$out/build.log" "$out/build_base.log"
  [[ -x build-gpu/bin/ember ]]
}
# both builds with the GPU test programs, then the GPU tests of this build (one program per GPU)
build_both_and_test() {
  build_both "ember model_policy_gpu_test train_gpu_test" || { tail -n 20 "$out"/build*.log; return 1; }
  grep -h "ember: " "$out/configure.log"
  CUDA_VISIBLE_DEVICES=0 build-gpu/bin/model_policy_gpu_test >"$out/gpu_tests.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=1 build-gpu/bin/train_gpu_test >"$out/gpu_tests_train.log" 2>&1 &
  wait
  grep -h "OK \]\|FAILED\|Failure\|PASSED\|Expected\|Which is" "$out"/gpu_tests*.log | head -30
}
# this tree only (build-gpu), with the given targets
build_this() {
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  EMBER_TARGETS="$1" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; return 1; }
}
# this tree with the GPU test programs, then its GPU tests (one program per GPU)
build_this_and_test() {
  build_this "ember model_policy_gpu_test train_gpu_test" || return 1
  CUDA_VISIBLE_DEVICES=0 build-gpu/bin/model_policy_gpu_test >"$out/model_gpu_test.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=1 build-gpu/bin/train_gpu_test >"$out/train_gpu_test.log" 2>&1 &
  wait
  grep -h "OK \]\|FAILED\|PASSED" "$out"/*_gpu_test.log
}
# a profile of pi05 varlen on libero (bf16 parameters, batch 16, 4 steps, GPU 0) into DIR,
# summarised to $out/profile_libero.txt
profile_libero() {
  CUDA_VISIBLE_DEVICES=0 build-gpu/bin/ember bench policy --preset pi05 --stream libero --attention varlen --device cuda \
    --batch_size 16 --warmup 3 --steps 4 --param_dtype bf16 --profile "$1" >/dev/null 2>&1
  python3 bench/trace_summary.py "$1/pi05_libero_varlen.json" --steps 4 --top 30 >"$out/profile_libero.txt" 2>&1
  sed -n 1,12p "$out/profile_libero.txt"
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
  e)
    # small on 1 and 2 GPUs, every run alone: this build, the previous commit's, and the previous
    # commit's with OMP_NUM_THREADS=1 (one ATen thread per loader worker, what this build does
    # by default on CUDA), then this build's ZeRO-1 on 2 GPUs
    build_both || exit 1
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1
    export WORKERS=7 STEPS=300 LOG_FREQ=50
    for phase in 1gpu 2gpu; do
      PHASE=$phase ZERO=$([[ $phase == 2gpu ]] && echo 1 || echo 0) bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
      OUT="$out/base" EMBER=.prev/base/build-gpu/bin/ember PHASE=$phase bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
      OMP_NUM_THREADS=1 OUT="$out/base_omp1" EMBER=.prev/base/build-gpu/bin/ember PHASE=$phase \
        bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    done
    grep -h "optimizer state" "$out"/*.log | head -2
    cat "$out/dist_scaling.jsonl" "$out/base/dist_scaling.jsonl" "$out/base_omp1/dist_scaling.jsonl" ;;
  f)
    # pi05 on 1 and 2 GPUs (this build: 25 MB buckets, ZeRO-1; 100 MB buckets), and the previous
    # commit's on 2 GPUs against this build's 1-GPU run; the machine of step e, still warm
    export WORKERS=7 STEPS=50 LOG_FREQ=10
    PHASE=all ZERO=1 bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    for d in b100 base; do mkdir -p "$out/$d" && cp "$out/pi05_1gpu.metrics.jsonl" "$out/$d/"; done
    OUT="$out/b100" PHASE=2gpu EXTRA="--dist.bucket_mb=100" bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    grep -h "optimizer state" "$out"/*.log | head -2
    grep -h pi05 "$out/dist_scaling.jsonl" "$out/b100/dist_scaling.jsonl" ;;
  g)
    # small on 1 and 2 GPUs, this build and the previous commit's, alternating, twice (its
    # figures move by +-10 % from run to run), then this build with 100 MB buckets
    build_both || exit 1
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1
    export WORKERS=7 STEPS=300 LOG_FREQ=50
    for rep in 1 2; do
      for phase in 1gpu 2gpu; do
        OUT="$out/after_$rep" PHASE=$phase bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
        OUT="$out/base_$rep" EMBER=.prev/base/build-gpu/bin/ember PHASE=$phase bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
      done
      cat "$out/after_$rep/dist_scaling.jsonl" "$out/base_$rep/dist_scaling.jsonl"
    done
    mkdir -p "$out/b100" && cp "$out/after_2/small_1gpu.metrics.jsonl" "$out/b100/"
    OUT="$out/b100" PHASE=2gpu EXTRA="--dist.bucket_mb=100" bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    cat "$out/b100/dist_scaling.jsonl" ;;
  h)
    # after g, on the same warm machine (run with .prev not carried, so that its build stays):
    # pi05 on 1 and 2 GPUs with this build, with NCCL_MAX_CTAS=8 (fewer SMs for NCCL beside the
    # backward pass), and the previous commit's build on 2 GPUs
    export WORKERS=7 STEPS=50 LOG_FREQ=10
    OUT="$out/after" PHASE=all bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    for d in ctas8 base; do mkdir -p "$out/$d" && cp "$out/after/pi05_1gpu.metrics.jsonl" "$out/$d/"; done
    NCCL_MAX_CTAS=8 OUT="$out/ctas8" PHASE=2gpu bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    OUT="$out/base" EMBER=.prev/base/build-gpu/bin/ember PHASE=2gpu bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    cat "$out"/{after,ctas8,base}/dist_scaling.jsonl ;;
  i)
    # pi05's bench, varlen and padded: this build and the previous commit's at the same time, one
    # per GPU (cores 0-15 and 16-31), swapping GPUs between the libero and community streams
    build_both "ember" || exit 1
    bash "$0" i_bench ;;
  j)
    # (a fresh machine) the GPU tests, then --bf16_weights on and off in one build: pi05's bench
    # (GPU 0), small on 1 and 2 GPUs at per-GPU batch 16, and small at batch 128 with loader
    # threads enough for the 1-GPU run (WORKERS1) and for each of 2 ranks (WORKERS2)
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    EMBER_TARGETS="ember libero_like_tool model_policy_gpu_test train_gpu_test" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 || exit 1
    build-gpu/bin/model_policy_gpu_test 2>&1 | tail -n 4
    build-gpu/bin/train_gpu_test 2>&1 | tail -n 3
    CUDA_VISIBLE_DEVICES=1 build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1 &
    for flag in "" --bf16_weights; do
      CUDA_VISIBLE_DEVICES=0 build-gpu/bin/ember bench policy --preset pi05 --stream libero --device cuda \
        --batch_size 16 --warmup 3 --steps 10 $flag 2>/dev/null | tee -a "$out/policy_bf16_weights.jsonl" | tail -n 1
    done
    wait
    export WORKERS=7 STEPS=300 LOG_FREQ=50
    for w in false true; do
      for phase in 1gpu 2gpu; do
        OUT="$out/small_w$w" PHASE=$phase EXTRA="--policy.bf16_weights=$w" ZERO=$([[ $w == false ]] && echo 1 || echo 0) \
          bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
      done
      cat "$out/small_w$w/dist_scaling.jsonl"
    done
    ;;
  k)
    # after j, on the same warm machine (run with nothing carried, so that its build stays):
    # small at batch 128 with enough loader threads; ZeRO-1 (reduce onto owners) for both presets
    OUT="$out/b128" WORKERS="${WORKERS1:-24}" BATCH=128 STEPS=100 LOG_FREQ=20 PHASE=1gpu bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    OUT="$out/b128" WORKERS="${WORKERS2:-14}" BATCH=128 STEPS=100 LOG_FREQ=20 PHASE=2gpu bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    cat "$out/b128/dist_scaling.jsonl"
    WORKERS=7 STEPS=50 LOG_FREQ=10 ZERO=1 PHASE=all OUT="$out/pi05" bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    cat "$out/pi05/dist_scaling.jsonl" ;;
  l)
    build_both "ember libero_like_tool" || exit 1
    build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1
    for b in build-gpu .prev/base/build-gpu; do
      for attention in varlen padded; do
        "$b/bin/ember" bench loader $data --batch_size 128 --workers 8,16,24 --steps 10 --warmup 2 --pin_memory \
          --attention $attention 2>&1 | sed "s|^{|{\"build\":\"$b\",|" | tee -a "$out/loader.jsonl" | cut -c1-60,180-
      done
    done
    OUT="$out/b128" WORKERS=24 BATCH=128 STEPS=100 LOG_FREQ=20 PHASE=1gpu bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    OUT="$out/b128" WORKERS=14 BATCH=128 STEPS=100 LOG_FREQ=20 PHASE=2gpu bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    cat "$out/b128/dist_scaling.jsonl" ;;
  m)
    export WORKERS=7 STEPS=50 LOG_FREQ=10
    OUT="$out/fp32" PHASE=all bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    mkdir -p "$out/bf16" && cp "$out/fp32/pi05_1gpu.metrics.jsonl" "$out/bf16/"
    OUT="$out/bf16" PHASE=2gpu EXTRA="--dist.reduce_dtype=bf16" bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    cat "$out"/{fp32,bf16}/dist_scaling.jsonl ;;
  n)
    # (after m, nothing carried) pi05 at per-GPU batch 32 on 1 and 2 GPUs; then the previous
    # commit's build alone and `ember bench loader` with both builds (varlen, batch 128, pinned)
    OUT="$out/b32" WORKERS=7 STEPS=40 LOG_FREQ=10 BATCH=32 PHASE=all bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    cat "$out/b32/dist_scaling.jsonl"
    (cd .prev/base && OUT="$out/base" EMBER_TARGETS=ember bash bench/gpu_policy.sh build) >"$out/build_base.log" 2>&1 || tail -n 5 "$out/build_base.log"
    for b in build-gpu .prev/base/build-gpu build-gpu .prev/base/build-gpu; do
      "$b/bin/ember" bench loader $data --batch_size 128 --workers 8,24 --steps 10 --warmup 2 --pin_memory 2>&1 |
        sed "s|^{|{\"build\":\"$b\",|" | tee -a "$out/loader.jsonl" | cut -c1-60,180-
    done ;;
  p)
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    EMBER_TARGETS="ember libero_like_tool model_policy_gpu_test train_gpu_test" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
    build-gpu/bin/model_policy_gpu_test 2>&1 | tail -n 3
    build-gpu/bin/train_gpu_test 2>&1 | tail -n 3
    build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1
    build-gpu/bin/ember bench loader $data --batch_size 128 --workers 24 --steps 10 --warmup 2 --pin_memory --attention padded |
      tee "$out/loader_padded.jsonl" | cut -c150-
    OUT="$out/b128" WORKERS=24 BATCH=128 STEPS=100 LOG_FREQ=20 PHASE=1gpu bash bench/dist_scaling.sh $data small >>"$out/dist.log" 2>&1
    OUT="$out/b128" WORKERS=14 BATCH=128 STEPS=100 LOG_FREQ=20 PHASE=2gpu bash bench/dist_scaling.sh $data small >>"$out/dist.log" 2>&1
    cat "$out/b128/dist_scaling.jsonl"
    OUT="$out/b32" WORKERS=7 STEPS=30 LOG_FREQ=10 BATCH=32 PHASE=all bash bench/dist_scaling.sh $data pi05 >>"$out/dist.log" 2>&1
    cat "$out/b32/dist_scaling.jsonl" ;;
  r)
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    EMBER_TARGETS="ember libero_like_tool" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
    CUDA_VISIBLE_DEVICES=1 build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 2>&1 | tail -n 1 &
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/ember bench policy --preset pi05 --stream libero --device cuda --batch_size 16 \
      --warmup 3 --steps 4 --profile /tmp/ember-prof >"$out/profile_bench.log" 2>&1
    wait
    for t in /tmp/ember-prof/*.json; do python3 bench/trace_summary.py "$t" --steps 4 --top 25; done >>"$out/profile_bench.log" 2>&1
    grep -A12 "by kind" "$out/profile_bench.log"
    train=(train --dataset.root=$data --policy.preset=pi05 --device=cuda --steps=20 --log_freq=10 --save_checkpoint=false
           --batch_size=16 --num_workers=7 --profile_steps=3)
    build-gpu/bin/ember "${train[@]}" --output_dir=/tmp/ember-prof-1gpu >"$out/train_1gpu.log" 2>&1
    build-gpu/bin/ember launch --nproc_per_node 2 -- build-gpu/bin/ember "${train[@]}" --output_dir=/tmp/ember-prof-2gpu \
      >"$out/train_2gpu.log" 2>&1
    for t in /tmp/ember-prof-1gpu/profile/rank0.json /tmp/ember-prof-2gpu/profile/rank*.json; do
      python3 bench/trace_summary.py "$t" --steps 3 --top 20
    done >"$out/profile_train.log" 2>&1
    grep -A12 "by kind\|events" "$out/profile_train.log" | head -80 ;;
  s)
    # (a fresh machine, .prev/base = the commit before the RoPE/addcmul change) both builds, the
    # GPU tests, then pi05's bench with each build side by side (step i's pairing); the dataset
    build_both "ember libero_like_tool model_policy_gpu_test train_gpu_test" || { tail -n 20 "$out"/build*.log; exit 1; }
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/model_policy_gpu_test >"$out/gpu_tests.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1 build-gpu/bin/train_gpu_test >>"$out/gpu_tests_train.log" 2>&1 &
    wait
    tail -n 3 "$out/gpu_tests.log" "$out/gpu_tests_train.log"
    build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 >"$out/data.log" 2>&1 &
    bash "$0" i_bench
    wait; tail -n 1 "$out/data.log" ;;
  i_bench)
    bench() {  # BUILD_DIR GPU CORES STREAM NAME
      CUDA_VISIBLE_DEVICES=$2 taskset -c "$3" "$1/bin/ember" bench policy --preset pi05 --stream "$4" --device cuda \
        --batch_size 16 --warmup 3 --steps 10 --param_dtype "${PARAM_DTYPE:-fp32}" \
        >"$out/policy_$5_$4${PARAM_DTYPE:+_$PARAM_DTYPE}.jsonl" 2>"$out/policy_$5_$4${PARAM_DTYPE:+_$PARAM_DTYPE}.err"
    }
    for stream in libero community; do
      if [[ $stream == libero ]]; then g_after=0 g_base=1; else g_after=1 g_base=0; fi
      bench build-gpu $g_after $((g_after * 16))-$((g_after * 16 + 15)) $stream after &
      bench .prev/base/build-gpu $g_base $((g_base * 16))-$((g_base * 16 + 15)) $stream base &
      wait
    done
    tail -n 3 "$out"/policy_*.jsonl ;;
  t)
    # (after s, nothing carried) small at per-GPU batch 16 on 1 and 2 GPUs, this build and the
    # base alternating; then step r's profiles
    export WORKERS=7 STEPS=300 LOG_FREQ=50
    for phase in 1gpu 2gpu; do
      OUT="$out/after" PHASE=$phase bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
      OUT="$out/base" EMBER=.prev/base/build-gpu/bin/ember PHASE=$phase bash bench/dist_scaling.sh $data small >>"$out/dist_small.log" 2>&1
    done
    cat "$out"/{after,base}/dist_scaling.jsonl ;;
  u)
    # (a fresh machine) the GPU tests; pi05's bench with fp32 master weights and with bf16
    # parameters (--param_dtype), one per GPU at the same time, swapping GPUs between streams
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    EMBER_TARGETS="ember libero_like_tool model_policy_gpu_test train_gpu_test" bash bench/gpu_policy.sh build >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/model_policy_gpu_test >"$out/gpu_tests.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1 build-gpu/bin/train_gpu_test >>"$out/gpu_tests_train.log" 2>&1 &
    wait
    grep -h "OK \]\|FAILED\|Failure\|PASSED" "$out"/gpu_tests*.log
    build-gpu/bin/libero_like_tool $data --episodes 120 --frames 50 >"$out/data.log" 2>&1 &
    bench() {  # GPU CORES STREAM PARAM_DTYPE
      CUDA_VISIBLE_DEVICES=$1 taskset -c "$2" build-gpu/bin/ember bench policy --preset pi05 --stream "$3" --device cuda \
        --batch_size 16 --warmup 3 --steps 10 --param_dtype "$4" >"$out/policy_$4_$3.jsonl" 2>"$out/policy_$4_$3.err"
    }
    bench 0 0-15 libero fp32 & bench 1 16-31 libero bf16 & wait
    bench 1 16-31 community fp32 & bench 0 0-15 community bf16 & wait
    cat "$out"/policy_*.jsonl | cut -c1-400
    wait; tail -n 1 "$out/data.log" ;;
  v)
    # (after u, nothing carried) pi05 on 1 and 2 GPUs: bf16 parameters at per-GPU batch 16 and
    # 32, fp32 master weights at 16
    export WORKERS=7 STEPS=50 LOG_FREQ=10
    OUT="$out/bf16_b16" PHASE=all EXTRA="--policy.param_dtype=bf16" bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    cat "$out/bf16_b16/dist_scaling.jsonl"
    OUT="$out/fp32_b16" PHASE=all bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    cat "$out/fp32_b16/dist_scaling.jsonl"
    OUT="$out/bf16_b32" BATCH=32 STEPS=40 PHASE=all EXTRA="--policy.param_dtype=bf16" bash bench/dist_scaling.sh $data pi05 >>"$out/dist_pi05.log" 2>&1
    cat "$out/bf16_b32/dist_scaling.jsonl" ;;
  w)
    # (a fresh machine, .prev/base = the commit before) pi05's bench, varlen, this build beside
    # the previous commit's, one per GPU: bf16 parameters, then fp32 master weights (GPUs swapped)
    build_both "ember" || { tail -n 20 "$out"/build*.log; exit 1; }
    bench() {  # BUILD_DIR GPU CORES PARAM_DTYPE NAME
      CUDA_VISIBLE_DEVICES=$2 taskset -c "$3" "$1/bin/ember" bench policy --preset pi05 --stream libero --attention varlen \
        --device cuda --batch_size 16 --warmup 3 --steps 10 --param_dtype "$4" 2>/dev/null | sed "s|^{|{\"build\":\"$5\",|"
    }
    {
      bench build-gpu 0 0-15 bf16 after & bench .prev/base/build-gpu 1 16-31 bf16 base & wait
      bench build-gpu 1 16-31 fp32 after & bench .prev/base/build-gpu 0 0-15 fp32 base & wait
    } | tee "$out/policy_clip.jsonl" | cut -c1-330 ;;
  x)
    # (a fresh machine, .prev/base = bb8dbe6, before the vision tower's change) both builds; the
    # GPU tests; pi05's bench (varlen and padded, both streams) with each build side by side;
    # then a profile of the community stream (bf16 parameters) by launching operator
    build_both "ember model_policy_gpu_test train_gpu_test" || { tail -n 20 "$out"/build*.log; exit 1; }
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/model_policy_gpu_test >"$out/gpu_tests.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1 build-gpu/bin/train_gpu_test >"$out/gpu_tests_train.log" 2>&1 &
    wait
    grep -h "OK \]\|FAILED\|Failure\|PASSED" "$out"/gpu_tests*.log
    bash "$0" i_bench
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/ember bench policy --preset pi05 --stream community --attention varlen --device cuda \
      --batch_size 16 --warmup 3 --steps 4 --param_dtype bf16 --profile /tmp/ember-prof-x >/dev/null 2>&1
    python3 bench/trace_summary.py /tmp/ember-prof-x/pi05_community_varlen.json --steps 4 --top 30 >"$out/profile_community.txt" 2>&1
    sed -n 1,12p "$out/profile_community.txt"; grep -A30 "launching operator" "$out/profile_community.txt" | cut -c1-200 ;;
  y)
    # (a fresh machine, .prev/base = e2cb814) the fused CUDA kernels (gated GELU, RoPE) and the
    # vision tower's unbind: GPU tests; pi05's bench against the base, both streams, fp32 master
    # weights and bf16 parameters; profiles (bf16 parameters) of both streams with idle gaps.
    # Everything comes back in one archive (all.tgz); the summary is printed.
    build_both_and_test || exit 1
    bash "$0" i_bench >/dev/null
    PARAM_DTYPE=bf16 bash "$0" i_bench >/dev/null
    python3 bench/policy_summary.py "$out"/policy_*.jsonl
    for g in 0 1; do
      stream=$([[ $g == 0 ]] && echo libero || echo community)
      CUDA_VISIBLE_DEVICES=$g taskset -c $((g * 16))-$((g * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
        --stream $stream --attention varlen --device cuda --batch_size 16 --warmup 3 --steps 4 --param_dtype bf16 \
        --profile /tmp/ember-prof-y >/dev/null 2>&1 &
    done
    wait
    for stream in libero community; do
      python3 bench/trace_summary.py /tmp/ember-prof-y/pi05_${stream}_varlen.json --steps 4 --top 30 \
        >"$out/profile_$stream.txt" 2>&1
      sed -n 1,12p "$out/profile_$stream.txt"
      grep -A12 "idle gaps" "$out/profile_$stream.txt" | cut -c1-180
    done
    grep -A24 "launching operator" "$out/profile_libero.txt" | cut -c1-180
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
  z)
    # (a fresh machine, .prev/base = the previous commit) GPU tests; pi05 varlen on
    # libero, this build beside the base, fp32 master weights then bf16 parameters (GPUs swapped);
    # then this build's full bench (varlen and padded) on both streams with each parameter dtype,
    # and a libero profile with bf16 parameters. Everything comes back in one archive (all.tgz).
    build_both_and_test || exit 1
    one() {  # BUILD_DIR GPU STREAM ATTENTION PARAM_DTYPE NAME
      CUDA_VISIBLE_DEVICES=$2 taskset -c $(($2 * 16))-$(($2 * 16 + 15)) "$1/bin/ember" bench policy --preset pi05 \
        --stream "$3" ${4:+--attention $4} --device cuda --batch_size 16 --warmup 3 --steps 10 --param_dtype "$5" \
        >"$out/policy_$6.jsonl" 2>"$out/policy_$6.err"
    }
    one build-gpu 0 libero varlen fp32 pair_after_fp32 & one .prev/base/build-gpu 1 libero varlen fp32 pair_base_fp32 & wait
    one build-gpu 1 libero varlen bf16 pair_after_bf16 & one .prev/base/build-gpu 0 libero varlen bf16 pair_base_bf16 & wait
    python3 bench/policy_summary.py "$out"/policy_pair_*.jsonl
    for dtype in bf16 fp32; do
      one build-gpu 0 libero "" $dtype full_libero_$dtype & one build-gpu 1 community "" $dtype full_community_$dtype & wait
    done
    python3 bench/policy_summary.py "$out"/policy_full_*.jsonl
    profile_libero /tmp/ember-prof-z
    grep -A8 "idle gaps" "$out/profile_libero.txt" | cut -c1-180
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
  ad)
    # (a fresh machine) is the step bound by the host? This build's GPU tests, then profiles of
    # pi05 (bf16 parameters, batch 16, 4 steps) summarised with the host's lead over the GPU:
    # libero varlen and padded on GPU 0, community varlen and libero varlen at batch 32 on GPU 1.
    # Everything comes back in one archive (all.tgz).
    build_this_and_test || exit 1
    prof() {  # GPU STREAM ATTENTION BATCH NAME
      CUDA_VISIBLE_DEVICES=$1 taskset -c $(($1 * 16))-$(($1 * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
        --stream "$2" --attention "$3" --device cuda --batch_size "$4" --warmup 3 --steps 4 --param_dtype bf16 \
        --profile "/tmp/ember-prof-ad/$5" >"$out/policy_$5.jsonl" 2>&1
      python3 bench/trace_summary.py "/tmp/ember-prof-ad/$5/pi05_$2_$3.json" --steps 4 --top 30 >"$out/profile_$5.txt" 2>&1
    }
    (prof 0 libero varlen 16 libero_varlen; prof 0 libero padded 16 libero_padded) &
    (prof 1 community varlen 16 community_varlen; prof 1 libero varlen 32 libero_varlen_b32) &
    wait
    for f in "$out"/profile_*.txt; do
      echo "== $f"; sed -n 1,3p "$f"; grep "host lead" "$f"; grep -A4 "launching operators had run" "$f" | cut -c1-160
    done
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
  aj)
    # (.deps and .gl carried) ac with libero and community on the other GPUs (community on
    # GPU 0), run with a253876's defaults (shapes warmed before timing)
    FIRST_STREAM=community bash "$0" ac ;;
  ai)
    # (nothing carried) do cuBLASLt's other candidates beat its first choice at pi05's sizes?
    # bench/cublaslt_candidates.cu against the CUDA toolkit's cuBLAS, or else PyTorch's own copy
    inc=/usr/local/cuda/include lib=/usr/local/cuda/lib64
    if [[ ! -f $inc/cublasLt.h ]]; then
      nv=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')
      inc=$nv/include lib=$nv/lib
    fi
    ls $lib | grep -i cublas | head -4
    nvcc -O2 -std=c++17 -arch=sm_90 -I$inc bench/cublaslt_candidates.cu -L$lib -lcublasLt -lcublas \
      -Xlinker -rpath=$lib -o /tmp/clt >"$out/clt_build.log" 2>&1 || { cat "$out/clt_build.log"; exit 1; }
    # then the products at padded's sizes with 42 % of the token rows padding (libero's padded
    # share), as zeros and as one repeated row: do products of padding run faster?
    CUDA_VISIBLE_DEVICES=0 /tmp/clt ${CANDIDATES:-16} >"$out/cublaslt_candidates.jsonl"
    CUDA_VISIBLE_DEVICES=0 /tmp/clt 1 0.42 15488 >"$out/cublaslt_pad_zeros.jsonl"
    CUDA_VISIBLE_DEVICES=0 /tmp/clt 1 -0.42 15488 >"$out/cublaslt_pad_repeated.jsonl"
    CUDA_VISIBLE_DEVICES=0 /tmp/clt 1 0 15488 >"$out/cublaslt_pad_none.jsonl"
    wc -l "$out"/*.jsonl ;;
  ah)
    # (.deps and .gl carried) does an odd packed token count slow the matrix products (ag's
    # profile: the same products ran 8-9 % slower at 8963 prefix tokens than at 8954)? pi05 varlen
    # libero, batch 16, --warm_shapes, --prefix_multiple 0 and 8 alternating, three pairs per
    # GPU in opposite orders
    build_this ember || exit 1
    for g in 0 1; do
      ( for i in 1 2 3; do
          for m in $([[ $g == 0 ]] && echo 0 8 || echo 8 0); do
            CUDA_VISIBLE_DEVICES=$g taskset -c $((g * 16))-$((g * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
              --stream libero --attention varlen --device cuda --batch_size 16 --warmup 3 --steps 10 --param_dtype bf16 \
              --warm_shapes --prefix_multiple $m >"$out/policy_libero_m${m}_gpu${g}_$i.jsonl" 2>&1
          done
        done ) &
    done
    wait
    python3 bench/policy_summary.py "$out"/policy_libero_m*.jsonl
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
  ag)
    # (.deps and .gl carried) which matrix products run slow: pi05 profiles with the operators'
    # input sizes (--profile_shapes), libero varlen on GPU 0 and libero padded on GPU 1 (bf16
    # parameters, batch 16), summarised by M x K x N with TFLOP/s; returned in all.tgz
    build_this ember || exit 1
    work=/tmp/ember-ag && mkdir -p $work
    for g in 0 1; do
      a=$([[ $g == 0 ]] && echo varlen || echo padded)
      ( CUDA_VISIBLE_DEVICES=$g taskset -c $((g * 16))-$((g * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
          --stream libero --attention $a --device cuda --batch_size 16 --warmup 3 --steps 2 --param_dtype bf16 \
          --profile /tmp/ember-prof-ag --profile_shapes >"$work/policy_libero_$a.jsonl" 2>&1
        python3 bench/trace_summary.py /tmp/ember-prof-ag/pi05_libero_$a.json --steps 2 --top 60 \
          >"$work/profile_libero_$a.txt" 2>&1 ) &
    done
    wait
    tar -czf "$out/all.tgz" -C $work .
    for f in $work/profile_*.txt; do echo "== $f"; sed -n 1,2p "$f"; grep -A25 "matrix products by shape" "$f" | cut -c1-200; done ;;
  af)
    # (a fresh machine, .deps and .gl carried) ad's profiles without its GPU tests, each summary
    # archived as soon as it is written (all.tgz, so a run cut short still returns them): libero
    # varlen then community varlen on GPU 0, libero padded then libero varlen at batch 32 on GPU 1.
    # Where in the step does the host fall behind (host lead by tenth of the step)?
    [[ -x build-gpu/bin/ember ]] || build_this ember || exit 1
    work=/tmp/ember-af && mkdir -p $work
    prof() {  # GPU STREAM ATTENTION BATCH NAME
      CUDA_VISIBLE_DEVICES=$1 taskset -c $(($1 * 16))-$(($1 * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
        --stream "$2" --attention "$3" --device cuda --batch_size "$4" --warmup 3 --steps 4 --param_dtype bf16 \
        --profile "/tmp/ember-prof-af/$5" >"$work/policy_$5.jsonl" 2>&1
      python3 bench/trace_summary.py "/tmp/ember-prof-af/$5/pi05_$2_$3.json" --steps 4 --top 30 >"$work/profile_$5.txt" 2>&1
      flock $work/.lock tar -czf "$out/all.tgz" -C $work --exclude .lock .
    }
    (prof 0 libero varlen 16 libero_varlen; prof 0 community varlen 16 community_varlen) &
    (prof 1 libero padded 16 libero_padded; prof 1 libero varlen 32 libero_varlen_b32) &
    wait
    for f in $work/profile_*.txt; do
      echo "== $f"; sed -n 1,2p "$f"; grep -A11 "host lead" "$f"; grep -A4 "launching operators had run" "$f" | cut -c1-160
    done ;;
  ae)
    # (after ad, or alone) the per-shape hypothesis, as aa did not test it: with 40 warm-up
    # steps every prefix bucket has been seen before the timed steps. pi05 varlen, bf16
    # parameters, batch 16: --prefix_multiple 0, 64, 256, 1024 with --warmup 40, libero on GPU 0
    # and community on GPU 1; 3 warm-up steps plus --warm_shapes (every timed batch's shapes
    # once), varlen and the full bench; 0 with PyTorch's classic allocator (no expandable segments) and
    # with cuBLAS's heuristics cache off; then libero profiles at 256 (GPU 0) and 0 (GPU 1) after
    # 40 warm-up steps, with what the late launching operators did on the host. On a fresh
    # machine it builds first (carry .deps and .gl).
    [[ -x build-gpu/bin/ember ]] || build_this ember || exit 1
    runs() {  # GPU STREAM
      for m in 0 64 256 1024; do
        CUDA_VISIBLE_DEVICES=$1 taskset -c $(($1 * 16))-$(($1 * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
          --stream "$2" --attention varlen --device cuda --batch_size 16 --warmup 40 --steps 10 --param_dtype bf16 \
          --prefix_multiple "$m" >"$out/policy_$2_w40_m$m.jsonl" 2>"$out/policy_$2_w40_m$m.err"
      done
    }
    runs 0 libero & runs 1 community & wait
    # every timed batch's shapes run once before timing (no rounding): varlen alone, then the
    # full bench (varlen and padded: the ratio)
    for g in 0 1; do
      stream=$([[ $g == 0 ]] && echo libero || echo community)
      ( CUDA_VISIBLE_DEVICES=$g taskset -c $((g * 16))-$((g * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
          --stream $stream --attention varlen --device cuda --batch_size 16 --warmup 3 --steps 10 --param_dtype bf16 \
          --warm_shapes >"$out/policy_${stream}_w3_m0_warm_shapes.jsonl" 2>&1
        CUDA_VISIBLE_DEVICES=$g taskset -c $((g * 16))-$((g * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
          --stream $stream --device cuda --batch_size 16 --warmup 3 --steps 10 --param_dtype bf16 \
          --warm_shapes >"$out/policy_full_${stream}_warm_shapes.jsonl" 2>&1 ) &
    done
    wait
    variant() {  # ENV=VALUE NAME: no rounding, both streams, one per GPU, under that environment
      for g in 0 1; do
        stream=$([[ $g == 0 ]] && echo libero || echo community)
        CUDA_VISIBLE_DEVICES=$g taskset -c $((g * 16))-$((g * 16 + 15)) env "$1" build-gpu/bin/ember bench policy \
          --preset pi05 --stream $stream --attention varlen --device cuda --batch_size 16 --warmup 40 --steps 10 \
          --param_dtype bf16 >"$out/policy_${stream}_w40_m0_$2.jsonl" 2>&1 &
      done
      wait
    }
    # the caching allocator's expandable segments map memory as tensors of new sizes arrive
    variant PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False classic_alloc
    # every product asks cuBLAS for its kernel again: a large slowdown says choosing a kernel
    # for a new shape costs as much as the idle gaps
    variant CUBLASLT_HEURISTICS_CACHE_CAPACITY=0 no_heuristics_cache
    python3 bench/policy_summary.py "$out"/policy_*_w40_*.jsonl "$out"/policy_*warm_shapes.jsonl
    for m in 256 0; do  # GPU 0, GPU 1
      g=$([[ $m == 0 ]] && echo 1 || echo 0)
      CUDA_VISIBLE_DEVICES=$g build-gpu/bin/ember bench policy --preset pi05 --stream libero --attention varlen --device cuda \
        --batch_size 16 --warmup 40 --steps 4 --param_dtype bf16 --prefix_multiple $m --profile /tmp/ember-prof-ae-$m \
        >/dev/null 2>&1 &
    done
    wait
    for m in 256 0; do
      f="$out/profile_libero_w40_m$m.txt"
      python3 bench/trace_summary.py /tmp/ember-prof-ae-$m/pi05_libero_varlen.json --steps 4 --top 30 >"$f" 2>&1
      echo "== $f"; sed -n 1,12p "$f"; grep "host lead" "$f"
      grep -A6 "idle gaps" "$f" | cut -c1-160
      grep -A6 "launching operators had run" "$f" | cut -c1-160
    done
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
  ac)
    # (a fresh machine) this build only: pi05's full bench (varlen and padded, bf16 parameters) on
    # libero (GPU 0) and community (GPU 1) at batch 16, then at batch 32 (FIRST_STREAM=community:
    # the other way round); the host's time to queue a step beside the step time. Everything
    # comes back in one archive (all.tgz).
    build_this ember || exit 1
    first=${FIRST_STREAM:-libero}
    second=$([[ $first == libero ]] && echo community || echo libero)
    for b in 16 32; do
      for g in 0 1; do
        stream=$([[ $g == 0 ]] && echo $first || echo $second)
        CUDA_VISIBLE_DEVICES=$g taskset -c $((g * 16))-$((g * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
          --stream $stream --device cuda --batch_size $b --warmup 3 --steps 10 --param_dtype bf16 \
          >"$out/policy_full_${stream}_b$b.jsonl" 2>"$out/policy_full_${stream}_b$b.err" &
      done
      wait
      python3 bench/policy_summary.py "$out"/policy_full_*_b$b.jsonl
    done
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
  ab)
    # (a fresh machine, .prev/base = the previous commit) GPU tests; pi05 varlen with bf16
    # parameters, this build beside the base on libero and community (the GPUs swapped between
    # the two pairs); this build's full bench (varlen and padded) with 3 and 20 warm-up steps;
    # a libero profile. Everything comes back in one archive (all.tgz).
    build_both_and_test || exit 1
    one() {  # BUILD_DIR GPU STREAM ATTENTION WARMUP NAME
      CUDA_VISIBLE_DEVICES=$2 taskset -c $(($2 * 16))-$(($2 * 16 + 15)) "$1/bin/ember" bench policy --preset pi05 \
        --stream "$3" ${4:+--attention $4} --device cuda --batch_size 16 --warmup "$5" --steps 10 \
        --param_dtype "${PARAM_DTYPE:-bf16}" >"$out/policy_$6.jsonl" 2>"$out/policy_$6.err"
    }
    for stream in libero community; do
      one build-gpu 0 $stream varlen 3 pair_after_${stream}_g0 & one .prev/base/build-gpu 1 $stream varlen 3 pair_base_${stream}_g1 & wait
      one build-gpu 1 $stream varlen 3 pair_after_${stream}_g1 & one .prev/base/build-gpu 0 $stream varlen 3 pair_base_${stream}_g0 & wait
    done
    python3 bench/policy_summary.py "$out"/policy_pair_*.jsonl
    for w in 3 20; do
      one build-gpu 0 libero "" $w full_libero_w$w & one build-gpu 1 community "" $w full_community_w$w & wait
    done
    python3 bench/policy_summary.py "$out"/policy_full_*.jsonl
    profile_libero /tmp/ember-prof-ab
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
  aa)
    # (a fresh machine) is the host's time per matrix product cuBLAS choosing kernels for new
    # shapes? pi05 varlen with bf16 parameters, GPU 0 libero, GPU 1 community: the usual 3
    # warm-up steps, then 40 (shapes seen before), then the prefix rounded up to multiples of 64
    # and of 256 tokens (--prefix_multiple: a few shapes only); then a libero profile at 64.
    build_this_and_test || exit 1
    runs() {  # GPU STREAM
      for cfg in "3 0" "40 0" "3 64" "3 256"; do
        set -- "$1" "$2" $cfg
        CUDA_VISIBLE_DEVICES=$1 taskset -c $(($1 * 16))-$(($1 * 16 + 15)) build-gpu/bin/ember bench policy --preset pi05 \
          --stream "$2" --attention varlen --device cuda --batch_size 16 --warmup "$3" --steps 10 --param_dtype bf16 \
          --prefix_multiple "$4" >"$out/policy_$2_w$3_m$4.jsonl" 2>"$out/policy_$2_w$3_m$4.err"
      done
    }
    runs 0 libero & runs 1 community & wait
    python3 bench/policy_summary.py "$out"/policy_*.jsonl
    CUDA_VISIBLE_DEVICES=0 build-gpu/bin/ember bench policy --preset pi05 --stream libero --attention varlen --device cuda \
      --batch_size 16 --warmup 3 --steps 4 --param_dtype bf16 --prefix_multiple 64 --profile /tmp/ember-prof-aa >/dev/null 2>&1
    python3 bench/trace_summary.py /tmp/ember-prof-aa/pi05_libero_varlen.json --steps 4 --top 30 >"$out/profile_libero_m64.txt" 2>&1
    sed -n 1,3p "$out/profile_libero_m64.txt"; grep -A6 "idle gaps" "$out/profile_libero_m64.txt" | cut -c1-160
    grep -A3 "top CPU operators" "$out/profile_libero_m64.txt"
    tar -czf /tmp/all.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/all.tgz "$out/" ;;
esac
