#!/usr/bin/env bash
# Quick start, tests: installs what is missing, builds, and runs the whole test suite (CTest).
# Extra arguments go to ctest, e.g. `scripts/test.sh -R parquet`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EMBER_WITH_LEROBOT=1 "$root/scripts/setup.sh"
cd "${EMBER_BUILD_DIR:-$root/build}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
ctest --output-on-failure -j"$(nproc)" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# CTest does not show a skipped test's output: print why each one skipped
if grep -q "(Skipped)" "$log"; then
  echo "Why tests were skipped:"
  # (a parameterised test's line has "# GetParam() = ..." between its name and "(Skipped)")
  grep -oE "[0-9]+ - [^ ]+ .*\(Skipped\)" "$log" | sed -E 's/^[0-9]+ - ([^ ]+) .*/\1/' | while read -r name; do
    reason="$(ctest -R "^${name}( |\$)" -V 2>/dev/null | grep -A1 -E ": Skipped$" | tail -n 1 | sed -E 's/^[0-9]+: //')"
    echo "  $name: ${reason:-(no reason printed)}"
  done
fi
exit "$rc"
