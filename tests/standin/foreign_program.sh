#!/usr/bin/env bash
# A CUDA program that knows nothing of deepum (ForeignTrain.cu: its own
# cudaMallocManaged, cudaMalloc and cudaFree, no marks) profiled, planned and
# replayed on the CUDA stand-in, unmodified, as docs/executor.md's "A CUDA
# program's own allocations" says: deepum-profile --allocator-library
# libdeepum_interpose.so, deepum-plan, deepum-run (which preloads the same
# library for a command that is not Python). Checks, each printed:
#   - the profile holds the allocator's records (call indices) and the
#     iterations found by the kernel sequence's period
#   - under deepum-run the program ran to its end, its allocations were served
#     by libdeepum (the interposer's cudaFree gave them back), the plan was
#     replayed (its prefetches issued) and its launches matched
#   - with the interposer unavailable, deepum-run --strict stops before the
#     program starts, and without --strict the program runs as without deepum
#
# usage: foreign_program.sh STANDIN_LIB_DIR LIBDEEPUM INTERPOSE FOREIGN TOOLS_DIR INJECTION_LIB DEEPUM_RUN
set -euo pipefail
lib=$1 libdeepum=$2 interpose=$3 prog=$4 tools=$5 inj=$6 run=$7
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export LD_LIBRARY_PATH=$lib DEEPUM_LIBRARY=$libdeepum DEEPUM_INTERPOSE_LIBRARY=$interpose
export DEEPUM_PYTHON=${DEEPUM_PYTHON:-/usr/bin/python3}
fail=0
check() { # check ok|FAIL WHAT
  echo "$1 $2"
  [[ $1 == ok ]] || fail=1
}
steps=10

# 1. Profile (access sets: everything fits at 1 GiB, so nothing would fault):
# the allocations through libdeepum, iterations by the kernel sequence's period.
env DEEPUM_STANDIN_GPU_MEMORY=1GiB timeout -k 5 120 "$tools/deepum-profile" \
  --injection-library "$inj" --allocator-library "$interpose" --mode access-set \
  --skip 2 --iterations 3 \
  -o "$out/p.pb" -- "$prog" $steps > "$out/profile.log" 2>&1 || { cat "$out/profile.log"; exit 1; }
"$tools/deepum-inspect" "$out/p.pb" > "$out/summary"
"$tools/deepum-inspect" --json "$out/p.pb" > "$out/summary.json"
"$tools/deepum-inspect" --dump text "$out/p.pb" > "$out/dump.txt"
cat "$out/summary"
grep -Eq 'iterations +3$' "$out/summary" && check ok "three iterations found by the period" ||
  check FAIL "three iterations found by the period"
[[ $(grep -c 'call_index: [1-9]' "$out/dump.txt") -ge 10 ]] &&
  check ok "the allocator's records carry call indices" ||
  check FAIL "the allocator's records carry call indices"
live=$(grep -o '"peak_live_bytes": *[0-9]*' "$out/summary.json" | head -1 | sed 's/.*: *//')
# Three quarters: every kernel's tensors fit (8 of 16 MiB at most), not all of them.
cap=$(( live * 3 / 4 / 65536 * 65536 ))
echo "peak live $live bytes; capacity $cap bytes"

# 2. Plan at that capacity.
"$tools/deepum-plan" "$out/p.pb" -o "$out/plan.pb" --gpu-memory "$cap" \
  --device-model h100-pcie > "$out/plan.log" 2>&1 || { cat "$out/plan.log"; exit 1; }

# 3. Replay with deepum-run: the command is not Python, so the interposer is preloaded.
env DEEPUM_STANDIN_GPU_MEMORY="$cap" timeout -k 5 120 "$run" --plan "$out/plan.pb" \
  --gpu-memory "$cap" --stats "$out/stats.json" -- "$prog" $steps > "$out/run.log" 2>&1 &&
  check ok "the program ran to its end under deepum-run" ||
  { cat "$out/run.log"; check FAIL "the program ran to its end under deepum-run"; }
grep -q "trained $steps steps" "$out/run.log" || check FAIL "the program's own last line"
read -r allocs frees active matched launches prefetches < <("$DEEPUM_PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
print(d["memory"]["allocations"], d["memory"]["frees"], int(d["active"]),
      d["launches"]["matched"], d["launches"]["seen"], d["prefetch"]["calls"])' "$out/stats.json")
echo "allocations $allocs frees $frees plan active $active launches $launches matched $matched" \
  "prefetch calls $prefetches"
# 4 before the steps and 2 a step through deepum_malloc; every one given back through cudaFree.
[[ $allocs -eq $((4 + 2 * steps)) && $frees -eq $allocs ]] &&
  check ok "every allocation served and freed by libdeepum" ||
  check FAIL "every allocation served and freed by libdeepum"
[[ $active -eq 1 && $matched -ge $(( launches * 3 / 4 )) && $prefetches -gt 0 ]] &&
  check ok "the plan replayed, most launches matched" ||
  check FAIL "the plan replayed, most launches matched"

# 4. No interposer: --strict stops before the program; without it, it runs.
env DEEPUM_INTERPOSE_LIBRARY="$out/none.so" "$run" --strict -- "$prog" 2 > "$out/strict.log" 2>&1 &&
  rc=0 || rc=$?
[[ $rc -eq 1 ]] && grep -q '^deepum: error: .*none.so not found' "$out/strict.log" &&
  ! grep -q trained "$out/strict.log" && check ok "--strict without the interposer: one error line" ||
  { cat "$out/strict.log"; check FAIL "--strict without the interposer: one error line"; }
env DEEPUM_INTERPOSE_LIBRARY="$out/none.so" DEEPUM_STANDIN_GPU_MEMORY=1GiB "$run" -- "$prog" 2 \
  > "$out/plain.log" 2>&1 && grep -q "trained 2 steps" "$out/plain.log" &&
  check ok "without the interposer the program runs as without deepum" ||
  { cat "$out/plain.log"; check FAIL "without the interposer the program runs as without deepum"; }
exit $fail
