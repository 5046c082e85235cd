#!/usr/bin/env bash
# deepum-plan and deepum-sim --compute-from (format::takeComputeTimes): a
# profile laid over itself plans and simulates the same; a profile of another
# program, a missing file and an output naming the natural profile are one
# line naming the file, exit 1.
#   compute-from.sh TOOLS_DIR PROFILE OTHER_PROFILE
set -uo pipefail
tools=$1 profile=$2 other=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
plan() { "$tools/deepum-plan" "$profile" --gpu-memory 2GiB --quiet "$@"; }

plan -o "$out/plain.pb" || { echo "FAIL: planning without --compute-from"; exit 1; }
plan --compute-from "$profile" -o "$out/self.pb" ||
  { echo "FAIL: --compute-from the profile itself"; fail=1; }
cmp -s "$out/plain.pb" "$out/self.pb" ||
  { echo "FAIL: the profile's own durations changed the plan"; fail=1; }

refused() { # refused WHAT EXPECTED-TEXT ARGS...: exit 1, one line holding the text
  local what=$1 text=$2
  shift 2
  plan "$@" >/dev/null 2>"$out/err"
  local rc=$?
  if [[ $rc -ne 1 || $(wc -l <"$out/err") -ne 1 ]] || ! grep -qF -- "$text" "$out/err"; then
    echo "FAIL: $what: exit $rc, stderr:"
    cat "$out/err"
    fail=1
  else
    echo "ok: $what: $(cat "$out/err")"
  fi
}
refused "another program" "--compute-from $other: not a profile of the same program" \
  --compute-from "$other" -o "$out/x.pb"
refused "a missing file" "$out/none.pb" --compute-from "$out/none.pb" -o "$out/y.pb"
cp "$profile" "$out/natural.pb.gz"
refused "the plan over the natural profile" "$out/natural.pb.gz" \
  --compute-from "$out/natural.pb.gz" -o "$out/natural.pb.gz"
cmp -s "$profile" "$out/natural.pb.gz" || { echo "FAIL: the natural profile was overwritten"; fail=1; }
# deepum-sim: the same reading.
sim() { "$tools/deepum-sim" "$profile" --device h100-pcie --gpu-memory 2GiB --quiet --json "$@"; }
sim >"$out/plain.json" && sim --compute-from "$profile" >"$out/self.json" &&
  cmp -s "$out/plain.json" "$out/self.json" ||
  { echo "FAIL: deepum-sim --compute-from the profile itself changed the result"; fail=1; }
sim --compute-from "$other" >/dev/null 2>"$out/err"
rc=$?
if [[ $rc -ne 1 || $(wc -l <"$out/err") -ne 1 ]] ||
  ! grep -qF -- "--compute-from $other: not a profile of the same program" "$out/err"; then
  echo "FAIL: deepum-sim, another program: exit $rc, stderr:"
  cat "$out/err"
  fail=1
fi
exit $fail
