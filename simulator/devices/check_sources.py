#!/usr/bin/env python3
"""Every parameter of every device model names where it comes from.

    check_sources.py [DEVICE_MODELS_JSON ...]
    check_sources.py --self-test       (each kind of gap, made in a copy, is caught)

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
    r"\bassumed\b|\bmeasured\b|\bdatasheet\b|github\.com|nvidia\.com|\bet al\.|nvidia-uvm|"
    r"docs/results|\bderived\b", re.IGNORECASE)
# Phrases that deny an origin ("not measured", "no datasheet") are taken out before the search.
DENIALS = re.compile(r"\b(?:not|no|never|nor|without)\s+(?:\w+\s+)?"
                     r"(?:measured|datasheet|derived|sourced)\b|\bun(?:measured|sourced)\b",
                     re.IGNORECASE)
SAME_AS = re.compile(r"\bas ([a-z0-9][a-z0-9_.-]*[a-z0-9])")
ALWAYS = ("device_to_host_bytes_per_second",)
NOT_PARAMETERS = ("name", "sources")


def names_origin(text, model, names):
    """Whether `text` names where a figure comes from (see the module's doc)."""
    if ORIGINS.search(DENIALS.sub(" ", text)):
        return True
    return any((t in model and t not in NOT_PARAMETERS) or t in names
               for t in SAME_AS.findall(text))


def check(path):
    doc = json.loads(Path(path).read_text())
    models = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(models, list) or not models:
        return [f"{path}: no models to check"]
    failures = []
    names = {m.get("name") for m in models}
    # A measured file (one in the folder measured/) lays its fields over a built-in model; it
    # sources what it sets.
    measured_file = Path(path).resolve().parent.name == "measured"
    for model in models:
        name = model.get("name", "?")
        sources = model.get("sources", {})
        fields = [k for k in model if k not in NOT_PARAMETERS]
        if not measured_file:
            fields += [k for k in ALWAYS if k not in model]
        for field in fields:
            text = sources.get(field, "").strip()
            if not text:
                failures.append(f"{path}: {name}.{field}: no source")
            elif not names_origin(text, model, names):
                failures.append(f"{path}: {name}.{field}: the source names no origin: {text[:80]!r}")
        for field in sources:
            if field not in model and field not in ALWAYS:
                failures.append(f"{path}: {name}: a source for {field}, which the model does not set")
    return failures


def self_test(builtin):
    """The checker must catch each kind of gap in a copy of the built-in models."""
    import copy
    import tempfile
    doc = json.loads(Path(builtin).read_text())
    broken = {
        "a source removed": lambda d: d["models"][0]["sources"].pop("link_bytes_per_second"),
        "a source that names nothing": lambda d: d["models"][0]["sources"].update(
            dram_bytes_per_second="HBM2 900 GB/s"),
        "an origin denied": lambda d: d["models"][0]["sources"].update(
            kernel_min_us="not measured, a guess"),
        "the device-to-host rate unsourced": lambda d: d["models"][0]["sources"].pop(
            "device_to_host_bytes_per_second"),
        "no models": lambda d: d.pop("models"),
    }
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        for what, breaks in broken.items():
            d = copy.deepcopy(doc)
            breaks(d)
            path = Path(tmp) / "device-models.json"
            path.write_text(json.dumps(d))
            if not check(str(path)):
                missed.append(what)
    if check(builtin):
        missed.append("(the built-in file itself fails)")
    for what in missed:
        print(f"FAIL: self-test: {what} was not caught")
    if not missed:
        print(f"ok: self-test: {len(broken)} kinds of gap caught")
    return 1 if missed else 0


def main(argv):
    root = Path(__file__).resolve().parent
    if argv[:1] == ["--self-test"]:
        return self_test(str(root / "device-models.json"))
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
