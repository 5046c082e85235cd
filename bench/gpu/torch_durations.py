#!/usr/bin/env python3
"""Kernel durations measured by PyTorch's profiler, laid over a deepum profile.

    torch_durations.py PROFILE KERNEL_TIMES.json OUT.pb[.gz]

PROFILE is a deepum profile of the program (a `--mode kernels` one is the
natural choice); KERNEL_TIMES.json is what bench/gpu/kernel_times.py wrote
for the same script and arguments, with every launch of its recorded steps
in order ("launches": name, microseconds). The kernels of PROFILE's last
iteration are matched to those launches by name (deepum records mangled
names, PyTorch demangled ones: c++filt demangles ours), in order, by a
longest common subsequence of the two name sequences; each matched kernel's end becomes
its start plus PyTorch's duration. Unmatched kernels keep their own. OUT is
then a profile whose last iteration has the durations the program's kernels
take without deepum's profiler, for `deepum-sim/deepum-plan --compute-from OUT`
(its kernels are PROFILE's, so it matches PROFILE's program).

Prints how many kernels matched and the iteration's kernel time before and
after. Fails, with one line, when the files cannot be read, when the launches
are missing or when fewer than half of the kernels match (not the same
program, or another PyTorch naming).
"""
import gzip
from array import array
import json
import shutil
import subprocess
import sys
from pathlib import Path


def load_profile_module():
    """deepum.v1.profile_pb2 from the build tree (bench/gpu/pb2.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pb2  # noqa: E402
    return pb2.load("profile_pb2")


def demangle(names):
    """Demangled names, in order (c++filt, one name per line)."""
    tool = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if not tool:
        raise RuntimeError("needs c++filt (binutils) or llvm-cxxfilt to demangle kernel names")
    out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    if len(out) != len(names):
        raise RuntimeError(f"{tool} returned {len(out)} names for {len(names)}")
    return out


def read_profile(pb2, path):
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = pb2.Profile()
    p.ParseFromString(data)
    return p


def write_profile(p, path):
    data = p.SerializeToString()
    if str(path).endswith(".gz"):
        data = gzip.compress(data)
    Path(path).write_bytes(data)


def common_subsequence(a, b):
    """Index pairs (i, j) of a longest common subsequence of sequences a and b, in order.

    The whole table of suffix lengths (len(a) + 1 rows of len(b) + 1 ints): an iteration's
    thousand kernels against a few steps' launches is a few million cells."""
    n, m = len(a), len(b)
    rows = [array("i", bytes(4 * (m + 1))) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        here, below, ai = rows[i], rows[i + 1], a[i]
        for j in range(m - 1, -1, -1):
            if ai == b[j]:
                here[j] = below[j + 1] + 1
            else:
                here[j] = below[j] if below[j] >= here[j + 1] else here[j + 1]
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j] and rows[i][j] == rows[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif rows[i + 1][j] >= rows[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def lay_over(p, launches):
    """Sets the matched kernels' durations; returns (matched, kernels, ms before, ms after)."""
    if not p.iterations:
        raise ValueError("the profile has no iteration")
    it = p.iterations[-1]
    first, count = it.first_kernel, it.kernel_count
    if first + count > len(p.kernels):
        raise ValueError("its last iteration lies outside its kernels")
    kernels = [p.kernels[first + j] for j in range(count)]
    ours = demangle([k.name for k in kernels])
    theirs = [name for name, _ in launches]
    before = sum(max(k.end_ns - k.start_ns, 0) for k in kernels) / 1e6
    # Names as small integers: the table compares them a few million times.
    codes = {}
    pairs = common_subsequence([codes.setdefault(x, len(codes)) for x in ours],
                               [codes.setdefault(x, len(codes)) for x in theirs])
    for i, j in pairs:
        kernels[i].end_ns = kernels[i].start_ns + round(launches[j][1] * 1e3)
    matched = len(pairs)
    after = sum(max(k.end_ns - k.start_ns, 0) for k in kernels) / 1e6
    return matched, count, before, after


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    profile_path, times_path, out_path = argv
    try:
        pb2 = load_profile_module()
        p = read_profile(pb2, profile_path)
        windows = json.loads(Path(times_path).read_text()).get("windows") or []
        launches = windows[-1].get("launches") if windows else None
        if not launches:
            raise ValueError(f"{times_path}: no launches recorded (kernel_times.py before "
                             "launches were written, or a run without a GPU)")
        matched, count, before, after = lay_over(p, launches)
        if matched * 2 < count:
            raise ValueError(f"only {matched} of {count} kernels match {times_path}'s launches: "
                             "not the same program, or another naming")
        write_profile(p, out_path)
    except (OSError, ValueError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"torch_durations: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a file that does not parse as a profile  # noqa: BLE001
        print(f"torch_durations: {profile_path}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"torch_durations: {matched} of {count} kernels matched; the iteration's kernels "
          f"{before:.1f} ms -> {after:.1f} ms; wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
