#!/usr/bin/env python3
"""What has run on a GPU is stated in one place, docs/results/gpu.md, which
each GPU run updates. Any other page that says whether a part has run on a
GPU goes stale with the next lease (the README said "not yet run on a GPU"
for three leases after the first): this check fails on such a line.

usage: gpu_status.py ROOT            check the tree
       gpu_status.py ROOT --self-test  the check fails on a planted line
"""
import pathlib
import re
import shutil
import sys
import tempfile

# Statements of GPU-run status: "(not yet|never|no) ... run on a GPU",
# "no GPU run yet", "has run on an H100".
STATUS = re.compile(
    r"(not yet|never|not been|has|have|had)\s+(been\s+)?run\s+on\s+(a|an|the)\s+(real\s+)?"
    r"(GPU|H100|H200|V100|A100)"
    r"|no\s+GPU\s+run(s)?\s+yet",
    re.IGNORECASE)
THE_PLACE = pathlib.PurePosixPath("docs/results/gpu.md")


def pages(root):
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root)
        if rel.parts[0].startswith(".") or rel.parts[0].startswith("build"):
            continue
        # Raw outputs of GPU runs speak of their own run.
        if rel.parts[:3] == ("bench", "gpu", "results"):
            continue
        if pathlib.PurePosixPath(*rel.parts) == THE_PLACE:
            continue
        yield path, rel


def check(root):
    found = []
    for path, rel in pages(root):
        # Lines joined in pairs: prose wraps inside the phrase.
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for i, line in enumerate(lines):
            pair = line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
            m = STATUS.search(pair)
            if m and m.start() < len(line):
                found.append(f"{rel}:{i + 1}: states GPU-run status ('{m.group(0)}'); "
                             f"say it in {THE_PLACE} only")
    return found


def self_test(root):
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp)
        (copy / "docs/results").mkdir(parents=True)
        shutil.copy(root / THE_PLACE, copy / THE_PLACE)
        (copy / "README.md").write_text("| replay | deepum-run | built; not yet\nrun on a GPU |\n")
        if not check(copy):
            print("FAIL: a wrapped 'not yet run on a GPU' in README.md was not found")
            return 1
        (copy / "README.md").write_text("See docs/results/gpu.md for GPU runs.\n")
        if check(copy):
            print("FAIL: a plain pointer to gpu.md was flagged")
            return 1
    print("ok: the check finds a planted status line and passes a pointer")
    return 0


def main():
    root = pathlib.Path(sys.argv[1])
    if sys.argv[2:] == ["--self-test"]:
        return self_test(root)
    found = check(root)
    for line in found:
        print(line)
    if not found:
        print("ok: no page but docs/results/gpu.md states what has run on a GPU")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
