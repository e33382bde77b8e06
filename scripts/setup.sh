#!/usr/bin/env bash
# Installs what ember needs (Debian packages, a Python venv for the tests) when it is missing,
# then configures and builds. Idempotent: a second run with nothing changed only rebuilds
# what changed. Used by scripts/demo.sh and scripts/test.sh; safe to run by hand.
#
# Environment:
#   EMBER_BUILD_DIR  build directory (default: build/ in the source tree, git-ignored)
#   EMBER_VENV       Python venv for the tests (default: ~/.cache/ember/venv, outside the tree)
#   EMBER_LEROBOT_VENV  Python >= 3.12 venv with LeRobot for the parity checks (default: venv-lerobot beside it)
#   EMBER_GROOT_N15_REF folder for LeRobot 0.5.1's GR00T-N1.5 modules (default: groot-n15-ref beside it)
#   EMBER_OPENPI_VENV   venv with openpi-client for the `ember serve` interoperability test (default: venv-openpi beside it)
#   EMBER_PREFIX     extra CMake prefix (e.g. unpacked GPU-node bundle, see scripts/gpu-unpack.sh)
#   EMBER_NO_APT=1   never call apt-get (machines without a package archive)
#   EMBER_BUILD_TARGET  build only this target (scripts/demo.sh builds only `ember`)
#   EMBER_WITH_LEROBOT=1  also install the LeRobot venv (scripts/test.sh sets it; the demo needs none)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build}"
venv="${EMBER_VENV:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/ember/venv}"
lvenv="${EMBER_LEROBOT_VENV:-$(dirname "$venv")/venv-lerobot}"  # LeRobot, for the parity checks
ovenv="${EMBER_OPENPI_VENV:-$(dirname "$venv")/venv-openpi}"  # openpi's client, for the serve test
gref="${EMBER_GROOT_N15_REF:-$(dirname "$venv")/groot-n15-ref}"  # GR00T-N1.5's reference modules (with the LeRobot venv)

say() { echo "[setup] $*" >&2; }

