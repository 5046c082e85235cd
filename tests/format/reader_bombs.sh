#!/usr/bin/env bash
# A tool given a small file that inflates into a huge message ends in one line
# naming the file, exit 1, under a 4 GiB address-space limit (4 GiB resident for
# sanitized tools) and in 20 s
# (docs/hostile-input.md, "Memory"). The bombs come from deepum_reader_bombs.
#   reader_bombs.sh TOOLS_DIR BOMBS_DIR PROFILE CASE
set -uo pipefail
tools=$1 bombs=$2 profile=$3 case=$4
case $case in
  inspect_allocations) file=$bombs/allocations.profile.pb.gz; cmd=("$tools/deepum-inspect" "$file") ;;
  inspect_unnamed) file=$bombs/allocations.pb.gz; cmd=("$tools/deepum-inspect" "$file") ;;
  inspect_kernels) file=$bombs/kernels.profile.pb.gz; cmd=("$tools/deepum-inspect" "$file") ;;
  inspect_positions) file=$bombs/positions.plan.pb.gz; cmd=("$tools/deepum-inspect" "$file") ;;
  plan_allocations) file=$bombs/allocations.profile.pb.gz
    cmd=("$tools/deepum-plan" "$file" -o "$bombs/out.plan.pb" --gpu-memory 1GiB --quiet) ;;
  plan_kernels) file=$bombs/kernels.profile.pb.gz
    cmd=("$tools/deepum-plan" "$file" -o "$bombs/out.plan.pb" --gpu-memory 1GiB --quiet) ;;
  sim_allocations) file=$bombs/allocations.profile.pb.gz; cmd=("$tools/deepum-sim" "$file" --quiet) ;;
  sim_kernels) file=$bombs/kernels.profile.pb.gz; cmd=("$tools/deepum-sim" "$file" --quiet) ;;
  sim_positions) file=$bombs/positions.plan.pb.gz
    cmd=("$tools/deepum-sim" "$profile" --policy plan --plan "$file" --quiet) ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# A sanitizer maps terabytes of shadow memory, which an address-space limit
# forbids: a sanitized tool gets the sanitizer's own limit on resident memory.
if grep -qaE '__(asan|tsan)_init' "${cmd[0]}"; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=4096"
  export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}hard_rss_limit_mb=4096"
  timeout 20 "${cmd[@]}" >/dev/null 2>"$err"; rc=$?
else
  (ulimit -v 4194304; timeout 20 "${cmd[@]}" >/dev/null 2>"$err"); rc=$?
fi
cat "$err"
fail=0
[[ $rc == 1 ]] || { echo "FAIL: exit code $rc, want 1"; fail=1; }
[[ $(wc -l <"$err") == 1 ]] || { echo "FAIL: $(wc -l <"$err") lines on standard error, want 1"; fail=1; }
grep -qF "$file: " "$err" || { echo "FAIL: the error does not name $file"; fail=1; }
grep -q "refusing it" "$err" || { echo "FAIL: not refused for its size"; fail=1; }
exit $fail
