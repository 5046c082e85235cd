"""GPU device models (simulator/devices/device-models.json) and the roofline that uses them."""

import json
import math
import os
from dataclasses import dataclass

from .pb import PACKAGE_DIR, REPO_ROOT

# Installed beside this module (python/CMakeLists.txt); in a source checkout, the one source.
DEFAULT_DEVICE_FILE = next(
    (path for path in (os.path.join(PACKAGE_DIR, "device-models.json"),
                       os.path.join(REPO_ROOT, "simulator", "devices", "device-models.json"))
     if os.path.isfile(path)),
    os.path.join(REPO_ROOT, "simulator", "devices", "device-models.json"))
DEFAULT_DEVICE_MODEL = "v100-pcie-16gb"

# The device-model file does not carry compute capability; it follows from the GPU family.
_COMPUTE_CAPABILITY = (("v100", 70), ("a100", 80), ("h100", 90), ("h200", 90))


@dataclass(frozen=True)
class DeviceModel:
    name: str
    memory_bytes: int
    link: str
    link_bytes_per_second: float
    matmul_flops_per_second: float
    vector_flops_per_second: float
    dram_bytes_per_second: float
    matmul_efficiency: float
    memory_efficiency: float
    kernel_min_us: float

    @property
    def compute_capability(self):
        for prefix, cc in _COMPUTE_CAPABILITY:
            if self.name.startswith(prefix):
                return cc
        return 0

    def kernel_ns(self, flops, dram_bytes, matmul):
        """Roofline duration of one kernel in ns: the slower of compute and memory, never
        below the launch floor. Vector ops use the vector peak with the same achievable
        fraction as matmuls (the file has one compute efficiency)."""
        peak = self.matmul_flops_per_second if matmul else self.vector_flops_per_second
        compute_s = flops / (peak * self.matmul_efficiency)
        memory_s = dram_bytes / (self.dram_bytes_per_second * self.memory_efficiency)
        return max(math.ceil(compute_s * 1e9), math.ceil(memory_s * 1e9),
                   math.ceil(self.kernel_min_us * 1e3))


def _models(path):
    try:
        with open(path) as f:
            models = json.load(f)["models"]
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: invalid JSON: {e}") from None
    return {m["name"]: m for m in models if isinstance(m, dict) and "name" in m}


def _check_fields(fields, builtin, name, path):
    """Refuses what deepum-plan and deepum-sim refuse in a device file (base/lib/DeviceModel.cpp):
    a field no built-in model has (a typo must not pass silently), a negative number."""
    known = {"name", "sources", "comment"}.union(*(m.keys() for m in builtin.values()))
    for key, value in fields.items():
        if key not in known:
            raise ValueError(f"{path}: model '{name}': unknown field '{key}'")
        if key in ("name", "sources", "comment", "link"):
            continue
        if any(isinstance(m.get(key), bool) for m in builtin.values()):
            # eviction_copies_clean, copies_share_um_engines, populates_hold_copy_engine:
            # the booleans of the file.
            if not isinstance(value, bool):
                raise ValueError(f"{path}: model '{name}': '{key}' must be true or false")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{path}: model '{name}': '{key}' must be a non-negative number")
        elif not math.isfinite(value):
            # Python's json reads NaN and Infinity; NaN also passes `value < 0`.
            raise ValueError(f"{path}: model '{name}': '{key}' must be a finite number, not {value}")


def load_device_model(name=DEFAULT_DEVICE_MODEL, path=None):
    """The device model `name`, as deepum-plan and deepum-sim load it (--device, --device-file):
    the built-in model, with the fields of the model of that name in `path` over it; a model
    only `path` has must set every field the roofline needs."""
    builtin = _models(DEFAULT_DEVICE_FILE)
    m = dict(builtin.get(name, {}))
    if path:
        over = _models(path)
        if name not in over and name not in builtin:
            raise ValueError(f"{path}: no device model named '{name}' here or built in")
        _check_fields(over.get(name, {}), builtin, name, path)
        m.update(over.get(name, {}))
    elif not m:
        raise ValueError(f"unknown device model '{name}' (known: {', '.join(builtin)})")
    try:
        return DeviceModel(
            name=name, memory_bytes=int(m["memory_bytes"]), link=m["link"],
            link_bytes_per_second=float(m["link_bytes_per_second"]),
            matmul_flops_per_second=float(m["matmul_flops_per_second"]),
            vector_flops_per_second=float(m["vector_flops_per_second"]),
            dram_bytes_per_second=float(m["dram_bytes_per_second"]),
            matmul_efficiency=float(m["matmul_efficiency"]),
            memory_efficiency=float(m["memory_efficiency"]),
            kernel_min_us=float(m["kernel_min_us"]))
    except KeyError as e:
        raise ValueError(f"{path}: model '{name}' does not set {e.args[0]}") from None
