#!/usr/bin/env bash
# Runs every fuzz target of BUILD_DIR for SECONDS over its corpus and beyond,
# then prints executions per target. Works with libFuzzer builds (make fuzz)
# and plain-driver builds alike (both take these libFuzzer options).
#   bash fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
# Per target, under BUILD_DIR/fuzz-out/TARGET/: new corpus inputs (libFuzzer
# adds what raises coverage; the corpus in the tree is never written), the
# log, and crash-*/timeout-*/oom-*/slow-* inputs. Exit status 1 when any
# target crashed; every target runs regardless.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
build=$(cd "$build" && pwd)
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(bash "$here/targets.sh")
fi

# Reports go to the log whole: a crash stops at the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/$t"
  out="$build/fuzz-out/$t"
  if [[ ! -x $bin ]]; then
    echo "fuzz: $bin is not built" >&2
    failed+=("$t")
    continue
  fi
  mkdir -p "$out/corpus"
  rm -f "$out"/crash-* "$out"/timeout-* "$out"/oom-* "$out"/leak-* "$out"/slow-*
  echo "fuzz: $t for ${seconds}s (log: $out/log)" >&2
  (cd "$out" && "$bin" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "$here/corpus/$t") \
      >"$out/log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$out/log" | grep -o '[0-9]*$' | tail -1)
  artifacts=$(cd "$out" && ls -d crash-* timeout-* oom-* leak-* slow-* 2>/dev/null | wc -l)
  status=ok
  if ((rc != 0)); then
    status="FAILED (exit $rc)"
    failed+=("$t")
    grep -m1 -E 'ERROR: |fuzz: fuzz_|runtime error|deadly signal|Timeout|out-of-memory' "$out/log" >&2
  fi
  summary+=("$(printf '%-24s %10s runs %8s exec/s %3s artifacts  %s' "$t" "${runs:-?}" "${rate:-?}" "$artifacts" "$status")")
done

printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "fuzz: failures in ${failed[*]}; inputs under $build/fuzz-out/<target>/" >&2
  echo "fuzz: reproduce with: $build/fuzz/<target> <input>" >&2
  exit 1
fi
