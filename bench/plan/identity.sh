#!/usr/bin/env bash
# Writes the plans of every shipped profile (both strategies, v100-pcie-16gb,
# half the footprint deepum-inspect reports) to OUT_DIR and their sha256 to
# OUT_DIR/SHA256SUMS. Two builds whose SHA256SUMS differ compile different
# plans: a change meant to make the planner faster, not to change its
# decisions, must leave them equal.
#   bash bench/plan/identity.sh [BUILD_DIR] OUT_DIR
#   diff before/SHA256SUMS after/SHA256SUMS
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
out="${2:?usage: identity.sh [BUILD_DIR] OUT_DIR}"
mkdir -p "$out"
for profile in tests/data/*.profile.pb.gz; do
  name="$(basename "$profile" .profile.pb.gz)"
  # "footprint 12.14 GiB (...)": the capacity is half of it, in bytes.
  capacity="$("$build/tools/deepum-inspect" "$profile" |
    awk '$1 == "footprint" {
      s = $2; u = $3
      m = u == "GiB" ? 2^30 : u == "MiB" ? 2^20 : u == "KiB" ? 2^10 : 1
      printf "%d", s * m / 2 }')"
  for strategy in prefetch swap; do
    "$build/tools/deepum-plan" "$profile" --gpu-memory "$capacity" --device v100-pcie-16gb \
      --strategy "$strategy" --quiet -o "$out/$name.$strategy.plan.pb"
  done
done
(cd "$out" && sha256sum ./*.plan.pb >SHA256SUMS)
cat "$out/SHA256SUMS"
