#!/usr/bin/env bash
# --jpeg_decoder nvjpeg where libnvjpeg cannot be loaded: `ember bench loader` on shards exits
# with status 2 and a one-line error naming the flag and the reason.
#   nvjpeg_missing.sh EMBER LIBERO_LIKE_TOOL
set -uo pipefail
ember="$1" tool="$2"
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
"$tool" "$d/ds" --episodes 2 --frames 4 --image 32 --tasks 2 >/dev/null || exit 1
"$ember" data pack "$d/ds" "$d/shards" --image_size 32 >/dev/null 2>&1 || exit 1
EMBER_NVJPEG=/nonexistent/libnvjpeg.so "$ember" bench loader "$d/shards" --preset tiny --batch_size 2 --jpeg_decoder nvjpeg 2>"$d/err"
status=$?
cat "$d/err"
[[ $status == 2 ]] || { echo "expected exit status 2, got $status"; exit 1; }
grep -q 'jpeg_decoder=nvjpeg: nvJPEG is not available here (libnvjpeg not found (tried /nonexistent/libnvjpeg.so' "$d/err" ||
  { echo "the error does not name the flag and the reason"; exit 1; }
[[ $(wc -l <"$d/err") == 1 ]] || { echo "expected a one-line error"; exit 1; }
