#!/usr/bin/env bash
# A crash of ember (here: SIGSEGV sent to `ember launch` while it waits on its worker) prints the
# signal and the stack on stderr, then ends by that signal (status 128 + 11), so that a report of
# it can be acted on.
#   crash_report_test.sh EMBER
set -uo pipefail
ember="$1"
d="$(mktemp -d)"
trap 'pkill -P $$ sleep 2>/dev/null; rm -rf "$d"' EXIT
"$ember" launch --nproc_per_node 1 -- sleep 20 2>"$d/err" &
pid=$!
# signalled once its worker runs (the handler is installed first thing in main): not after a fixed
# sleep, which a loaded machine (CI's ctest -j) can outlast before main has run
for ((i = 0; i < 200; ++i)); do
  pgrep -P "$pid" -x sleep >/dev/null && break
  sleep 0.05
done
kill -SEGV "$pid"
wait "$pid"
status=$?
pkill -f "^sleep 20$" 2>/dev/null
head -n 6 "$d/err"
[[ $status == 139 ]] || { echo "expected status 139 (SIGSEGV), got $status"; exit 1; }
grep -q '^ember: fatal signal Segmentation fault; stack:$' "$d/err" || { echo "no crash report on stderr"; exit 1; }
(($(grep -c '(+0x\|\[0x' "$d/err") >= 3)) || { echo "the report holds no stack frames"; exit 1; }
echo "crash report: ok"
