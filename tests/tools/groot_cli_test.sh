#!/usr/bin/env bash
# --policy.type=groot through the same commands as pi05: a tiny groot policy is trained on a few
# simulator demonstrations (or, built without the simulator, on the fixture dataset), checkpointed,
# predicts a chunk from the checkpoint alone, is evaluated closed loop, and resumes; bad groot
# flags fail with one line and exit status 2.
set -euo pipefail
ember="$1"
fixture="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { "$@" > "$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; fail "$*"; }; }

data="$fixture"
sim=0
if "$ember" sim collect --task pick_red_into_tray --episodes_per_task 2 --image_size 32 --camera_dtype image \
     --output_dir "$dir/data" > "$dir/collect.txt" 2>&1; then
  data="$dir/data"
  sim=1
elif ! grep -q "without the simulator\|MuJoCo" "$dir/collect.txt"; then
  cat "$dir/collect.txt"; fail "sim collect"
fi

echo "groot cli: data $data (simulator: $sim)"
train=("$ember" train --policy.type=groot --dataset.root="$data" --device=cpu --batch_size=4 --num_workers=1
       --dataset.image_size=32 --log_freq=2 --save_freq=3 --dataset.episodes=[0])
run "${train[@]}" --output_dir="$dir/run" --steps=3
grep -q "policy groot/tiny" "$dir/out.txt" || { cat "$dir/out.txt"; fail "no groot run line"; }
ckpt="$dir/run/checkpoints/latest"
grep -q '"type": "groot"' "$ckpt/policy.json" || fail "policy.json has no type groot"
grep -q '"horizon": 16' "$ckpt/policy.json" || fail "groot's default chunk is not 16"
# the training-only settings are recorded: N1.5's dropout, the frozen backbone
grep -q '"dropout": 0.2' "$ckpt/policy.json" || fail "policy.json does not record the dropout"
grep -q '"tune_backbone": false' "$ckpt/policy.json" || fail "policy.json does not record the frozen backbone"
# resume continues from the checkpoint
run "${train[@]}" --output_dir="$dir/run" --steps=4 --resume=true
grep -q "resuming from" "$dir/out.txt" || { cat "$dir/out.txt"; fail "no resume"; }

run "$ember" predict --checkpoint "$dir/run" --dataset.root "$data" --index 2 --device cpu
grep -qi "pred" "$dir/out.txt" || { cat "$dir/out.txt"; fail "predict printed no chunk"; }

if [[ $sim == 1 ]]; then
  run "$ember" eval --checkpoint "$dir/run" --task pick_red_into_tray --trials 1 --replan_steps 8 --image_size 32 \
      --device cpu --no_videos --output_dir "$dir/eval"
  test -f "$dir/eval/eval.json" || fail "no eval.json"
  grep -q "groot/tiny" "$dir/eval/eval.json" || fail "eval.json does not name the groot policy"
  # --policy.num_steps: the checkpoint sampled with other denoising steps, recorded in eval.json
  run "$ember" eval --checkpoint "$dir/run" --task pick_red_into_tray --trials 1 --replan_steps 8 --image_size 32 \
      --device cpu --no_videos --output_dir "$dir/eval2" --policy.num_steps 2
  grep -q '"flow_steps": 2' "$dir/eval2/eval.json" || fail "eval.json does not record --policy.num_steps"
else
  echo "note: built without MuJoCo; eval --checkpoint not run"
fi

# a GR00T-N1.5 directory (Isaac-GR00T's layout; tests/fixtures/groot_n15_tiny, from LeRobot 0.5.1's
# N1.5 modules): fine-tuned with --policy.path (N1.5's padded widths kept, a tokenizer trained
# on the dataset's tasks), predicted from, exported back in N1.5's layout
n15="$(dirname "$fixture")/groot_n15_tiny"
run "$ember" train --policy.type=groot --policy.path="$n15" --dataset.root="$data" --device=cpu --batch_size=4 --num_workers=1 \
    --log_freq=1 --save_freq=3 --steps=3 --dataset.episodes=[0] --output_dir="$dir/n15run" --policy.embodiment=2
