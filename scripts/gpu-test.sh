#!/usr/bin/env bash
# On a GPU node without a package archive: unpack the carried bundle, build against it and
# the node's own Python (pyarrow, and later PyTorch's libtorch), and run the tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$("$root/scripts/gpu-unpack.sh" "${EMBER_DEPS_DIR:-/tmp/ember-deps}")"
export EMBER_PREFIX="$prefix" EMBER_NO_APT=1 EMBER_NO_VENV=1
export EMBER_BUILD_DIR="${EMBER_BUILD_DIR:-$root/build-gpu}"
exec "$root/scripts/test.sh" "$@"
