#!/usr/bin/env bash
# A two-rank `ember train` job on Gloo over loopback, each rank started by hand (as srun or
# mpirun would, without `ember launch` to stop the others): once both are training, rank 1 is
#   1. killed (SIGKILL): rank 0 must exit non-zero within the timeout, naming rank 1;
#   2. stopped (SIGSTOP, a stall): rank 0 must exit non-zero after about --dist.timeout_s,
#      naming rank 1.
#
#   dist_kill_test.sh EMBER DATASET_ROOT
set -u
ember="${1:?usage: dist_kill_test.sh EMBER DATASET_ROOT}"
data="${2:?usage: dist_kill_test.sh EMBER DATASET_ROOT}"
tmp="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
timeout_s=5

# starts ranks 0 and 1 of a job writing to $tmp/$1; sets pid0 / pid1
start_job() {
  local name=$1 port=$((20000 + RANDOM % 20000)) r
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$ember" train --dataset.root="$data" \
      --output_dir="$tmp/$name" --device=cpu --steps=100000 --batch_size=2 --policy.horizon=10 --dataset.image_size=32 \
      --num_workers=1 --log_freq=1 --save_freq=1000000 --dataset.episodes=[0] --dist.timeout_s=$timeout_s \
      >"$tmp/$name.$r.log" 2>&1 &
    pids+=($!)
    eval "pid$r=$!"
  done
  # training has started when rank 0 has logged a few steps
  for ((i = 0; i < 300; i++)); do
    [[ -f "$tmp/$name/metrics.jsonl" ]] && (($(wc -l <"$tmp/$name/metrics.jsonl") >= 3)) && return 0
    kill -0 "$pid0" 2>/dev/null || break
    sleep 0.1
  done
  if grep -q "built without video support" "$tmp/$name".*.log; then
    echo "SKIP: ember was built without FFmpeg: the fixture's videos cannot be decoded"
    exit 77
  fi
  echo "FAIL: job $name did not start training"
  cat "$tmp/$name".*.log
  exit 1
}

# waits at most $2 seconds for rank 0 (pid0) to exit; checks it failed naming rank 1
expect_rank0_fails() {
  local name=$1 limit=$2 start=$SECONDS status
  while kill -0 "$pid0" 2>/dev/null && ((SECONDS - start <= limit)); do sleep 0.1; done
  if kill -0 "$pid0" 2>/dev/null; then
    echo "FAIL: $name: rank 0 still running ${limit} s after rank 1 failed"
    cat "$tmp/$name.0.log"
    exit 1
  fi
  wait "$pid0"
  status=$?
  local took=$((SECONDS - start))
  local line
  line="$(grep -m1 'ember train: rank 0:' "$tmp/$name.0.log")"
  echo "$name: rank 0 exited with status $status after ${took} s: $line"
  if ((status == 0)) || ! grep -qE "rank 1 (\(at collective #[0-9]+\) never reached it|stopped responding inside it)" <<<"$line"; then
    echo "FAIL: $name: expected a non-zero exit naming rank 1"
    cat "$tmp/$name.0.log"
    exit 1
  fi
}

start_job killed
kill -KILL "$pid1"
expect_rank0_fails killed $((timeout_s + 5))

start_job stalled
kill -STOP "$pid1"
expect_rank0_fails stalled $((timeout_s + 10))
kill -KILL "$pid1" 2>/dev/null
echo "PASS: a killed and a stalled rank both end the job with an error naming rank 1"
