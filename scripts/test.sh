#!/usr/bin/env bash
# Quick start, tests: installs what is missing, builds, and runs the whole test suite (CTest).
# Extra arguments go to ctest, e.g. `scripts/test.sh -R parquet`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
cd "${EMBER_BUILD_DIR:-$root/build}"
exec ctest --output-on-failure -j"$(nproc)" "$@"