grep -q "initialised from" "$dir/out.txt" || { cat "$dir/out.txt"; fail "the N1.5 run did not start from the directory"; }
grep -q '"padded_heads": true' "$dir/n15run/checkpoints/latest/policy.json" || fail "policy.json does not keep N1.5's padded widths"
grep -q '"embodiment": 2' "$dir/n15run/checkpoints/latest/features.json" || fail "features.json does not record --policy.embodiment"
run "$ember" predict --checkpoint "$dir/n15run" --dataset.root "$data" --index 2 --device cpu
grep -qi "pred" "$dir/out.txt" || { cat "$dir/out.txt"; fail "predict from the N1.5 run printed no chunk"; }
run "$ember" export --checkpoint "$dir/n15run" --to groot_n15 "$dir/n15out"
grep -q '"model_type": "gr00t_n1_5"' "$dir/n15out/config.json" || fail "the export's config.json is not N1.5's"
test -f "$dir/n15out/model.safetensors" || fail "the export wrote no model.safetensors"
# the exported directory is read again as it was written
run "$ember" export --checkpoint "$dir/n15out" --to groot_n15 "$dir/n15out2"
cmp -s "$dir/n15out/model.safetensors" "$dir/n15out2/model.safetensors" || fail "export -> import -> export changed model.safetensors"

# Isaac-GR00T's experiment_cfg/metadata.json: its embodiment tag picks the heads when
# --policy.embodiment is not given (so100: N1.5's projector 2), and the export writes the run's
# statistics back under the same tag
meta="$dir/n15meta"
cp -r "$n15" "$meta"
mkdir -p "$meta/experiment_cfg"
cat > "$meta/experiment_cfg/metadata.json" <<'JSON'
{"so100": {"statistics": {"state": {"joints": {"max": [1, 1], "min": [-1, -1], "mean": [0, 0], "std": [1, 1], "q01": [-1, -1], "q99": [1, 1]}},
                          "action": {"joints": {"max": [1, 1], "min": [-1, -1], "mean": [0, 0], "std": [1, 1], "q01": [-1, -1], "q99": [1, 1]}}},
           "modalities": {"video": {"front": {"resolution": [32, 32], "channels": 3, "fps": 20.0}},
                          "state": {"joints": {"absolute": true, "rotation_type": null, "shape": [2], "continuous": true}},
                          "action": {"joints": {"absolute": true, "rotation_type": null, "shape": [2], "continuous": true}}},
           "embodiment_tag": "so100"}}
JSON
# fine_tune_so100 DIR RUN NOTE: a short fine-tune of DIR into $dir/RUN without --policy.embodiment,
# whose import prints NOTE; the directory's so100 picks the heads (N1.5's projector 2); exported
# to N1.5's layout in $dir/RUN-out
fine_tune_so100() {
  run "$ember" train --policy.type=groot --policy.path="$1" --dataset.root="$data" --device=cpu --batch_size=4 --num_workers=1 \
      --log_freq=1 --save_freq=2 --steps=2 --dataset.episodes=[0] --output_dir="$dir/$2"
  grep -q "$3" "$dir/out.txt" || { cat "$dir/out.txt"; fail "$1: the import did not print '$3'"; }
  grep -q '"embodiment": 2' "$dir/$2/checkpoints/latest/features.json" || fail "$1: so100 did not pick the heads"
  run "$ember" export --checkpoint "$dir/$2" --to groot_n15 "$dir/$2-out"
  grep -q '"model_type": "gr00t_n1_5"' "$dir/$2-out/config.json" || fail "$2: the export is not N1.5's layout"
}
fine_tune_so100 "$meta" metarun "metadata.json's so100 (embodiment 2)"
grep -q '"embodiment_tag": "so100"' "$dir/metarun-out/experiment_cfg/metadata.json" || fail "the export wrote no metadata.json for so100"

