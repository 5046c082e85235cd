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
exit $fail
