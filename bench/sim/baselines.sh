#!/usr/bin/env bash
# Regenerates docs/results/baselines.md and docs/results/baselines.png: every
# shipped model at 1.25x, 1.5x, 2x and 3x oversubscription (capacity =
# footprint / ratio, in whole 2 MiB blocks) on v100-pcie-16gb, h100-pcie and the measured h100-sxm,
# every baseline policy,
# and DeepUM tuned per row (deepum-sim --deepum-tune).
#
#   bench/sim/baselines.sh [BUILD_DIR]     (default: build; builds deepum-sim if needed)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
sim="$build/tools/deepum-sim"
cmake --build "$build" --target deepum-sim >/dev/null
models=(resnet50 vgg16 vit_b_16 bert-large gpt2-medium bart-large llama-1b llama-1b-ckpt)
devices=(v100-pcie-16gb h100-pcie h100-sxm)
ratios=(1.25 1.5 2 3)
iterations=12
warmup=6
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for model in "${models[@]}"; do
  profile="$root/tests/data/$model.profile.pb.gz"
  if [[ ! -f "$profile" ]]; then
    echo "baselines: $profile is missing" >&2
    exit 1
  fi
  # Capacity = footprint / ratio rounded down to whole 2 MiB blocks, as
  # docs/results/plan.md's generator (bench/plan/PlanResults.cpp) has it.
  footprint="$("$sim" "$profile" --policy ideal --json --iterations 1 --warmup 0 |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["footprint_bytes"])')"
  for device in "${devices[@]}"; do
    for ratio in "${ratios[@]}"; do
      capacity="$(/usr/bin/python3 -c \
        'import sys; b = 2 << 20; print(int(int(sys.argv[1]) / float(sys.argv[2])) // b * b)' \
        "$footprint" "$ratio")"
      "$sim" "$profile" --device "$device" --gpu-memory "$capacity" --compare --json \
        --iterations "$iterations" --warmup "$warmup" >"$work/$model@$device@$ratio.json"
      # DeepUM at its best lookahead and watermark for this model and capacity.
      "$sim" "$profile" --device "$device" --gpu-memory "$capacity" --policy deepum \
        --deepum-tune --json --iterations "$iterations" --warmup "$warmup" \
        >"$work/$model@$device@$ratio.tuned.json"
    done
  done
done
/usr/bin/python3 "$root/bench/sim/baselines.py" --runs "$work" --out "$root/docs/results" \
  --iterations "$iterations" --warmup "$warmup" \
  --models "${models[@]}" --devices "${devices[@]}" --ratios "${ratios[@]}"
