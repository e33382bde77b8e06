#!/bin/bash
# On the GPU node: the glvnd loaders for EGL rendering (sim), the .gl/*.deb files carried there,
# unpacked over / as the device README says (the one exception to "into a prefix"); nothing to do
# where none were carried. Used by bench/gpu_build.sh and bench/node_wrap.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
compgen -G "$root/.gl/*.deb" >/dev/null || exit 0
for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
ldconfig
