#!/usr/bin/env python3
"""The stand-in's libraries against the installed CUDA toolkit's.

Each stand-in library must export every function its installed counterpart
exports, under the same symbol version (libcudart.so.13 and libcupti.so.13
version their symbols; libcuda.so.1 does not). Prints, per library, how many
functions the stand-in models (strong definitions) and how many answer "not
supported" (the weak stubs of standin/tools/stubs.py); docs/standin.md quotes
these lines.

usage: check_exports.py NM INSTALLED STAND_IN [INSTALLED STAND_IN ...]
"""
import subprocess
import sys


def functions(nm, library):
    """name -> (binding letter, version or '') of the defined functions."""
    out = subprocess.run([nm, "-D", "--defined-only", library], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{library}: nm failed: {out.stderr.strip()}")
    result = {}
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) != 3 or fields[1] not in "TW":
            continue
        name, _, version = fields[2].partition("@")
        result[name] = (fields[1], version.lstrip("@"))
    return result


def main(nm, pairs):
    failures = 0
    for installed, standin in pairs:
        theirs, ours = functions(nm, installed), functions(nm, standin)
        missing = sorted(set(theirs) - set(ours))
        versions = sorted(n for n in theirs if n in ours and ours[n][1] != theirs[n][1])
        for n in missing:
            print(f"FAIL: {standin}: {n} is exported by {installed} but not by the stand-in")
        for n in versions:
            print(f"FAIL: {standin}: {n} has version '{ours[n][1]}', {installed} has "
                  f"'{theirs[n][1]}'")
        failures += len(missing) + len(versions)
        modelled = sum(1 for n in theirs if n in ours and ours[n][0] == "T")
        name = standin.rsplit("/", 1)[-1]
        print(f"{name}: {len(theirs)} functions exported as by the toolkit, {modelled} modelled, "
              f"{len(theirs) - modelled} not supported")
    return 1 if failures else 0


if __name__ == "__main__":
    args = sys.argv[2:]
    if len(sys.argv) < 4 or len(args) % 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], list(zip(args[0::2], args[1::2]))))
