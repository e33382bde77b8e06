#!/usr/bin/env bash
# Fails when a file includes a layer it may not depend on: dependencies point down the list of
# layers (README, "Source layout") and never up or sideways.
set -euo pipefail
src="${1:?usage: layer_check.sh SRC_DIR}"
declare -A allowed=(
  [core]=""
  [io]="core"
  [data]="core io"
  [kernels]="core"
  [model]="core io data kernels"
  [dist]="core"
  [train]="core io data kernels model dist"
  [sim]="core io data"
  [eval]="core io data kernels model dist train sim"
  [rl]="core io data kernels model dist train sim eval"
)
bad=0
for layer in "${!allowed[@]}"; do
  [[ -d "$src/ember/$layer" ]] || continue
  while IFS= read -r line; do
    file="${line%%:*}"
    dep="$(sed -E 's/.*#include "ember\/([a-z_]+)\/.*/\1/' <<<"$line")"
    [[ "$dep" == "$layer" ]] && continue
    if [[ " ${allowed[$layer]} " != *" $dep "* ]]; then
      echo "upward include: $file includes ember/$dep/ (layer $layer may use: ${allowed[$layer]:-nothing})"
      bad=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cc' --include='*.cu' --include='*.cuh' '#include "ember/' "$src/ember/$layer" || true)
  # no layer includes the benchmarks or the command line
  if grep -rln --include='*.h' --include='*.cc' -E '#include "(bench|cli)/' "$src/ember/$layer"; then bad=1; fi
done
if ((bad)); then exit 1; fi
echo "layers: no upward include"
