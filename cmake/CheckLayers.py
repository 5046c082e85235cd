#!/usr/bin/env python3
"""Checks that deepum's components include only what lies below them.

    CheckLayers.py [--root DIR] [--quiet]

The layers, bottom up (docs/layers.md):

    0  base                      hashing, byte sizes, log, errors, device model
    1  format (proto/), cupti    file formats; the shared CUPTI subscriber
    2  profiler, planner, simulator
    3  executor, standin         libdeepum; the CUDA stand-in
    4  tools                     the command-line tools' mains and library

A component may include its own headers and those of any lower layer; two
components of one layer do not include each other. tests/, bench/, fuzz/ and
examples/ may include anything; python/ holds no C++. Every
`#include "deepum/<name>/..."` (or <...>) in a component's sources and
headers is checked; a violation prints FILE:LINE and the edge, and the exit
code is 1. ALLOWED lists the exceptions, each with its reason; it is empty.
"""

import argparse
import os
import re
import sys

# Directory -> (component, layer).
COMPONENTS = {
    "base": ("base", 0),
    "proto": ("format", 1),
    "cupti": ("cupti", 1),
    "profiler": ("profiler", 2),
    "planner": ("planner", 2),
    "simulator": ("simulator", 2),
    "executor": ("executor", 3),
    "standin": ("standin", 3),
    "tools": ("tools", 4),
}

# The first path element after deepum/ -> the component that owns it.
# deepum/deepum.h and deepum.hpp are the executor's C and C++ API;
# deepum/v1/*.pb.h are generated from proto/deepum/v1.
OWNERS = {
    "base": "base",
    "format": "format",
    "v1": "format",
    "cupti": "cupti",
    "profiler": "profiler",
    "planner": "planner",
    "sim": "simulator",
    "executor": "executor",
    "deepum.h": "executor",
    "deepum.hpp": "executor",
    "standin": "standin",
    "tools": "tools",
}

# (from, to) edges allowed although they point upward or sideways, with why.
ALLOWED = {}

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".c", ".cu", ".cuh", ".inc", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]deepum/([^/">]+)')


def layer_of(component):
    for name, layer in COMPONENTS.values():
        if name == component:
            return layer
    raise KeyError(component)


def check_file(path, rel, component):
    """Yields one message per include of `path` that points up or sideways."""
    own = layer_of(component)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        yield f"{rel}: cannot read: {e.strerror}"
        return
    for number, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        target = OWNERS.get(m.group(1))
        if target is None:
            yield (f"{rel}:{number}: includes deepum/{m.group(1)}/, which no component owns "
                   f"(known: {', '.join(sorted(OWNERS))})")
            continue
        if target == component or (component, target) in ALLOWED:
            continue
        theirs = layer_of(target)
        if theirs < own:
            continue
        where = "above" if theirs > own else "beside"
        yield (f"{rel}:{number}: {component} (layer {own}) includes {target} (layer {theirs}), "
               f"which is {where} it: {line.strip()}")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the source tree to check (default: this script's)")
    parser.add_argument("--quiet", action="store_true", help="print nothing when the check passes")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.root):
        print(f"{args.root}: not a directory", file=sys.stderr)
        return 2
    problems = []
    checked = 0
    for directory, (component, _) in sorted(COMPONENTS.items()):
        top = os.path.join(args.root, directory)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                checked += 1
                problems.extend(check_file(path, os.path.relpath(path, args.root), component))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"layering: {len(problems)} include(s) point up or sideways (cmake/CheckLayers.py)",
              file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"layering: {checked} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
