#!/bin/bash
# Progress lines (tools/include/deepum/tools/Progress.h): never on standard
# output; none when standard error is not a terminal; every stage with
# DEEPUM_PROGRESS=always; none with --quiet, whatever the environment.
# usage: progress.sh TOOLS_DIR PROFILE GPU_MEMORY WORK_DIR
set -u
tools=$1 profile=$2 cap=$3 work=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
fail=0
check() { # name, command status (0 = holds)
  if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
unset DEEPUM_PROGRESS

# Not a terminal: standard error stays empty.
"$tools/deepum-plan" "$profile" --gpu-memory "$cap" -o "$work/plan.pb" >"$work/plan.out" 2>"$work/plan.err"
check "deepum-plan exits 0" $?
check "deepum-plan: no progress when stderr is not a terminal" "$(grep -c 'deepum-plan: ' "$work/plan.err")"
"$tools/deepum-sim" "$profile" --gpu-memory "$cap" --plan "$work/plan.pb" --compare \
  --iterations 2 --warmup 1 >"$work/sim.out" 2>"$work/sim.err"
check "deepum-sim --compare exits 0" $?
check "deepum-sim: no progress when stderr is not a terminal" "$(grep -c 'deepum-sim: ' "$work/sim.err")"

# Forced: a line per stage, on standard error only; standard output unchanged.
DEEPUM_PROGRESS=always "$tools/deepum-plan" "$profile" --gpu-memory "$cap" -o "$work/plan2.pb" \
  >"$work/plan2.out" 2>"$work/plan2.err"
grep -q '^deepum-plan: schedule computed ([0-9.]* s)$' "$work/plan2.err"
check "deepum-plan: forced progress names its stages" $?
cmp -s "$work/plan.out" "$work/plan2.out"
check "deepum-plan: standard output is the same with progress" $?
DEEPUM_PROGRESS=always "$tools/deepum-sim" "$profile" --gpu-memory "$cap" --plan "$work/plan.pb" \
  --compare --iterations 2 --warmup 1 >"$work/sim2.out" 2>"$work/sim2.err"
for policy in um deepum swap-layer swap-opt offload plan ideal; do
  grep -q "^deepum-sim: policy $policy simulated, [1-7] of 7 ([0-9.]* s)$" "$work/sim2.err"
  check "deepum-sim: forced progress after policy $policy" $?
done
cmp -s "$work/sim.out" "$work/sim2.out"
check "deepum-sim: standard output is the same with progress" $?

# --quiet wins over the environment.
DEEPUM_PROGRESS=always "$tools/deepum-sim" "$profile" --gpu-memory "$cap" --quiet \
  --iterations 2 --warmup 1 >/dev/null 2>"$work/sim3.err"
check "deepum-sim --quiet: no progress" "$(grep -c 'deepum-sim: ' "$work/sim3.err")"
DEEPUM_PROGRESS=always "$tools/deepum-plan" "$profile" --gpu-memory "$cap" --quiet \
  -o "$work/plan3.pb" >/dev/null 2>"$work/plan3.err"
check "deepum-plan --quiet: no progress" "$(grep -c 'deepum-plan: ' "$work/plan3.err")"
exit $fail
