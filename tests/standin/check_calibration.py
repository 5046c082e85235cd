"""Checks a device file written by deepum-calibrate against a built-in model.

The stand-in's Unified Memory model is deepum-sim's engine with the built-in
model's parameters, so calibrating on it must give them back: each field
named is compared with the model's own value and fails beyond the tolerance.

usage: check_calibration.py DEVICE_FILE DEVICE_MODELS_JSON NAME TOLERANCE FIELD...
"""
import json
import sys


def main(argv):
    if len(argv) < 6:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    device_file, builtin_file, name, tolerance, fields = (
        argv[1], argv[2], argv[3], float(argv[4]), argv[5:])
    with open(device_file) as f:
        written = json.load(f)
    with open(builtin_file) as f:
        builtin = json.load(f)
    if written.get("format") != builtin["format"]:
        print(f"FAIL: format {written.get('format')!r}, expected {builtin['format']!r}")
        return 1
    models = [m for m in written["models"] if m.get("name") == name]
    expected = [m for m in builtin["models"] if m["name"] == name]
    if len(models) != 1 or len(expected) != 1:
        print(f"FAIL: model {name!r} not once in {device_file} and the built-in models")
        return 1
    model, truth = models[0], expected[0]
    failed = False
    for field in fields:
        if field not in model:
            print(f"FAIL: {field}: not written")
            failed = True
            continue
        # A model without a device->host rate moves both directions at its
        # link rate (docs/simulator.md).
        want = truth.get(field, truth["link_bytes_per_second"]
                         if field == "device_to_host_bytes_per_second" else None)
        if want is None:
            print(f"FAIL: {field}: not in the built-in model {name!r}")
            failed = True
            continue
        got, want = float(model[field]), float(want)
        error = abs(got - want) / want if want else abs(got)
        verdict = "ok" if error <= tolerance else "FAIL"
        failed |= verdict == "FAIL"
        print(f"{verdict}: {field}: measured {got:.6g}, model {want:.6g} ({error:.2%} off)")
        source = model.get("sources", {}).get(field, "")
        if not source.startswith("measured by deepum-calibrate on "):
            print(f"FAIL: {field}: source {source!r}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
