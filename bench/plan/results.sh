#!/usr/bin/env bash
# Regenerates docs/results/plan.md, plan.csv and plan.png: deepum-plan beside
# deepum-sim's baselines for every shipped model x ratio x device, the pool
# layout per model, and the planner's speed on repeated real profiles.
#   bash bench/plan/results.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
cmake --build "$build" --target deepum-plan deepum-plan-results deepum-plan-speed >/dev/null
out=docs/results
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bench/deepum-plan-results" --data tests/data --md "$work/table.md" --csv "$out/plan.csv" \
  >/dev/null
# Planner speed on real profiles repeated to three sizes: resnet50 by block uses (the issue's
# 1M-block-use point), gpt2-medium by kernels (100k kernels per iteration).
"$build/bench/deepum-plan-speed" tests/data/resnet50.profile.pb.gz \
  --tool "$build/tools/deepum-plan" --work "$work" --block-uses 250000,500000,1000000 \
  --md "$work/speed-uses.md" >/dev/null 2>"$work/speed.log"
"$build/bench/deepum-plan-speed" tests/data/gpt2-medium.profile.pb.gz \
  --tool "$build/tools/deepum-plan" --work "$work" --kernels 25000,50000,100000 \
  --md "$work/speed-kernels.md" >/dev/null 2>>"$work/speed.log"
{
  cat "$work/table.md"
  echo
  echo "## Planner speed"
  echo
  echo "\`deepum-plan --gpu-memory <half the footprint> --device-model v100-pcie-16gb\` on a"
  echo "shipped profile's steady-state iteration repeated K times (2 iterations per profile;"
  echo "\`bench/plan/PlanSpeed.cpp\`), run as a child process: wall time, CPU time and peak RSS"
  echo "include reading the profile and writing the plan. Machine: $(nproc) cores shared with"
  echo "other jobs (wall time varies with load; CPU time is the steadier figure)."
  echo
  cat "$work/speed-uses.md"
  tail -n +3 "$work/speed-kernels.md"
} >"$out/plan.md"
/usr/bin/python3 bench/plan/plot.py "$out/plan.csv" "$out/plan.png"
echo "wrote $out/plan.md, $out/plan.csv, $out/plan.png"
