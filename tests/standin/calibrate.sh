#!/usr/bin/env bash
# deepum-calibrate on the CUDA stand-in with device model DEVICE: the device
# file it writes must be accepted by deepum-sim (--device DEVICE --device-file)
# and give back the model's own parameters within 10% (the stand-in's UM model
# is deepum-sim's engine, so this checks the measurement method), and its
# report must hold every measurement.
#
# With --discarded-data after DEVICE (a model that gives discarded data a
# cost), the populate and discarded-fault costs are checked too, and so is the
# report's kernel writing discarded blocks while their populate is in flight
# on another stream: the model charges that kernel the whole discarded fault
# (docs/simulator.md), so the figure must come back as the fault.
#
# With DEEPUM_STANDIN_DEVICE_FILE set, the stand-in's model is DEVICE with
# that file's fields over it, and the populate beside a copy is checked
# against the file's populates_hold_copy_engine.
#
# usage: calibrate.sh STANDIN_LIB_DIR DEEPUM_CALIBRATE DEEPUM_SIM PYTHON CHECKER
#                     DEVICE_MODELS_JSON PROFILE DEVICE [--discarded-data]
set -euo pipefail
lib=$1 calibrate=$2 sim=$3 python=$4 checker=$5 models=$6 profile=$7 device=$8
discarded=${9:-}
over=${DEEPUM_STANDIN_DEVICE_FILE:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

env LD_LIBRARY_PATH="$lib" DEEPUM_PROGRESS=always DEEPUM_STANDIN_DEVICE="$device" DEEPUM_STANDIN_GPU_MEMORY=256MiB \
  "$calibrate" --out "$out/device.json" --report "$out/report.md" --name "$device" \
  --max-bytes 16MiB --repeats 3 --call-clock stream
cat "$out/device.json"

"$sim" --device "$device" --device-file "$out/device.json" --policy um --iterations 1 \
  "$profile" > "$out/sim.txt"
grep -q "^policy um on $device" "$out/sim.txt"

# Recovered: the link rate in both directions (host->device prefetches timed
# to a kernel that waits for their pages; device->host ones by the event after
# them, which the stand-in, like CUDA, completes when their copies end), the
# per-call cost (stream clock: the stand-in's host clock is its own CPU time,
# not the model's) and the fault costs.
"$python" "$checker" "$out/device.json" "$models" "$device" 0.10 \
  link_bytes_per_second device_to_host_bytes_per_second transfer_call_us transfer_range_us \
  fault_batch_latency_us fault_block_service_us

grep -q '^| prefetch host->device (+ probe kernel) | 16 MiB | ' "$out/report.md"
grep -q '^| cudaMemDiscardBatchAsync, host clock | 64 ranges | ' "$out/report.md"
grep -q '^| first touch, host-resident: 2 MiB stride, 16 MiB | 8 touches | ' "$out/report.md"
grep -q '^| device->host rate (plateau) | [0-9.e+]* B/s | device_to_host_bytes_per_second |' "$out/report.md"
grep -q '^| write-back of dirty pages | [0-9.e+]* B/s | report only |' "$out/report.md"

# The copy path, per 2 MiB block (report only): out is a copy of GPU-written
# managed memory to a pinned slot at the model's managed-to-host rate plus a
# discard; in, a populate (the model's populate_block_us) plus a copy at its
# host-to-device rate; the data
# came back (deepum-calibrate fails otherwise). Each within 10% of 2 MiB at
# the model's rate.
"$python" - "$out/report.md" "$models" "$device" "$out/device.json" "$over" <<'PY'
import json, re, sys
report, models, name, written, over = sys.argv[1:]
line = [l for l in open(report) if l.startswith("| the copy path, per 2 MiB block |")]
assert len(line) == 1, f"no copy-path line in {report}"
out, back = (float(x) for x in re.search(
    r"out \(copy to a pinned slot \+ discard\) ([0-9.]+) us, in \(populate \+ copy back\) "
    r"([0-9.]+) us", line[0]).groups())
model = next(m for m in json.load(open(models))["models"] if m["name"] == name)
if over:
    model.update(next(m for m in json.load(open(over))["models"] if m["name"] == name))
want_out = 2 * 2**20 / model["copy_managed_to_host_bytes_per_second"] * 1e6
want_in = (2 * 2**20 / model["copy_host_to_device_bytes_per_second"] * 1e6
           + model.get("populate_block_us", 0))
for what, got, want in (("out", out, want_out), ("in", back, want_in)):
    assert abs(got - want) <= 0.10 * want, f"copy path {what}: {got} us, the model's {want:.2f} us"
print(f"copy path per block: out {out} us (model {want_out:.2f}), in {back} us (model {want_in:.2f})")
# A populate beside a copy back: on a model whose populates hold the copy
# engine, both at once take the sum; else the larger of the two. The device
# file says which (populates_hold_copy_engine).
beside = [l for l in open(report) if l.startswith("| a populate beside a copy back, per 2 MiB block |")]
assert len(beside) == 1, f"no populate-beside-a-copy line in {report}"
held = re.search(r"\(([0-9]+)% of the populate held the copy\)", beside[0])
fields = json.load(open(written))["models"][0]
if model.get("populate_block_us", 0) > 0:
    assert held, beside[0]
    hold = model.get("populates_hold_copy_engine", True)
    assert (int(held.group(1)) >= 90) if hold else (int(held.group(1)) <= 10), \
        f"populates_hold_copy_engine {hold}, but: {beside[0].strip()}"
    assert fields.get("populates_hold_copy_engine") is hold, fields
    print(f"populate beside a copy: {held.group(1)}% held (populates_hold_copy_engine {hold})")
else:
    assert "the populate takes no time here" in beside[0], beside[0]
    assert "populates_hold_copy_engine" not in fields, fields
PY

# The model charges no time for advice.
grep -q '^| cudaMemAdvise (one call per range), stream clock | 1 range | 0.000 | ' "$out/report.md"

if [[ $discarded == --discarded-data ]]; then
  # The first write to discarded blocks comes back 8% high on the stand-in:
  # the figure includes the fault service, which the model charges besides.
  "$python" "$checker" "$out/device.json" "$models" "$device" 0.10 \
    populate_block_us discarded_fault_block_us
  "$python" - "$out/report.md" "$models" "$device" <<'PY'
import json, re, sys
report, models, name = sys.argv[1:]
line = [l for l in open(report) if l.startswith(
    "| a kernel's first write to discarded blocks, their populate in flight, per 2 MiB block |")]
assert len(line) == 1, f"no in-flight line in {report}"
got = float(re.search(r"\| ([0-9.]+) us beyond resident \|", line[0]).group(1))
want = next(m for m in json.load(open(models))["models"] if m["name"] == name)[
    "discarded_fault_block_us"]
error = abs(got - want) / want
print(f"{'ok' if error <= 0.05 else 'FAIL'}: first write with the populate in flight: "
      f"measured {got:.6g} us, model's discarded fault {want:.6g} us ({error:.2%} off)")
sys.exit(0 if error <= 0.05 else 1)
PY
fi
