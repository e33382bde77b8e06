#!/usr/bin/env bash
# Runs a shortened `ember demo` (collect -> train -> evaluate) and checks what it leaves behind.
set -euo pipefail
ember="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$ember" demo --output_dir "$dir/run" --steps 200 --episodes 6 --trials 2 --device cpu > "$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; exit 1; }
grep -q "ember demo: done" "$dir/out.txt" || { cat "$dir/out.txt"; echo "FAIL: no closing line"; exit 1; }
ls "$dir/run/train/checkpoints/latest/model.safetensors" > /dev/null
if grep -q "built without the simulator" "$dir/out.txt"; then
  echo "note: built without MuJoCo; the demo trained on the bundled dataset"
else
  test -f "$dir/run/eval/eval.json" || { echo "FAIL: no eval.json"; exit 1; }
  "$ember" data check "$dir/run/data" > /dev/null
fi
# a second run into the same directory is refused, not overwritten
if "$ember" demo --output_dir "$dir/run" --steps 1 > /dev/null 2>&1; then echo "FAIL: reused a non-empty output_dir"; exit 1; fi
tail -3 "$dir/out.txt"
echo "demo test passed"
