#!/usr/bin/env bash
# --device NAME and --device-file FILE mean the same in every tool that takes
# a device (deepum/base/DeviceModel.h, docs/tools.md): the same names and
# files are accepted, and the same problems give the same one-line error
# (after the tool's "NAME: " prefix) and exit code 1.
#   device-options.sh TOOLS_DIR PROFILE CAPACITY
set -uo pipefail
tools=$1 profile=$2 cap=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
expect() { # expect WHAT WANT GOT
  if [[ $2 == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: want $2, got $3"; fail=1; fi
}
plan() { "$tools/deepum-plan" "$profile" --gpu-memory "$cap" --quiet "$@"; }
sim() { "$tools/deepum-sim" "$profile" --gpu-memory "$cap" --policy ideal --iterations 1 --warmup 0 "$@"; }

# Runs both tools with the device options given; each must exit 1 with one
# line, and the lines must agree once the tool's prefix is removed.
same_error() { # same_error WHAT NEEDLE OPTIONS...
  local what=$1 needle=$2
  shift 2
  plan -o "$work/p.pb" "$@" >"$work/plan.out" 2>"$work/plan.err"; local prc=$?
  sim "$@" >"$work/sim.out" 2>"$work/sim.err"; local src=$?
  expect "deepum-plan: $what is bad input" 1 "$prc"
  expect "deepum-sim: $what is bad input" 1 "$src"
  expect "deepum-plan: $what is one line" 1 "$(wc -l <"$work/plan.err")"
  expect "deepum-sim: $what is one line" 1 "$(wc -l <"$work/sim.err")"
  expect "$what: both tools say the same" "$(sed 's/^deepum-plan: //' "$work/plan.err")" \
    "$(sed 's/^deepum-sim: //' "$work/sim.err")"
  grep -qF -- "$needle" "$work/sim.err" ||
    { echo "FAIL $what: the error does not say '$needle': $(cat "$work/sim.err")"; fail=1; }
}

# A built-in model by name.
plan -o "$work/h100.plan.pb" --device h100-pcie; rc=$?
expect "deepum-plan --device h100-pcie exits 0" 0 "$rc"
"$tools/deepum-inspect" --json "$work/h100.plan.pb" >"$work/h100.json"
grep -q '"device_model": *"h100-pcie"' "$work/h100.json" ||
  { echo "FAIL deepum-plan --device: the plan is not for h100-pcie"; fail=1; }
sim --device h100-pcie >/dev/null; rc=$?
expect "deepum-sim --device h100-pcie exits 0" 0 "$rc"
# The earlier spelling of deepum-plan's option still works, with the same plan.
plan -o "$work/alias.plan.pb" --device-model h100-pcie; rc=$?
expect "deepum-plan --device-model (deprecated) exits 0" 0 "$rc"
"$tools/deepum-inspect" --json "$work/alias.plan.pb" >"$work/alias.json"
expect "--device-model makes the plan --device makes" "" "$(diff "$work/h100.json" "$work/alias.json")"

# A model a device file adds, and a file overriding a built-in model.
cat >"$work/lab.json" <<'JSON'
{"models": [{"name": "lab-gpu", "link_bytes_per_second": 3e9, "fault_batch_latency_us": 30},
            {"name": "h100-pcie", "link_bytes_per_second": 1e9}]}
JSON
plan -o "$work/lab.plan.pb" --device lab-gpu --device-file "$work/lab.json"; rc=$?
expect "deepum-plan accepts a model a --device-file adds" 0 "$rc"
sim --device lab-gpu --device-file "$work/lab.json" >/dev/null; rc=$?
expect "deepum-sim accepts a model a --device-file adds" 0 "$rc"
# Plain UM moves everything over the link (the lower bounds take explicit
# copies at their own rates, which the file leaves as they are).
simum() { "$tools/deepum-sim" "$profile" --gpu-memory "$cap" --policy um --iterations 1 --warmup 0 "$@"; }
simum --device h100-pcie --json >"$work/fast.json"
simum --device h100-pcie --device-file "$work/lab.json" --json >"$work/slow.json"
[[ $(cat "$work/fast.json") != $(cat "$work/slow.json") ]] ||
  { echo "FAIL deepum-sim: --device-file's link_bytes_per_second changed nothing"; fail=1; }
plan -o "$work/slow.plan.pb" --device h100-pcie --device-file "$work/lab.json"
"$tools/deepum-inspect" --json "$work/slow.plan.pb" >"$work/slow.plan.json"
[[ $(grep predicted_iteration_us "$work/h100.json") != $(grep predicted_iteration_us "$work/slow.plan.json") ]] ||
  { echo "FAIL deepum-plan: --device-file's link_bytes_per_second changed nothing"; fail=1; }

# The same problems, the same errors.
same_error "an unknown device" "unknown device model 'tpu-v9'" --device tpu-v9
same_error "a missing device file" "$work/none.json" --device h100-pcie --device-file "$work/none.json"
printf '{"models": [' >"$work/broken.json"
same_error "a device file that is not JSON" "$work/broken.json: invalid JSON" \
  --device h100-pcie --device-file "$work/broken.json"
echo '{"models": [{"name": "h100-pcie", "link_bytes_per_sec": 1e9}]}' >"$work/typo.json"
same_error "an unknown field" "unknown field 'link_bytes_per_sec'" \
  --device h100-pcie --device-file "$work/typo.json"
same_error "a name neither built in nor in the file" "no device model named 'tpu-v9' here or built in" \
  --device tpu-v9 --device-file "$work/lab.json"
same_error "a device file that is a directory" "$work: not a regular file" \
  --device h100-pcie --device-file "$work"
exit $fail
