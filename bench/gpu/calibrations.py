#!/usr/bin/env python3
"""Every calibration of a GPU run side by side:

    calibrations.py RESULTS_DIR

Reads each CALL/calibrate.device.json under RESULTS_DIR (deepum-calibrate's
device file) and the explicit-copy rates of CALL/calibrate.report.md, and
prints one Markdown table, a column per call that calibrated (a file copied
from an earlier call is skipped) and the largest ratio between two calls for
each figure. docs/results/gpu.md quotes it (ctest
gpu_calibrations).
"""
import json
import re
import sys
from pathlib import Path

# (row, how to read it from (model, sources, report), format)
GB = 1e9


def source_rate(sources, what):
    m = re.search(what + r" ([0-9.e+]+) B/s", sources.get("link_bytes_per_second", ""))
    return float(m.group(1)) if m else None


def report_rate(report, what):
    m = re.search(r"\| " + re.escape(what) + r" \| ([0-9.e+]+) B/s \| report only \|", report)
    return float(m.group(1)) if m else None


ROWS = [
    ("host→device prefetch, GB/s", lambda m, s, r: m.get("link_bytes_per_second"), GB, "{:.1f}"),
    ("device→host prefetch, GB/s", lambda m, s, r: source_rate(s, "device->host"), GB, "{:.2f}"),
    ("dirty write-back, GB/s", lambda m, s, r: source_rate(s, "dirty write-back"), GB, "{:.2f}"),
    ("fault batch latency, µs", lambda m, s, r: m.get("fault_batch_latency_us"), 1, "{:.1f}"),
    ("fault service per 2 MiB block, µs", lambda m, s, r: m.get("fault_block_service_us"), 1,
     "{:.2f}"),
    ("host time per transfer call, µs", lambda m, s, r: m.get("transfer_call_us"), 1, "{:.2f}"),
    ("populate per block, µs", lambda m, s, r: m.get("populate_block_us"), 1, "{:.1f}"),
    ("a kernel's first write to a discarded block, µs",
     lambda m, s, r: m.get("discarded_fault_block_us"), 1, "{:,.0f}"),
    ("cudaMemcpyAsync device → pinned host, GB/s",
     lambda m, s, r: report_rate(r, "cudaMemcpyAsync device->pinned host"), GB, "{:.1f}"),
    ("cudaMemcpyAsync GPU-written managed → pinned host, GB/s",
     lambda m, s, r: report_rate(r, "cudaMemcpyAsync GPU-written managed->pinned host"), GB,
     "{:.1f}"),
]


def call_order(name):
    m = re.search(r"(\d+)$", name)
    return (int(m.group(1)) if m else 0, name)


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = Path(argv[0])
    calls = sorted((d for d in root.iterdir() if (d / "calibrate.device.json").is_file()),
                   key=lambda d: call_order(d.name))
    if not calls:
        print(f"calibrations.py: {root}: no CALL/calibrate.device.json", file=sys.stderr)
        return 1
    columns, seen = [], {}
    for d in calls:
        f = d / "calibrate.device.json"
        # A call that carried an earlier call's file (call10 took call9's) measured nothing.
        if f.read_bytes() in seen:
            continue
        seen[f.read_bytes()] = d.name
        try:
            model = json.loads(f.read_text())["models"][0]
        except (ValueError, KeyError, IndexError) as e:
            print(f"calibrations.py: {f}: not a deepum-calibrate device file ({e})", file=sys.stderr)
            return 1
        report = (d / "calibrate.report.md").read_text() if (d / "calibrate.report.md").is_file() else ""
        columns.append((d.name, model, model.get("sources", {}), report))
    print("| figure | " + " | ".join(c[0] for c in columns) + " | largest / smallest |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for row, read, unit, fmt in ROWS:
        values = [read(m, s, r) for _, m, s, r in columns]
        cells = [fmt.format(v / unit) if v is not None else "—" for v in values]
        known = [v for v in values if v]
        spread = f"{max(known) / min(known):.2f}" if len(known) > 1 else "—"
        print(f"| {row} | " + " | ".join(cells) + f" | {spread} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
