#!/usr/bin/env python3
"""ctypes.CDLL (dlopen with RTLD_NOW) of a library that references every
function of libcudart.so.13, libcuda.so.1 and libcupti.so.13, with the
stand-in first on LD_LIBRARY_PATH: it loads, the libraries it got are the
stand-in's, and a function the stand-in does not model answers "not
supported" with one line on standard error, however often it is called.

usage: load_everything.py LIBRARY STAND_IN_DIR
"""
import ctypes
import os
import subprocess
import sys

CUDA_ERROR_NOT_SUPPORTED = 801  # cudaErrorNotSupported has the same value


def child(library, standin_dir):
    lib = ctypes.CDLL(library)
    count = ctypes.c_ulong.in_dll(lib, "deepum_every_cuda_function_count").value
    maps = open("/proc/self/maps", encoding="utf-8").read()
    for soname in ("libcudart.so.13", "libcuda.so.1", "libcupti.so.13"):
        if f"{standin_dir}/{soname}" not in maps:
            print(f"FAIL: {soname} was not loaded from {standin_dir}")
            return 1
    cudart = ctypes.CDLL("libcudart.so.13")
    # cudaArrayGetInfo: CUDA arrays are not modelled.
    codes = [cudart.cudaArrayGetInfo(None, None, None, None) for _ in range(3)]
    cuda = ctypes.CDLL("libcuda.so.1")
    codes.append(cuda.cuArrayCreate_v2(None, None))
    print(f"loaded {library}: {count} functions resolved; codes {codes}", flush=True)
    return 0 if codes == [CUDA_ERROR_NOT_SUPPORTED] * 4 else 1


def main(library, standin_dir):
    if os.environ.get("DEEPUM_LOAD_EVERYTHING_CHILD"):
        return child(library, standin_dir)
    env = dict(os.environ, LD_LIBRARY_PATH=standin_dir, DEEPUM_LOAD_EVERYTHING_CHILD="1")
    run = subprocess.run([sys.executable, __file__, library, standin_dir], env=env,
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stdout.write(run.stderr)
    if run.returncode != 0:
        print(f"FAIL: exit {run.returncode}")
        return 1
    expected = ["CUDA stand-in: cudaArrayGetInfo is not modelled; it returns cudaErrorNotSupported",
                "CUDA stand-in: cuArrayCreate_v2 is not modelled; it returns "
                "CUDA_ERROR_NOT_SUPPORTED"]
    lines = [l for l in run.stderr.splitlines() if l.startswith("CUDA stand-in:")]
    if lines != expected:
        print(f"FAIL: standard error said {lines}, expected {expected}")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