# LeRobot 0.5.1's GrootPolicy directory (tests/fixtures/groot_lerobot_tiny: its config names the
# embodiment so100 and the model's base directory)
fine_tune_so100 "$(dirname "$fixture")/groot_lerobot_tiny" lerobotrun "LeRobot's groot policy"

# bad flags: one line, exit status 2
expect_user_error() {
  local what="$1"; shift
  set +e; "$@" > "$dir/err.txt" 2>&1; local rc=$?; set -e
  [[ $rc == 2 ]] || { cat "$dir/err.txt"; fail "$what: exit status $rc, expected 2"; }
  [[ $(wc -l < "$dir/err.txt") == 1 ]] || { cat "$dir/err.txt"; fail "$what: more than one line"; }
}
expect_user_error "unknown type" "$ember" train --policy.type=gr00t --dataset.root="$data" --output_dir="$dir/x"
expect_user_error "pi05 preset for groot" "$ember" train --policy.type=groot --policy.preset=pi05 --dataset.root="$data" --output_dir="$dir/x"
expect_user_error "n15 preset for pi05" "$ember" train --policy.preset=n15 --dataset.root="$data" --output_dir="$dir/x"
expect_user_error "tune_backbone for pi05" "$ember" train --policy.tune_backbone=true --dataset.root="$data" --output_dir="$dir/x"
expect_user_error "resume as another type" "${train[@]}" --policy.type=pi05 --output_dir="$dir/run" --steps=5 --resume=true
expect_user_error "an embodiment the policy lacks" "$ember" train --policy.type=groot --policy.path="$n15" --policy.embodiment=3 \
    --dataset.root="$data" --device=cpu --output_dir="$dir/x"
grep -q -- "--policy.embodiment=3: the policy has embodiments 0..2" "$dir/err.txt" || { cat "$dir/err.txt"; fail "the embodiment error does not name the flag"; }
# Eagle's own tokenizer files (Qwen2/Qwen3's slow layout: vocab.json + merges.txt) are read; one
# with more pieces than the directory's embedding is refused naming the tokenizer
expect_user_error "a tokenizer larger than the embedding" "$ember" train --policy.type=groot --policy.path="$n15" --policy.embodiment=2 \
    --policy.tokenizer_path="$(dirname "$fixture")/bpe_tiny/slow" --dataset.root="$data" --device=cpu --output_dir="$dir/x"
grep -q "bpe_tiny/slow: the tokenizer has 664 pieces, the policy's embedding 512" "$dir/err.txt" || { cat "$dir/err.txt"; fail "the tokenizer error does not name the files"; }
expect_user_error "an embodiment for pi05" "$ember" train --policy.embodiment=1 --dataset.root="$data" --device=cpu --output_dir="$dir/x"
expect_user_error "N1.5 directory as pi05" "$ember" train --policy.path="$n15" --dataset.root="$data" --output_dir="$dir/x"
expect_user_error "export to an unknown format" "$ember" export --checkpoint "$n15" --to gr00t "$dir/x"
expect_user_error "a pi05 checkpoint to groot_n15" "$ember" export --checkpoint "$(dirname "$fixture")/lerobot_pi05_tiny" --to groot_n15 "$dir/x"
expect_user_error "denoising steps for the expert" "$ember" eval --policy expert --policy.num_steps 3 --output_dir "$dir/x"
expect_user_error "bench type" "$ember" bench policy --policy.type=gr00t --preset tiny --device cpu
expect_user_error "bench groot preset" "$ember" bench policy --policy.type=groot --preset pi05 --device cpu
grep -q -- "--preset: expected tiny, small or n15 with --policy.type=groot" "$dir/err.txt" || { cat "$dir/err.txt"; fail "the bench error does not name the flag, the type and its presets"; }
echo "groot cli test passed"
