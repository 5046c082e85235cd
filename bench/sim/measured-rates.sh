#!/usr/bin/env bash
# Prints docs/results/gpu.md's table "What the measured rates mean for the goal": resnet50 and
# gpt2-medium at 2x oversubscription on the measured h100-sxm model, today's plan beside every
# baseline charged its own mechanism (Unified Memory for um and deepum, explicit copies for
# swap-layer, swap-opt and offload) and the lower bounds (the fastest legal path each way).
#
#   bash bench/sim/measured-rates.sh [BUILD_DIR]      (default: build)
#
# DEVICES and MODELS (space-separated) widen it to other built-in models and shipped profiles,
# e.g. DEVICES="v100-pcie-16gb h100-pcie h100-sxm" MODELS="resnet50 vgg16 ..." for the starting
# line of every row.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cmake --build "$build" --target deepum-sim deepum-plan >/dev/null
sim="$build/tools/deepum-sim"
plan="$build/tools/deepum-plan"
read -r -a devices <<<"${DEVICES:-h100-sxm}"
read -r -a models <<<"${MODELS:-resnet50 gpt2-medium}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for device in "${devices[@]}"; do
for model in "${models[@]}"; do
  profile="$root/tests/data/$model.profile.pb.gz"
  # The capacity deepum-sim --oversubscription 2 simulates, and the plan compiled for it.
  capacity="$("$sim" "$profile" --device "$device" --oversubscription 2 --policy ideal \
    --iterations 1 --warmup 0 --json |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_memory_bytes"])')"
  "$plan" "$profile" --device "$device" --gpu-memory "$capacity" --quiet \
    -o "$work/$device@$model.plan"
  "$sim" "$profile" --device "$device" --gpu-memory "$capacity" --plan "$work/$device@$model.plan" \
    --compare --json >"$work/$device@$model.json"
done
done
/usr/bin/python3 - "$work" "${#devices[@]}" "${devices[@]}" "${models[@]}" <<'PY'
import json, os, sys
work, ndev = sys.argv[1], int(sys.argv[2])
devices, models = sys.argv[3:3 + ndev], sys.argv[3 + ndev:]
cols = ["plan", "swap-layer", "swap-opt", "offload", "deepum", "um"]
dev_head = "device | " if ndev > 1 else ""
print(f"| {dev_head}model at 2x | ideal | lower bound | " + " | ".join(cols)
      + " | fastest baseline / plan |")
print("|---|" + ("---|" if ndev > 1 else "") + "---:|---:|" + "---:|" * len(cols) + "---:|")
for device, model in ((d, m) for d in devices for m in models):
    rs = {("plan" if r["policy"].startswith("plan") else r["policy"]): r
          for r in json.load(open(os.path.join(work, f"{device}@{model}.json")))}
    um = rs["um"]
    for pol, r in rs.items():
        if pol != "ideal" and r["iteration_us"] < um["lower_bound_us"] * (1 - 1e-9):
            sys.exit(f"measured-rates: {pol} on {model} beats the lower bound; no table")

    def cell(p):
        r = rs[p]
        text = f"{r['iteration_us'] / 1e3:,.1f} ms"
        if p == "offload" and r["policy_peak_bytes"] > r["gpu_memory_bytes"]:
            text += f" (OOM: needs {r['policy_peak_bytes'] / 2**30:.1f} GiB)"
        return text

    fits = [p for p in cols[1:]
            if p != "offload" or rs[p]["policy_peak_bytes"] <= rs[p]["gpu_memory_bytes"]]
    best = min(fits, key=lambda p: rs[p]["iteration_us"])
    lead = rs[best]["iteration_us"] / rs["plan"]["iteration_us"]
    dev_cell = f"{device} | " if ndev > 1 else ""
    print(f"| {dev_cell}{model} | {um['ideal_us'] / 1e3:,.1f} ms | {um['lower_bound_us'] / 1e3:,.1f} ms | "
          + " | ".join(cell(p) for p in cols) + f" | {lead:.3f} ({best}) |")
PY
