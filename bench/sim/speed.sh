#!/usr/bin/env bash
# deepum-sim --compare's wall time and peak memory on a shipped profile
# widened 1, 2, 4, ... times (bench/sim/WidenProfile.cpp: every kernel and
# allocation N times, each copy on its own data), so that work growing faster
# than the profile shows as CPU time per launch rising along the series.
# Figures: docs/results/sim-speed.md.
#
#   bench/sim/speed.sh [BUILD_DIR [PROFILE [COPIES...]]]
#     default: build tests/data/resnet50.profile.pb.gz 1 2 4 8 16
#   DEEPUM_SIM=path/to/deepum-sim times another build's tool on the same files.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
profile="${2:-$root/tests/data/resnet50.profile.pb.gz}"
shift $(($# > 2 ? 2 : $#))
copies=("$@")
[[ ${#copies[@]} -gt 0 ]] || copies=(1 2 4 8 16)
cmake --build "$build" --target deepum-sim deepum-sim-widen >/dev/null
sim="${DEEPUM_SIM:-$build/tools/deepum-sim}"
if [[ ! -x /usr/bin/time ]]; then
  echo "speed.sh: /usr/bin/time is missing (apt-get install time)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "| copies | kernels / iteration | footprint (GiB) | wall (s) | user CPU (s) | peak RSS (MiB) | user CPU ms per launch |"
echo "|---|---|---|---|---|---|---|"
for n in "${copies[@]}"; do
  wide="$work/x$n.profile.pb"
  "$build/bench/deepum-sim-widen" "$profile" --copies "$n" -o "$wide"
  /usr/bin/time -v -o "$work/time.txt" "$sim" "$wide" --compare --check --oversubscription 2 \
    --json --quiet >"$work/x$n.json"
  /usr/bin/python3 - "$n" "$work/x$n.json" "$work/time.txt" <<'PY'
import json
import sys

n, results, timing = sys.argv[1], json.load(open(sys.argv[2])), open(sys.argv[3]).read()


def field(name):
    line = next(l for l in timing.splitlines() if l.strip().startswith(name))
    return line.split(": ", 1)[1].strip()


wall = field("Elapsed (wall clock) time")
seconds = 0.0
for part in wall.split(":"):
    seconds = seconds * 60 + float(part)
user = float(field("User time (seconds)"))
rss_mib = int(field("Maximum resident set size (kbytes)")) / 1024
first = results[0]
kernels = first["kernels_per_iteration"]
footprint = first["footprint_bytes"] / 2**30
print(f"| {n} | {kernels} | {footprint:.1f} | {seconds:.1f} | {user:.1f} | {rss_mib:.0f} | "
      f"{user * 1e3 / kernels:.3f} |")
PY
done
