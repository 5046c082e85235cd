#!/usr/bin/env bash
# Builds the GPU run's bundle: a Release build of only what the GPU machine
# runs, stripped, laid out to be carried and run from anywhere.
#   bench/gpu/pack.sh     (again: an incremental build, the bundle copied afresh)
#   DEEPUM_GPU_BUILD   build directory (default build-gpu; ccache when installed)
#   DEEPUM_GPU_BUNDLE  bundle directory (default .gpu)
# The bundle:
#   bin/     deepum-profile, deepum-plan, deepum-sim, deepum-inspect, deepum-calibrate
#   lib/     libdeepum.so, libdeepum_profiler_injection.so, libprotobuf
#   lib/cupti/libcupti.so.N   the build's CUPTI, used only when the machine has none
#   lib/cudart/libcudart.so.N the build's CUDA runtime for deepum-calibrate, likewise
#   tests/   the gpu-labelled test binaries and their workload
#   python/deepum, examples/, profiles/ (one shipped profile), bench/gpu/run.sh
# It fails when the bundle is over its budget (the device machine takes 64 MiB
# with the working tree; DEEPUM_GPU_BUNDLE_LIMIT_MIB, default 48) or when a
# binary holds the build or source directory's path (bench/gpu/relocation.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build="${DEEPUM_GPU_BUILD:-build-gpu}"
bundle="${DEEPUM_GPU_BUNDLE:-.gpu}"
limit_mib="${DEEPUM_GPU_BUNDLE_LIMIT_MIB:-48}"
targets=(deepum-profile deepum-plan deepum-sim deepum-inspect deepum_calibrate deepum
  deepum_profiler_injection executor_gpu_test executor_conformance_cuda_test profiler_gpu_test
  profiler_gpu_workload)

mkdir -p "$build"
build_abs=$(cd "$build" && pwd)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so another checkout's cache hits.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
fi
if [[ ! -f $build/build.ninja ]]; then
  # __FILE__ (gtest, protobuf) names files relative to the checkout and build.
  prefix="-ffile-prefix-map=$root/=./ -ffile-prefix-map=$build_abs/=./"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DCMAKE_C_FLAGS="$prefix" -DCMAKE_CXX_FLAGS="$prefix" \
    -DDEEPUM_RELOCATABLE=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
    -DDEEPUM_BUILD_BENCH=OFF -DDEEPUM_BUILD_FUZZ=OFF -DDEEPUM_BUILD_STANDIN=OFF >/dev/null
fi
cmake --build "$build" --target "${targets[@]}" -- -j "$(nproc)"
rm -rf "$bundle"
mkdir -p "$bundle"/{bin,lib/cupti,lib/cudart,tests,profiles,bench/gpu}
cp "$build"/tools/deepum-{profile,plan,sim,inspect,calibrate} "$bundle/bin/"
cp -P "$build"/executor/libdeepum.so* "$bundle/lib/"
cp "$build"/lib/libdeepum_profiler_injection.so "$bundle/lib/"
cp "$build"/tests/executor/executor_gpu_test "$build"/tests/executor/executor_conformance_cuda_test \
  "$build"/tests/profiler/profiler_gpu_test \
  "$build"/tests/profiler/profiler_gpu_workload "$bundle/tests/"
# Shared libraries the binaries need beyond CUDA and the C/C++ runtime.
ldd "$bundle"/bin/* "$bundle"/lib/*.so "$bundle"/tests/* 2>/dev/null |
  awk '$1 ~ /^libprotobuf/ && $3 ~ /^\// {print $3}' | sort -u |
  while read -r so; do cp -L "$so" "$bundle/lib/"; done
cupti=$(ldd "$bundle/lib/libdeepum_profiler_injection.so" | awk '$1 ~ /^libcupti/ {print $3}')
[[ -n $cupti && -f $cupti ]] && cp -L "$cupti" "$bundle/lib/cupti/"
cudart=$(ldd "$bundle/bin/deepum-calibrate" | awk '$1 ~ /^libcudart/ {print $3}')
[[ -n $cudart && -f $cudart ]] && cp -L "$cudart" "$bundle/lib/cudart/"
strip --strip-unneeded "$bundle"/bin/* "$bundle"/lib/*.so* "$bundle"/tests/*
mkdir -p "$bundle/python"
cp -r python/deepum "$bundle/python/"
mkdir -p "$bundle/python/tests"
cp python/tests/gpu_pytorch.py "$bundle/python/tests/"
find "$bundle/python" -name __pycache__ -prune -exec rm -rf {} +
cp -r examples "$bundle/"
cp tests/data/resnet50.profile.pb.gz "$bundle/profiles/"
cp bench/gpu/run.sh bench/gpu/relocation.sh bench/gpu/energy.py bench/gpu/kernel_times.py \
  bench/gpu/alternatives.py bench/gpu/lease_summary.py "$bundle/bench/gpu/"
(cd "$bundle" && find . -type f ! -name MANIFEST | sort | xargs sha256sum > MANIFEST)
bash bench/gpu/relocation.sh "$bundle" "$build_abs" "$root"
bytes=$(du -sb "$bundle" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')
echo "pack: bundle $bundle: $mib MiB ($bytes bytes) in $(find "$bundle" -type f | wc -l) files"
# The oldest C and C++ runtimes the GPU machine may have.
echo "pack: needs $(find "$bundle"/bin "$bundle"/lib "$bundle"/tests -type f -exec objdump -T {} + \
  2>/dev/null | grep -o 'GLIBC_[0-9.]*\|GLIBCXX_[0-9.]*' | sort -uV | awk -F_ '
  {v[$1] = $2} END {printf "glibc >= %s, libstdc++ GLIBCXX >= %s", v["GLIBC"], v["GLIBCXX"]}')"
if ((bytes > limit_mib * 1048576)); then
  echo "pack: $bundle is over its $limit_mib MiB budget" >&2
  exit 1
fi
