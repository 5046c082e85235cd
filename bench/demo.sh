#!/usr/bin/env bash
# make demo: the main job on shipped data — a real-model profile (ResNet-50,
# traced from a real PyTorch iteration) is summarised, compiled into a plan for a
# GPU with half the memory the model touches, and every policy is simulated on it;
# then every policy over a sweep of ratios, as a table and a plot
# (docs/results/demo.png; DEEPUM_DEMO_PLOT elsewhere, DEEPUM_DEMO_SWEEP the ratios).
set -euo pipefail
build="${1:-build}"
model="${DEEPUM_DEMO_MODEL:-resnet50}"
ratio="${DEEPUM_DEMO_RATIO:-2}"
device="${DEEPUM_DEMO_DEVICE:-v100-pcie-16gb}"
profile="tests/data/$model.profile.pb.gz"
out="$build/demo"
mkdir -p "$out"

echo "== deepum-inspect $profile"
"$build/tools/deepum-inspect" "$profile"

# Capacity = footprint / ratio, the footprint being the 2 MiB blocks the
# steady-state iteration touches (the simulator's definition, as in docs/results).
capacity=$("$build/tools/deepum-sim" "$profile" --device "$device" --policy ideal \
  --oversubscription "$ratio" --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_memory_bytes"])')
echo
echo "== deepum-plan: ${ratio}x oversubscription on $device ($capacity bytes of GPU memory)"
"$build/tools/deepum-plan" "$profile" --gpu-memory "$capacity" --device "$device" \
  -o "$out/$model.plan.pb"

echo
echo "== deepum-sim --compare (steady state; times per iteration)"
"$build/tools/deepum-sim" "$profile" --device "$device" --gpu-memory "$capacity" \
  --plan "$out/$model.plan.pb" --compare

# The sweep: a plan per ratio, every policy on it, iteration time against ratio.
sweep="${DEEPUM_DEMO_SWEEP:-1 1.25 1.5 2 3}"
plot="${DEEPUM_DEMO_PLOT:-docs/results/demo.png}"
echo
echo "== sweep: every policy at ${sweep// /, }x oversubscription"
points=()
for r in $sweep; do
  cap=$("$build/tools/deepum-sim" "$profile" --device "$device" --policy ideal \
    --oversubscription "$r" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_memory_bytes"])')
  "$build/tools/deepum-plan" "$profile" --gpu-memory "$cap" --device-model "$device" --quiet \
    -o "$out/$model.$r.plan.pb"
  "$build/tools/deepum-sim" "$profile" --device "$device" --gpu-memory "$cap" \
    --plan "$out/$model.$r.plan.pb" --compare --json >"$out/compare.$r.json"
  points+=("$r=$out/compare.$r.json")
done
/usr/bin/python3 bench/demo_plot.py "$plot" "${points[@]}"
