#!/usr/bin/env bash
# Installs the Debian packages deepum builds and tests with, when missing.
# The CUDA toolkit (nvcc, CUPTI) is looked for here, not installed: without it
# only the CUDA-free parts are built (DEEPUM_CUDA in cmake/DeepumDependencies.cmake).
set -euo pipefail

packages=(
  cmake ninja-build g++ make
  # CI (.ci/run) shares compiles between its builds through it.
  ccache
  protobuf-compiler libprotobuf-dev zlib1g-dev
  llvm-dev
  # Clang builds: make fuzz (libFuzzer) and the sanitizer stages of .ci/run.
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-protobuf python3-torch python3-torchvision python3-matplotlib
  # pip install . (pyproject.toml) into a virtual environment.
  python3-pip python3-venv
  # make results: the planner's instructions per block use (bench/plan/results.sh).
  valgrind
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "setup: missing packages ${missing[*]} and not root; install them with apt-get" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
if [[ ! -e "$cuda_root/include/cupti.h" && ! -e "$cuda_root/extras/CUPTI/include/cupti.h" ]]; then
  # Not fatal: the CUDA-free parts build and test without it (README, "What needs what").
  echo "setup: the CUDA toolkit with CUPTI was not found at $cuda_root (set CUDAToolkit_ROOT" \
       "if it is elsewhere); building without libdeepum.so, deepum-profile and the stand-in" >&2
fi
