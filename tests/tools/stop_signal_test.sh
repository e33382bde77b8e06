#!/usr/bin/env bash
# SIGINT (Ctrl-C) and SIGTERM (`timeout`) sent to a running `ember train` / `ember rl` as a
# terminal or GNU `timeout` sends them (Ctrl-C: once, to the process group; `timeout`: to the
# command, then to its process group, microseconds apart): the command finishes the step under
# way, saves it (and, for rl, evaluates it), says so, and ends with status 128 + signal;
# `--resume` goes on from that step. The rl run renders through processes of its own
# (--rl.render_layout process), which must outlive the signal until the step is saved.
#   stop_signal_test.sh EMBER FIXTURE_DATASET
set -uo pipefail
ember="$1"
fixture="$2"
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# stop_run NAME SIGNAL MIN_LINES FILE -- COMMAND...: COMMAND in a process group of its own,
# signalled once FILE has MIN_LINES lines: as a group, or where SEND=timeout as `timeout` does,
# the command and then its group (the group's copy sent once the command has taken the first:
# the order in which a second copy used to end it at once); sets `status`
stop_run() {
  local name=$1 sig=$2 lines=$3 file=$4
  shift 5
  setsid "$@" >"$d/$name.out" 2>"$d/$name.err" &
  local pid=$!
  for ((i = 0; i < 600; ++i)); do
    (($(cat "$file" 2>/dev/null | wc -l) >= lines)) && break
    kill -0 "$pid" 2>/dev/null || { cat "$d/$name.out" "$d/$name.err"; fail "$name ended before the signal"; }
    sleep 0.1
  done
  if [[ "${SEND:-group}" == timeout ]]; then
    kill -"$sig" "$pid"
    for ((i = 0; i < 50; ++i)); do
      grep -q "stopping after this step" "$d/$name.err" && break
      sleep 0.01
    done
  fi
  kill -"$sig" -- -"$pid"
  wait "$pid"
  status=$?
  cat "$d/$name.out"
  tail -n 2 "$d/$name.err"
  pgrep -g "$pid" >/dev/null && { pkill -9 -g "$pid"; fail "$name left processes of its group running"; }
  return 0
}

# the checkpoint the stop line names, and the step it says
check_stop_line() {
  local name=$1 command=$2 signal=$3
  line="$(grep "^$command: stopped by $signal after step " "$d/$name.out")" || fail "$name: no stop line"
  step="$(sed -E 's/.* after step ([0-9]+);.*/\1/' <<<"$line")"
  ckpt="$(sed -E 's/.*; checkpoint ([^ ]+) .*/\1/' <<<"$line")"
  [[ "$ckpt" == */checkpoints/$(printf %06d "$step") ]] || fail "$name: checkpoint $ckpt is not step $step's"
  [[ -f "$ckpt/COMPLETE" ]] || fail "$name: $ckpt is not complete"
}

# ember train, Ctrl-C
train=("$ember" train --dataset.root="$fixture" --device=cpu --policy.preset=tiny --batch_size=2 --num_workers=1
       --dataset.image_size=32 --log_freq=1 --save_freq=100000 --output_dir="$d/train")
stop_run train INT 3 "$d/train/metrics.jsonl" -- "${train[@]}" --steps=100000
((status == 130)) || fail "ember train: status $status, expected 130 (SIGINT)"
check_stop_line train "ember train" SIGINT
last="$(tail -n 1 "$d/train/metrics.jsonl")"
[[ "$last" == "{\"step\":$step,"* ]] || fail "ember train: the last metrics line is not step $step's: $last"
"${train[@]}" --steps=$((step + 2)) --resume=true >"$d/resume.out" 2>&1 || { cat "$d/resume.out"; fail "ember train --resume"; }
grep -q "^trained to step $((step + 2)); checkpoint" "$d/resume.out" || { cat "$d/resume.out"; fail "ember train: resume did not go on"; }
echo "ember train: stopped by SIGINT after step $step, saved, resumed: ok"

# ember rl, SIGTERM as `timeout` sends it
if ! "$ember" rl 2>&1 | grep -q "without the simulator"; then
  rl=("$ember" rl --policy.preset tiny --output_dir "$d/rl" --suite easy --device cpu --rl.render_layout process
      --rl.env_workers 2 --rl.envs_per_worker 2 --rl.groups_per_step 2 --rl.group_size 2 --rl.max_episode_steps 16
      --eval_freq 1000 --eval.trials 1 --eval.n_envs 2)
  SEND=timeout stop_run rl TERM 1 "$d/rl/metrics.jsonl" -- "${rl[@]}" --rl.iterations 1000
  ((status == 143)) || fail "ember rl: status $status, expected 143 (SIGTERM)"
  check_stop_line rl "ember rl" SIGTERM
  [[ "$(tail -n 1 "$d/rl/metrics.jsonl")" == "{\"step\":$step,"* ]] || fail "ember rl: the last metrics line is not step $step's"
  [[ "$(tail -n 1 "$d/rl/eval.jsonl")" == "{\"step\":$step,"* ]] || fail "ember rl: step $step was not evaluated"
  "${rl[@]}" --rl.iterations $((step + 1)) --resume >"$d/rl_resume.out" 2>&1 || { cat "$d/rl_resume.out"; fail "ember rl --resume"; }
  grep -q "^ember rl: $((step + 1)) steps" "$d/rl_resume.out" || { cat "$d/rl_resume.out"; fail "ember rl: resume did not go on"; }
  echo "ember rl: stopped by SIGTERM after step $step, evaluated, saved, resumed: ok"
else
  echo "ember rl: skipped, this ember was built without the simulator"
fi
