#!/usr/bin/env python3
"""Every parameter of every device model names where it comes from.

    check_sources.py [DEVICE_MODELS_JSON ...]

Defaults to simulator/devices/device-models.json and the measured files beside it.
Each field of a model (but its name) needs an entry in the model's `sources`, and
each entry must either say `assumed`, or name its origin: a measurement
(`measured`), a publication or document (a datasheet, a repository or web page, a
paper with `et al.`, the nvidia-uvm driver's source, a page of docs/results), a
derivation from such figures (`derived`), or another field or model it is the same
as (`as NAME`). The device-to-host rate needs an entry even where the field is not
set (it is then the link rate, itself a claim). A field that is set but has no
source, or a source that names nothing, fails with one line naming both.
"""
import json
import re
import sys
from pathlib import Path

ORIGINS = re.compile(
    r"assumed|measured|datasheet|github\.com|nvidia\.com|et al\.|nvidia-uvm|docs/results|"
    r"derived", re.IGNORECASE)
SAME_AS = re.compile(r"\bas ([a-z0-9][a-z0-9_.-]*[a-z0-9])")
ALWAYS = ("device_to_host_bytes_per_second",)
NOT_PARAMETERS = ("name", "sources")


def check(path):
    doc = json.loads(Path(path).read_text())
    failures = []
    names = {m.get("name") for m in doc.get("models", [])}
    for model in doc.get("models", []):
        name = model.get("name", "?")
        sources = model.get("sources", {})
        fields = [k for k in model if k not in NOT_PARAMETERS]
        # A measured file lays its fields over a built-in model; it sources what it sets.
        if "measured" not in Path(path).parts:
            fields += [k for k in ALWAYS if k not in model]
        for field in fields:
            text = sources.get(field, "").strip()
            if not text:
                failures.append(f"{path}: {name}.{field}: no source")
            elif not ORIGINS.search(text) and not any(
                    t in model or t in names for t in SAME_AS.findall(text)):
                failures.append(f"{path}: {name}.{field}: the source names no origin: {text[:80]!r}")
        for field in sources:
            if field not in model and field not in ALWAYS:
                failures.append(f"{path}: {name}: a source for {field}, which the model does not set")
    return failures


def main(argv):
    root = Path(__file__).resolve().parent
    paths = argv or [str(root / "device-models.json")] + sorted(
        str(p) for p in (root / "measured").glob("*.json"))
    failures = [f for p in paths for f in check(p)]
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print(f"ok: every parameter of {len(paths)} file(s) names its source")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
