"""Runs a training command and reads the GPU's energy counter at each step it reports.

    python3 bench/gpu/energy.py OUT.json [--device N] -- python3 train.py ...

The command's output passes through unchanged, and this exits with its status.
At start, and each time the command prints a line beginning "step " (what the
example scripts print once the step's work is done and synchronized), it reads
NVML's total energy counter (millijoules since the driver loaded) and the
time. OUT.json then holds, per step line, the energy and time since the line
before: the energy of that step, start-up included in the first. Where NVML
or its counter is not readable (no driver, a GPU before Volta, a machine that
hides it), OUT.json says why and the command runs all the same.

NVML is reached through ctypes on libnvidia-ml.so.1, so nothing need be
installed beside the driver.
"""
import ctypes
import json
import subprocess
import sys
import time


class Nvml:
    """The one counter read: nvmlDeviceGetTotalEnergyConsumption, in mJ."""

    def __init__(self, index):
        self.handle = None
        self.why_not = None
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            self.why_not = f"libnvidia-ml.so.1 cannot be loaded: {e}"
            return
        rc = self.lib.nvmlInit_v2()
        if rc != 0:
            self.why_not = f"nvmlInit_v2 returned {rc}"
            return
        handle = ctypes.c_void_p()
        rc = self.lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle))
        if rc != 0:
            self.why_not = f"nvmlDeviceGetHandleByIndex_v2({index}) returned {rc}"
            return
        self.handle = handle
        if self.read() is None:
            self.handle = None

    def read(self):
        """Millijoules since the driver loaded, or None (why_not says why)."""
        if self.handle is None:
            return None
        mj = ctypes.c_ulonglong()
        rc = self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(mj))
        if rc != 0:
            self.why_not = f"nvmlDeviceGetTotalEnergyConsumption returned {rc}"
            return None
        return mj.value


def main(argv):
    if "--" not in argv or argv.index("--") < 1:
        print("usage: energy.py OUT.json [--device N] -- COMMAND...", file=sys.stderr)
        return 2
    sep = argv.index("--")
    opts, command = argv[:sep], argv[sep + 1:]
    if not command:
        print("energy.py: no command after --", file=sys.stderr)
        return 2
    out = opts[0]
    device = 0
    if len(opts) == 3 and opts[1] == "--device":
        device = int(opts[2])
    elif len(opts) != 1:
        print("usage: energy.py OUT.json [--device N] -- COMMAND...", file=sys.stderr)
        return 2
    nvml = Nvml(device)
    last_mj, last_t = nvml.read(), time.perf_counter()
    steps = []
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1)
    except OSError as e:
        print(f"energy.py: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
        return 127
    for line in child.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if not line.startswith("step "):
            continue
        mj, t = nvml.read(), time.perf_counter()
        steps.append({
            "line": line.strip(),
            "seconds": t - last_t,
            "energy_j": (mj - last_mj) / 1e3 if mj is not None and last_mj is not None else None,
        })
        last_mj, last_t = mj, t
    rc = child.wait()
    report = {"device": device, "command": command, "exit_status": rc,
              "energy_readable": nvml.handle is not None and nvml.why_not is None,
              "why_not": nvml.why_not, "steps": steps}
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
