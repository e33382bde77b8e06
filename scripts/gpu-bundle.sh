#!/usr/bin/env bash
# Bundles the small Debian packages ember builds against, for GPU nodes that have no package
# archive and no -dev headers (DESIGN.md, "GPU machines without a package archive").
# Run on a Debian 12 machine with network; writes .deps/debs/*.deb (git-ignored). Carry that
# folder to the node and run scripts/gpu-unpack.sh there.
# libcurl's own libraries (libssh2, ...) are found through the executables' RPATH only: where the
# node's toolchain writes RUNPATH (the H200 image's does), build with
#   EMBER_CMAKE_EXTRA="-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags" bash bench/gpu_build.sh ...
# (bench/results/shards_h200_2026-12-01.md); `ldd build-gpu/bin/ember | grep curl` shows which.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/.deps/debs"
packages=(
  libsnappy-dev libsnappy1v5
  libzstd-dev libzstd1
  zlib1g-dev zlib1g
  libpng-dev libpng16-16
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev
  libsentencepiece-dev libsentencepiece0  # libsentencepiece0 bundles protobuf-lite: no libprotobuf-lite32
  # the Hugging Face BPE tokenizers' regexes: pcre2.h, the libpcre2-8.so link and libpcre2-8.pc
  # (the node's image has libpcre2-8.so.0; libpcre2-8-0 is carried too, for the link's target)
  libpcre2-dev libpcre2-8-0
  # sim layer: MuJoCo and its four libraries; the glvnd loaders ember dlopens for EGL rendering
  # (the NVIDIA driver's EGL vendor library comes with the node's driver)
  libmujoco-dev libmujoco2.2.2 libccd2 liblodepng0 libqhull-r8.0 libtinyxml2-9
  libegl1 libgl1 libglvnd0 libglx0 libopengl0
  libgloo-dev  # headers only, for libtorch's ProcessGroupGloo.hpp (CPU jobs of several ranks)
  libturbojpeg0-dev libturbojpeg0  # training shards' JPEG frames
  # ember serve: Boost (Beast, Asio) and msgpack-cxx, header-only (nothing to run); libboost1.74-dev
  # is the headers and CMake files themselves (libboost-dev only points at it), about 9.5 MB
  libboost1.74-dev libmsgpack-cxx-dev
  # remote shards (http://, https://, s3://): libcurl and every library it loads beyond glibc,
  # zlib and zstd (the node's image may have none of them; ember's RPATH finds them in the prefix)
  libcurl4-openssl-dev libcurl4 libssl3 libnghttp2-14 libpsl5 librtmp1 libssh2-1 libldap-2.5-0 libbrotli1
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2 libsasl2-2 libsasl2-modules-db
  libdb5.3 libidn2-0 libunistring2 libgnutls30 libhogweed6 libnettle8 libgmp10 libp11-kit0 libtasn1-6 libffi8
  nginx libcrypt1  # tests and bench/shards_bench.sh only: shards served on loopback (nginx needs libpcre2-8-0, above)
)
mkdir -p "$out" /tmp/ember-apt-amd64/partial
# amd64 lists of their own, so this also works from a machine of another architecture
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/ember-apt-amd64)
apt-get "${o[@]}" update -qq
(cd "$out" && rm -f ./*.deb && apt-get "${o[@]}" download "${packages[@]}")
du -sh "$out"
ls "$out"