# --- Debian packages -------------------------------------------------------------------
packages=(
  build-essential cmake ninja-build pkg-config git
  libsnappy-dev libzstd-dev zlib1g-dev libpng-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev
  libsentencepiece-dev
  libpcre2-dev  # the Hugging Face BPE tokenizers' pre-tokenizer regexes (model/bpe_tokenizer.cc)
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
  libmujoco-dev libosmesa6-dev libegl-dev  # sim layer: MuJoCo 2.2.2, OSMesa (CPU) / EGL (GPU) rendering
  python3 python3-venv
  iproute2  # `ip netns` for the two-host launcher test (tests/tools/netns_two_hosts.sh)
  ccache  # rebuilds: CMake uses it where present
  libgloo-dev  # headers only: libtorch's ProcessGroupGloo.hpp includes them; ember links no libgloo
  libturbojpeg0-dev  # training shards' JPEG frames (ember data pack, docs/shards.md)
  libcurl4-openssl-dev  # remote shards (http://, https://, s3://)
  nginx-light  # the remote-shard tests serve shards from a real nginx on loopback
  libssl-dev  # data_s3_test recomputes SigV4 signatures with OpenSSL's HMAC-SHA256
  libboost-dev libmsgpack-cxx-dev  # ember serve: Boost.Beast / Asio and msgpack-cxx, both header-only
  clang libc++-dev libc++abi-dev  # tests/tools/portability_check.py: a second compiler and standard library
)
if [[ "${EMBER_NO_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]})); then
    say "installing Debian packages: ${missing[*]}"
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
fi

# --- Python venv for the interoperability tests -----------------------------------------
python_for_tests=""
if [[ "${EMBER_NO_VENV:-0}" == 1 ]]; then
  python_for_tests="$(command -v python3 || true)"
else
  req="$root/scripts/requirements-test.txt"
  stamp="$venv/.ember-requirements"
  if [[ ! -x "$venv/bin/python3" ]]; then
    say "creating Python venv at $venv"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
  fi
  if ! cmp -s "$req" "$stamp"; then
    say "installing Python test packages into $venv"
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$req" >&2
    cp "$req" "$stamp"
  fi
  # libtorch comes with the torch wheel (DESIGN.md); ember runs no Python, the wheel only
  # carries the C++ libraries. Large (about 4 GB with its CUDA libraries): installed once.
  treq="$root/scripts/requirements-torch.txt"
  tstamp="$venv/.ember-torch"
  if ! cmp -s "$treq" "$tstamp"; then
    say "installing libtorch (the torch wheel) into $venv; this downloads a few GB once"
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$treq" >&2
    cp "$treq" "$tstamp"
  fi
  python_for_tests="$venv/bin/python3"

  # openpi's own client (tests/python/test_serve_openpi.py drives `ember serve` with it): a venv
  # of its own, as openpi-client 0.1.2 needs numpy < 2 and the test venv pins numpy 2. Small.
  # Only for the tests (scripts/test.sh sets EMBER_WITH_LEROBOT=1 for its extras; the demo needs none).
  oreq="$root/scripts/requirements-openpi.txt"
  if [[ "${EMBER_WITH_LEROBOT:-0}" == 1 ]] && ! cmp -s "$oreq" "$ovenv/.ember-requirements"; then
    say "installing openpi-client into $ovenv"
    if { [[ -x "$ovenv/bin/python" ]] || /usr/bin/python3 -m venv "$ovenv"; } &&
      "$ovenv/bin/python" -m pip install -q --disable-pip-version-check -r "$oreq" >&2; then
      cp "$oreq" "$ovenv/.ember-requirements"
    else
      say "openpi-client did not install: the serve interoperability test will be skipped (it says so)"
    fi
  fi

  # LeRobot 0.6.1 (for the pi0.5 parity and export checks, tests/python/test_lerobot_pi05.py)
  # needs Python >= 3.12: the project's machines have one under pyenv, a plain Debian 12 has
  # not. Where none is found, or the install fails, the test prints "skipped: <reason>".
  lreq="$root/scripts/requirements-lerobot.txt"
  py312=""
  if [[ "${EMBER_WITH_LEROBOT:-0}" == 1 ]]; then
    for p in python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
      if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
        py312="$(command -v "$p")"
        break
      fi
    done
    if [[ -z "$py312" ]]; then
      say "no Python >= 3.12 found: the LeRobot parity checks will be skipped (they say so)"
    elif ! cmp -s "$lreq" "$lvenv/.ember-requirements"; then
      say "installing LeRobot into $lvenv (Python $("$py312" -c 'import platform; print(platform.python_version())'); a few GB once)"
      if [[ -x "$lvenv/bin/python" ]] || "$py312" -m venv "$lvenv"; then
        if "$lvenv/bin/python" -m pip install -q --disable-pip-version-check -r "$lreq" >&2; then
          cp "$lreq" "$lvenv/.ember-requirements"
        else
          say "LeRobot did not install: the LeRobot parity checks will be skipped (they say so)"
        fi
      fi
    fi
    # GR00T-N1.5's reference modules (LeRobot 0.5.1 and diffusers, without their dependencies:
    # the venv above has torch and transformers) for the N1.5 export check (tests/python/test_groot_n15.py)
    greq="$root/scripts/requirements-groot-n15.txt"
    if [[ -x "$lvenv/bin/python" ]] && ! cmp -s "$greq" "$gref/.ember-requirements"; then
      say "installing GR00T-N1.5's reference modules into $gref"
      rm -rf "$gref"
      if "$lvenv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$gref" -r "$greq" >&2; then
        cp "$greq" "$gref/.ember-requirements"
      else
        say "GR00T-N1.5's reference modules did not install: the N1.5 export check will be skipped (it says so)"
      fi
    fi
  fi
fi

# --- configure and build ------------------------------------------------------------------
cmake_args=(-G Ninja -DEMBER_PYTHON="$python_for_tests" -DEMBER_LEROBOT_PYTHON="$lvenv/bin/python" -DEMBER_OPENPI_PYTHON="$ovenv/bin/python"
            -DEMBER_GROOT_N15_REF="$gref")
[[ -n "${EMBER_PREFIX:-}" ]] && cmake_args+=(-DCMAKE_PREFIX_PATH="$EMBER_PREFIX")
if [[ ! -f "$build/CMakeCache.txt" ]] || ! grep -q "^EMBER_PYTHON:FILEPATH=$python_for_tests\$" "$build/CMakeCache.txt"; then
  say "configuring $build"
  cmake -S "$root" -B "$build" "${cmake_args[@]}" >&2
fi
say "building ${EMBER_BUILD_TARGET:-everything}"
cmake --build "$build" ${EMBER_BUILD_TARGET:+--target "$EMBER_BUILD_TARGET"} -- -j"$(nproc)" >&2
