#!/usr/bin/env bash
# Regenerates every figure in docs/results from one build, so that they all come
# from the same simulator, device models and planner:
#   calibration.md             bench/sim/calibration.sh  (published real-GPU runs)
#   baselines.md, baselines.png  bench/sim/baselines.sh
#   plan.md, plan.csv, plan.png  bench/plan/results.sh    (and the planner's speed)
#   sensitivity.md             bench/sim/sensitivity.sh
# The steps are independent; two run at a time. Each step's output goes to
# $BUILD/results-logs/<step>.log; a step that fails is named and the script exits 1.
#   bash bench/results.sh [BUILD_DIR]          (default: build)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cmake --build "$build" --target deepum-sim deepum-plan deepum-sim-calibration \
  deepum-plan-results deepum-plan-speed >/dev/null || exit 1
logs="$build/results-logs"
mkdir -p "$logs"
cd "$root"
step() { # step NAME COMMAND...: runs one generator, its output to its log
  local name=$1
  shift
  local begin=$SECONDS
  if "$@" >"$logs/$name.log" 2>&1; then
    echo "results: $name done in $((SECONDS - begin)) s"
  else
    echo "results: $name failed after $((SECONDS - begin)) s; see $logs/$name.log" >&2
    return 1
  fi
}
status=0
# The two long generators side by side, then the two short ones.
step plan bash bench/plan/results.sh "$build" & plan_pid=$!
step baselines bash bench/sim/baselines.sh "$build" || status=1
step sensitivity bash bench/sim/sensitivity.sh "$build" || status=1
wait "$plan_pid" || status=1
# The calibration exits non-zero when a row leaves its tolerance; its page is written anyway.
step calibration bash bench/sim/calibration.sh "$build" || status=1
exit $status
