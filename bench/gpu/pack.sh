#!/usr/bin/env bash
# Packs what the GPU run needs into .gpu/ (git-ignored), to be carried to a GPU
# machine that has CUDA, CMake and PyTorch but no Debian development packages:
# the tools, libdeepum, the profiler's injection library, the gpu-labelled test
# binaries, the Python package, the examples, and the one shared library the
# binaries need beyond the CUDA toolkit (libprotobuf).
#   bench/gpu/pack.sh [BUILD]   then carry .gpu and run bench/gpu/run.sh there
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
make --no-print-directory build BUILD="$build"
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/tests
cp "$build"/tools/deepum-{inspect,profile,plan,sim} .gpu/bin/
cp -P "$build"/executor/libdeepum.so* .gpu/lib/
cp "$build"/lib/libdeepum_profiler_injection.so .gpu/lib/
cp "$(ldconfig -p | awk '/libprotobuf.so.32 /{print $NF; exit}')" .gpu/lib/
# Every test binary that holds gpu-labelled tests.
(cd "$build" && ctest -L gpu -N -V 2>/dev/null | awk '/Test command:/{print $3}' | sort -u) |
  while read -r exe; do [[ -x "$exe" ]] && cp "$exe" .gpu/tests/; done
cp -r python examples .gpu/
du -sh .gpu
