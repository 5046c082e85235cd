#!/usr/bin/env bash
# Regenerates docs/results/plan.md, plan.csv and plan.png: deepum-plan beside
# deepum-sim's baselines for every shipped model x ratio x device, the pool
# layout per model, and the planner's speed on repeated real profiles.
#   bash bench/plan/results.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
cmake --build "$build" --target deepum-plan deepum-plan-results deepum-plan-speed >/dev/null
out=docs/results
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bench/deepum-plan-results" --data tests/data --md "$work/table.md" --csv "$out/plan.csv" \
  >/dev/null
# Planner speed on real profiles repeated to three sizes: resnet50 by block uses (the issue's
# 1M-block-use point), gpt2-medium by kernels (100k kernels per iteration).
"$build/bench/deepum-plan-speed" tests/data/resnet50.profile.pb.gz \
  --tool "$build/tools/deepum-plan" --work "$work" --block-uses 250000,500000,1000000 \
  --md "$work/speed-uses.md" >/dev/null 2>"$work/speed.log"
"$build/bench/deepum-plan-speed" tests/data/gpt2-medium.profile.pb.gz \
  --tool "$build/tools/deepum-plan" --work "$work" --kernels 25000,50000,100000 \
  --md "$work/speed-kernels.md" >/dev/null 2>>"$work/speed.log"
# The issue's shape, 100k kernels and 1M block uses per iteration: ResNet-50 at batch 32 repeated.
"$build/bench/deepum-plan-speed" tests/data/resnet50-b32.profile.pb.gz \
  --tool "$build/tools/deepum-plan" --work "$work" --kernels 25000,50000,100000 \
  --md "$work/speed-small.md" >/dev/null 2>>"$work/speed.log"
{
  cat "$work/table.md"
  cat <<'TEXT'

## Where the 2x target is missed, and why

At 1.25x the plan is at max(ideal, bound) on every model; the gap opens at 2x and 3x. `bound` is
the bytes that must cross the link over the link bandwidth, but it ignores *when* they can
cross. In training, the bytes that do not fit are activations: they are produced during the
forward pass and must be written back then (the device-to-host engine is saturated while the
forward pass, about a third of the compute, waits for room), and they come back during the
backward pass (the host-to-device engine saturated). The two transfers cannot overlap each
other. The `cut` column makes this a number: for every launch boundary, the write-backs that
must happen before it and the fetches that must happen after it, each beside the compute on its
side (docs/simulator.md). It is a lower bound for any schedule — the generator checks every
policy against it — and the plan's distance to it (`x lower`) is what scheduling could still
win; the rest of the distance to the issue's 1.10x x max(ideal, bound) needs less data to move
(recomputation, compression), not better timing.

`vs deepum` compares the plan with DeepUM tuned for that row: its lookahead (1 .. 256 launches)
and free-memory watermark (0, 5, 10, 20% of the capacity) searched by `tuneDeepUm`
(docs/simulator.md), the `setting` column naming the one found (`L` lookahead, `w` watermark);
`vs deepum L8` compares it with DeepUM at a lookahead of 8, the only setting earlier versions of
this file used. The targets row on `deepum` uses the tuned one. The plan is within 1.13x of the
lower bound in every h100 row but vgg16 at 3x (1.23x); its lead is smallest where the tuned
DeepUM itself is near the bound (the 1.25x rows). What remains for the transformers is the
write-back of the weights and optimizer state that the optimizer step dirties, which runs into
the next forward pass (docs/planner.md); the two-point cut charges it against the next
iteration's fetches, which is why `x lower` for the transformers is now small.

Planner speed target (tables below): "100k kernels per iteration and 1M block uses in <= 3 s and
<= 1 GiB". ResNet-50 at batch 32 (about 10 block uses per kernel) repeated to 100k kernels has
1.04M block uses: its row (the last) is the target's shape, and is within it. CPU time per block
use is about flat from 250k to 5M uses; the 100k-kernel gpt2-medium point carries 5.2M block uses,
five times the target's, and is over the budget in time and memory in proportion.

TEXT
  echo
  echo "## Planner speed"
  echo
  echo "\`deepum-plan --gpu-memory <half the footprint> --device-model v100-pcie-16gb\` on a"
  echo "shipped profile's steady-state iteration repeated K times (2 iterations per profile;"
  echo "\`bench/plan/PlanSpeed.cpp\`), run as a child process: wall time, CPU time and peak RSS"
  echo "include reading the profile and writing the plan. Machine: $(nproc) cores shared with"
  echo "other jobs (wall time varies with load; CPU time is the steadier figure)."
  echo
  cat "$work/speed-uses.md"
  tail -n +3 "$work/speed-kernels.md"
  tail -n +3 "$work/speed-small.md"
} | awk -v notes=bench/plan/model-change.md \
  'NR == 1 { print; print ""; while ((getline l < notes) > 0) print l; next } { print }' \
  >"$out/plan.md"
/usr/bin/python3 bench/plan/plot.py "$out/plan.csv" "$out/plan.png"
echo "wrote $out/plan.md, $out/plan.csv, $out/plan.png"
