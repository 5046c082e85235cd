#!/usr/bin/env bash
# Configures and builds the fuzz targets with Clang, libFuzzer, ASan and UBSan.
#   bash fuzz/build.sh BUILD_DIR [extra cmake arguments...]
# (make fuzz passes FUZZ_CMAKE_FLAGS, e.g. a compiler launcher.)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: fuzz/build.sh BUILD_DIR [cmake arguments...]}
shift
# -O1 with line tables: fast enough to fuzz, readable stack traces; asserts on.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DDEEPUM_FUZZ_ENGINE=libfuzzer -DDEEPUM_SANITIZE=address,undefined \
  -DDEEPUM_BUILD_TESTS=OFF -DDEEPUM_BUILD_BENCH=OFF -DDEEPUM_BUILD_FUZZ=ON "$@" >/dev/null
cmake --build "$build" --target $(bash fuzz/targets.sh)
