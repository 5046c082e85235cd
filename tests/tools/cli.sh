#!/usr/bin/env bash
# The command-line conventions every tool shares (tools/include/deepum/tools/Cli.h,
# docs/tools.md): --version prints deepum's version; exit 0 ok, 1 bad input,
# 2 usage; `-o -` / `--perfetto -` put only the output on standard output.
#   cli.sh TOOLS_DIR PROFILE CAPACITY VERSION
set -uo pipefail
tools=$1 profile=$2 cap=$3 version=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
expect() { # expect WHAT WANT GOT
  if [[ $2 == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: want $2, got $3"; fail=1; fi
}
for t in deepum-plan deepum-sim deepum-inspect; do
  out=$("$tools/$t" --version 2>&1); rc=$?
  expect "$t --version exits 0" 0 "$rc"
  expect "$t --version names deepum" "deepum $version" "$(echo "$out" | head -1 | sed 's/^ *//')"
  "$tools/$t" --no-such-option >"$work/out" 2>"$work/err"; rc=$?
  expect "$t: an unknown option is a usage error" 2 "$rc"
  expect "$t: nothing on standard output for a usage error" 0 "$(wc -c <"$work/out")"
  "$tools/$t" "$work/missing.pb" -o "$work/x.pb" --gpu-memory 1GiB >"$work/out" 2>"$work/err"; rc=$?
  [[ $t == deepum-plan ]] || { "$tools/$t" "$work/missing.pb" >"$work/out" 2>"$work/err"; rc=$?; }
  expect "$t: a missing input file is bad input" 1 "$rc"
  expect "$t: one line on standard error for it" 1 "$(wc -l <"$work/err")"
  grep -q "missing.pb" "$work/err" || { echo "FAIL $t: the error does not name the file"; fail=1; }
done
# deepum-plan -o -: the plan alone on standard output, readable by deepum-inspect.
"$tools/deepum-plan" "$profile" -o - --gpu-memory "$cap" >"$work/plan.pb" 2>"$work/err"; rc=$?
expect "deepum-plan -o - exits 0" 0 "$rc"
"$tools/deepum-inspect" "$work/plan.pb" >"$work/inspect" 2>&1; rc=$?
expect "the plan written to standard output is a valid plan" 0 "$rc"
grep -q "prefetch plan" "$work/err" || { echo "FAIL the summary did not go to standard error"; fail=1; }
# deepum-sim --perfetto -: the timeline alone on standard output, valid JSON.
"$tools/deepum-sim" "$profile" --gpu-memory "$cap" --perfetto - >"$work/trace.json" 2>"$work/err"; rc=$?
expect "deepum-sim --perfetto - exits 0" 0 "$rc"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/trace.json"; rc=$?
expect "the timeline on standard output is JSON alone" 0 "$rc"
# No library's lines on standard error: a normal run says nothing there but deepum's own
# lines, and a malformed text profile gives the tool's one line, not protobuf's log.
for cmd in "deepum-plan $profile --gpu-memory $cap -o $work/quiet.plan.pb" "deepum-sim $profile --gpu-memory $cap" \
           "deepum-inspect $profile"; do
  "$tools"/$cmd >/dev/null 2>"$work/err"
  expect "${cmd%% *}: only deepum's lines on standard error" 0 "$(grep -cv '^deepum' "$work/err")"
done
printf 'producer: "x"\nno_such_field: 1\n' >"$work/bad.profile.txtpb"
"$tools/deepum-inspect" "$work/bad.profile.txtpb" >/dev/null 2>"$work/err"
expect "a malformed text profile: one line" 1 "$(wc -l <"$work/err")"
expect "a malformed text profile: the tool's line, not protobuf's" 0 "$(grep -cv '^deepum-inspect: ' "$work/err")"

# Every JSON output carries its schema version.
schema() { # schema WHAT FILE: the top-level object (or each element of an array) has "schema": 1
  python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
sys.exit(0 if all(isinstance(o, dict) and o.get("schema") == 1 for o in (v if isinstance(v, list) else [v])) else 1)' "$2"
  expect "$1 carries \"schema\": 1" 0 "$?"
}
"$tools/deepum-sim" "$profile" --gpu-memory "$cap" --json >"$work/sim.json" 2>/dev/null
schema "deepum-sim --json" "$work/sim.json"
"$tools/deepum-sim" "$profile" --gpu-memory "$cap" --compare --iterations 2 --json >"$work/cmp.json" 2>/dev/null
schema "deepum-sim --compare --json" "$work/cmp.json"
"$tools/deepum-inspect" "$profile" --json >"$work/inspect.json" 2>/dev/null
schema "deepum-inspect --json (profile)" "$work/inspect.json"
"$tools/deepum-inspect" "$work/plan.pb" --json >"$work/inspect-plan.json" 2>/dev/null
schema "deepum-inspect --json (plan)" "$work/inspect-plan.json"

# deepum-profile: the same version and exit codes; {rank} in -o.
if [[ -x $tools/deepum-profile ]]; then
  t=deepum-profile
  expect "$t --version names deepum" "deepum $version" "$("$tools/$t" --version 2>&1 | head -1 | sed 's/^ *//')"
  for args in "--no-such-option" "-o $work/p.pb.gz" "--python --no-python -o $work/p.pb.gz -- true" \
              "-o - -- true"; do
    "$tools/$t" $args >"$work/out" 2>"$work/err"; rc=$?
    expect "$t $args: a usage error" 2 "$rc"
    expect "$t $args: nothing on standard output" 0 "$(wc -c <"$work/out")"
  done
  RANK=3 "$tools/$t" -o "$work/nodir/p.rank{rank}.pb.gz" -- true >"$work/out" 2>"$work/err"; rc=$?
  expect "$t: an output in a missing directory is bad input" 1 "$rc"
  expect "$t: one line for it" 1 "$(wc -l <"$work/err")"
  grep -q "nodir/p.rank3.pb.gz" "$work/err" || { echo "FAIL $t: {rank} not substituted in -o"; fail=1; }
fi

# deepum-run: the same version and usage exit code.
run=$(dirname "$0")/../../tools/deepum-run
expect "deepum-run --version names deepum" "deepum $version" "$("$run" --version 2>&1)"
"$run" --no-such-option -- true >"$work/out" 2>"$work/err"; rc=$?
expect "deepum-run: an unknown option is a usage error" 2 "$rc"
"$run" >"$work/out" 2>"$work/err"; rc=$?
expect "deepum-run: no command is a usage error" 2 "$rc"
"$run" --gpu-memory lots -- true >"$work/out" 2>"$work/err"; rc=$?
expect "deepum-run: a bad --gpu-memory is bad input" 1 "$rc"
expect "deepum-run: one line for it" 1 "$(wc -l <"$work/err")"
# deepum-inspect --drop-migrations: only with --convert; the copy keeps every kernel.
"$tools/deepum-inspect" "$profile" --drop-migrations >/dev/null 2>"$work/err"; rc=$?
expect "--drop-migrations without --convert is refused" 1 "$rc"
grep -q -- "--convert" "$work/err" || { echo "FAIL the refusal does not name --convert"; fail=1; }
"$tools/deepum-inspect" "$profile" --convert "$work/slim.profile.pb.gz" --drop-migrations >/dev/null 2>&1; rc=$?
expect "--convert --drop-migrations exits 0" 0 "$rc"
kernels() { "$tools/deepum-inspect" --json "$1" | python3 -c 'import json,sys; v = json.load(sys.stdin); print(v["kernels"], v["allocations"], v["migrations"] == {})'; }
expect "the slimmed profile keeps kernels and allocations, no migrations" \
  "$(kernels "$profile" | cut -d' ' -f1-2) True" "$(kernels "$work/slim.profile.pb.gz")"
exit $fail
