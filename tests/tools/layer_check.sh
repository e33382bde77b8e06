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
  [serve]="core io data kernels model dist train"
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
# one policy seam: above model/ nothing names a concrete policy type (model/policy_type.h registers
# them; the layers above hold PolicyModuleImpl and PolicyArch only)
concrete='Pi05Policy|GrootPolicy|GrootShape|groot_shape|groot_arch|pi05_arch|lerobot_pi05|model/pi05\.h|model/groot\.h|[!=]= "(pi05|groot)"'
for dir in "$src"/ember/{train,dist,eval,rl,sim,serve} "$src"/cli "$src"/bench; do
  [[ -d "$dir" ]] || continue
  if grep -rnE --include='*.h' --include='*.cc' "$concrete" "$dir"; then
    echo "a concrete policy type is named above model/ (above): go through model/policy_type.h"
    bad=1
  fi
done
if ((bad)); then exit 1; fi
echo "layers: no upward include; no concrete policy type above model/"
