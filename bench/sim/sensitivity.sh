#!/usr/bin/env bash
# Regenerates docs/results/sensitivity.md: deepum-plan against every baseline at 2x
# oversubscription as the per-call API cost (transfer_call_us: 0 / 5 / 20 us) and the
# link rate (0.5x / 1x of link_bytes_per_second) vary, and, at the default call cost, with
# the device-to-host rate at 0.19 of the host-to-device rate (the ratio deepum-calibrate
# measured on an H100: 9.16 against 47.8 GB/s, docs/results/gpu.md) or with the fault service
# deepum-calibrate measured there (the built-in h100-sxm's fault_batch_latency_us and
# fault_block_service_us), on v100-pcie-16gb, h100-pcie and the measured h100-sxm, for every
# shipped model but
# resnet50-b32 (the planner-speed profile).
#
# Each variant is a full copy of the built-in model (simulator/devices/device-models.json)
# with those fields changed, written to a device file that both deepum-plan and
# deepum-sim read (--device-file): the plan is compiled for the device it is judged on.
# The explicit-copy rates (the swapping baselines' mechanism) scale with the link; transfer_range_us
# and every other field keep their defaults.
#
#   bash bench/sim/sensitivity.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cmake --build "$build" --target deepum-sim deepum-plan >/dev/null
sim="$build/tools/deepum-sim"
plan="$build/tools/deepum-plan"
models=(resnet50 vgg16 vit_b_16 bert-large gpt2-medium bart-large llama-1b llama-1b-ckpt)
devices=(v100-pcie-16gb h100-pcie h100-sxm)
calls=(0 5 20)
links=(0.5 1)
# Variants "call link dtoh faults": every call cost and link rate with the device-to-host rate
# equal to the host-to-device rate (dtoh 1) and the model's own fault service; then, at the
# default call cost and each link rate, the device-to-host rate at the measured fraction, and
# the fault service of the measured model.
measured_dtoh=0.19
measured_faults=h100-sxm
variants=()
for call in "${calls[@]}"; do
  for link in "${links[@]}"; do
    variants+=("$call $link 1 own")
  done
done
for link in "${links[@]}"; do
  variants+=("20 $link $measured_dtoh own")
done
for link in "${links[@]}"; do
  variants+=("20 $link 1 $measured_faults")
done
ratio=2
iterations=12
warmup=6
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for device in "${devices[@]}"; do
  for variant in "${variants[@]}"; do
    read -r call link dtoh faults <<<"$variant"
    /usr/bin/python3 - "$root/simulator/devices/device-models.json" "$device" "$call" "$link" \
      "$dtoh" "$faults" >"$work/$device@$call@$link@$dtoh@$faults.device.json" <<'PY'
import json, sys
src, name = sys.argv[1], sys.argv[2]
call, link, dtoh = (float(x) for x in sys.argv[3:6])
faults = sys.argv[6]
doc = json.load(open(src))
model = next(m for m in doc["models"] if m["name"] == name)
if faults != "own":  # the fault service of another (measured) model
    other = next(m for m in doc["models"] if m["name"] == faults)
    for field in ("fault_batch_latency_us", "fault_block_service_us"):
        model[field] = other[field]
link0 = model["link_bytes_per_second"]
out0 = model.get("device_to_host_bytes_per_second", 0) or link0  # 0: the link rate
model["transfer_call_us"] = call
model["link_bytes_per_second"] = link0 * link
# dtoh 1: the model's own device-to-host rate, scaled with the link; below 1: that
# fraction of the (scaled) host-to-device rate.
model["device_to_host_bytes_per_second"] = out0 * link if dtoh == 1 else link0 * link * dtoh
for field in ("copy_host_to_device_bytes_per_second", "copy_device_to_host_bytes_per_second",
              "copy_managed_to_host_bytes_per_second"):
    if model.get(field):
        model[field] *= link
json.dump({"format": doc["format"], "models": [model]}, sys.stdout, indent=1)
PY
  done
done

for model in "${models[@]}"; do
  profile="$root/tests/data/$model.profile.pb.gz"
  if [[ ! -f "$profile" ]]; then
    echo "sensitivity: $profile is missing" >&2
    exit 1
  fi
  for device in "${devices[@]}"; do
    # Capacity = footprint / ratio as deepum-sim --oversubscription computes it (bytes, not
    # rounded to whole 2 MiB blocks as deepum-plan-results does); the same bytes go to deepum-plan.
    capacity="$("$sim" "$profile" --device "$device" --oversubscription "$ratio" --policy ideal \
      --iterations 1 --warmup 0 --json |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_memory_bytes"])')"
    for variant in "${variants[@]}"; do
      read -r call link dtoh faults <<<"$variant"
      key="$model@$device@$call@$link@$dtoh@$faults"
      dev="$work/$device@$call@$link@$dtoh@$faults.device.json"
      echo "sensitivity: $key" >&2
      "$plan" "$profile" --gpu-memory "$capacity" --device "$device" --device-file "$dev" \
        --quiet -o "$work/$key.plan"
      "$sim" "$profile" --device "$device" --device-file "$dev" --gpu-memory "$capacity" \
        --plan "$work/$key.plan" --compare --json --iterations "$iterations" \
        --warmup "$warmup" >"$work/$key.json"
    done
  done
done
/usr/bin/python3 "$root/bench/sim/sensitivity.py" --runs "$work" --out "$root/docs/results/sensitivity.md" \
  --iterations "$iterations" --warmup "$warmup" --ratio "$ratio" \
  --models "${models[@]}" --devices "${devices[@]}" --variants "${variants[@]}"
