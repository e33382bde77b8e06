#!/usr/bin/env bash
# `ember bench sim` through the CLI: a bad --layout is one line naming the flag (exit 2); with
# OSMesa, every layout asked for gives its JSON line (skips, exit 77, where OSMesa is missing).
#   bench_sim_cli_test.sh EMBER
set -u
ember="$1"
fail() { echo "bench_sim_cli_test: $*" >&2; exit 1; }
err="$("$ember" bench sim --renderer none --layout bogus 2>&1 >/dev/null)"
rc=$?
((rc == 2)) || fail "--layout bogus: exit $rc, expected 2"
[[ "$err" == "ember: error: --layout: unknown layout 'bogus'"* ]] || fail "--layout bogus said: $err"
(($(wc -l <<<"$err") == 1)) || fail "--layout bogus: more than one line: $err"
out="$("$ember" bench sim --renderer osmesa --n_envs 2 --threads 2 --image_size 32 --seconds 0.2 \
  --layout thread_per_view --layout process 2>&1)"
rc=$?
if ((rc != 0)); then
  grep -qi "osmesa" <<<"$out" && { echo "skipped: $out"; exit 77; }
  fail "bench sim failed (exit $rc): $out"
fi
(($(grep -c '"env_steps_per_s"' <<<"$out") == 3)) || fail "expected 3 results: $out"
for l in none thread_per_view process; do grep -q "\"layout\": \"$l\"" <<<"$out" || fail "no $l result: $out"; done
echo "bench sim: 3 layouts measured, bad --layout refused"
