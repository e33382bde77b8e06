#!/usr/bin/env bash
# Quick start, main job: installs what is missing, builds, and runs `ember demo`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EMBER_BUILD_TARGET=ember "$root/scripts/setup.sh"
exec "${EMBER_BUILD_DIR:-$root/build}/bin/ember" demo "$@"
