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

It also samples the GPU's memory in use (nvmlDeviceGetMemoryInfo: every
allocation on the device, managed memory resident there included, the pool's
reserved segments and other processes' too) on a thread every
DEEPUM_GPU_MEMORY_POLL_MS milliseconds (default 5) and at each step line:
OUT.json has the used bytes before the command started, each step's peak and
the peak over the run, so a run's residency is measured, not taken from the
executor's ledger.

NVML is reached through ctypes on libnvidia-ml.so.1, so nothing need be
installed beside the driver.
"""
import ctypes
import json
import os
import subprocess
import sys
import threading
import time


class MemoryInfo(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


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

    def used_bytes(self):
        """Device memory in use, in bytes, or None."""
        if self.handle is None:
            return None
        info = MemoryInfo()
        if self.lib.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(info)) != 0:
            return None
        return info.used


class MemorySampler:
    """The peak of the device's used memory, read on a thread and at every step line."""

    def __init__(self, nvml, interval_s):
        self.nvml, self.interval_s = nvml, interval_s
        self.lock = threading.Lock()
        self.window = None  # peak since the last step line
        self.peak = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        used = self.nvml.used_bytes()
        if used is None:
            return
        with self.lock:
            self.window = used if self.window is None else max(self.window, used)
            self.peak = used if self.peak is None else max(self.peak, used)

    def _run(self):
        while not self.stop.wait(self.interval_s):
            self.sample()

    def take_window(self):
        self.sample()
        with self.lock:
            w, self.window = self.window, None
        return w

    def start(self):
        self.thread.start()

    def finish(self):
        self.stop.set()
        self.thread.join()
        self.sample()


def main(argv, nvml=None):
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
    nvml = nvml or Nvml(device)
    used_before = nvml.used_bytes()
    sampler = MemorySampler(nvml, float(os.environ.get("DEEPUM_GPU_MEMORY_POLL_MS", "5")) / 1e3)
    last_mj, last_t = nvml.read(), time.perf_counter()
    steps = []
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1)
    except OSError as e:
        print(f"energy.py: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
        return 127
    if used_before is not None:
        sampler.start()
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
            "used_peak_bytes": sampler.take_window() if used_before is not None else None,
        })
        last_mj, last_t = mj, t
    rc = child.wait()
    if used_before is not None:
        sampler.finish()
    report = {"device": device, "command": command, "exit_status": rc,
              "energy_readable": nvml.handle is not None and nvml.why_not is None,
              "why_not": nvml.why_not,
              "memory_readable": used_before is not None,
              "used_before_bytes": used_before,
              "peak_used_bytes": sampler.peak if used_before is not None else None,
              "steps": steps}
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
