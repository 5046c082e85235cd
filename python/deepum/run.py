"""deepum-run: run an unmodified training command with deepum as its allocator.

    python3 -m deepum.run [--plan PLAN] [--gpu-memory SIZE] [--stats FILE] [--log LEVEL]
                          [--strict] [--python | --no-python] -- COMMAND ARGS...

For a Python command the child interpreter imports deepum at start-up (through
a sitecustomize on PYTHONPATH) and enables it before the script runs. Any
other command (a CUDA C++ program built with `nvcc -cudart shared`) gets
libdeepum_interpose.so preloaded: its own cudaMallocManaged, cudaMalloc and
cudaFree become libdeepum's deepum_malloc and deepum_free. A command is
Python as deepum-profile decides it (the program is python, python3 or
python3.X, directly, through env, or on a script's #! line); --python and
--no-python override the guess. Under torchrun (either
`deepum-run -- torchrun ...` or `torchrun --no-python deepum-run ...`) every
worker enables deepum and the launcher does not; `{rank}` and `{local_rank}`
in --plan and --stats give each rank its own file.

With --plan or --strict (or DEEPUM_STRICT=1) the user asked for deepum: a plan
that cannot be read, a bad --gpu-memory, a PyTorch without pluggable
allocators or no CUDA stop the command before the script starts, with one
"deepum: error:" line and exit 1. Without them deepum steps aside instead and
the script trains with PyTorch's own allocator.

Exit codes: the command's own; 1 bad input (the errors above); 2 usage (an
unknown option, no command, an unknown --log or DEEPUM_LOG level); 126/127
the command cannot be run.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import List, Optional

EXIT_BAD_INPUT = 1
EXIT_USAGE = 2


def version() -> str:
    """deepum's version: the project's VERSION in CMakeLists.txt, or the installed one."""
    here = Path(__file__).resolve()
    for candidate in (here.parent / "VERSION", here.parents[2] / "CMakeLists.txt"):
        try:
            text = candidate.read_text()
        except OSError:
            continue
        if candidate.name == "VERSION":
            return text.strip()
        import re

        m = re.search(r"project\(\s*deepum\b[^)]*VERSION\s+([0-9][0-9.]*)", text)
        if m:
            return m.group(1)
    return "unknown"


def build_env(args: argparse.Namespace, env: dict) -> dict:
    env = dict(env)
    autoload = Path(__file__).resolve().parent / "_autoload"
    package_root = Path(__file__).resolve().parent.parent
    paths = [str(autoload), str(package_root)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["DEEPUM_AUTOLOAD"] = "1"
    if args.plan:
        env["DEEPUM_PLAN_TEMPLATE"] = args.plan
    if args.gpu_memory:
        env["DEEPUM_GPU_MEMORY"] = args.gpu_memory
    if args.log:
        env["DEEPUM_LOG"] = args.log
    if getattr(args, "stats", None):
        env["DEEPUM_STATS_TEMPLATE"] = args.stats
    if strict(args, env):
        env["DEEPUM_STRICT"] = "1"
    return env


_INTERPOSE_NAME = "libdeepum_interpose.so"


def interpose_library_path(env: dict) -> Path:
    """libdeepum_interpose.so: $DEEPUM_INTERPOSE_LIBRARY, else beside libdeepum."""
    explicit = env.get("DEEPUM_INTERPOSE_LIBRARY")
    if explicit:
        return Path(explicit)
    import deepum

    return deepum.library_path().parent / _INTERPOSE_NAME


def _python_name(word: str) -> bool:
    """python, python3, python3.12 (any folder); not python3-config."""
    name = os.path.basename(word)
    return name.startswith("python") and all(c.isdigit() or c == "." for c in name[6:])


def _starts_python(words: List[str]) -> bool:
    if not words:
        return False
    if _python_name(words[0]):
        return True
    if os.path.basename(words[0]) != "env":
        return False
    rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return bool(rest) and _python_name(rest[0])


def is_python_command(command: List[str], env: dict) -> bool:
    """The rule of deepum-profile (profiler/lib/Launch.cpp, isPythonCommand)."""
    if _starts_python(command):
        return True
    import shutil

    program = command[0] if "/" in command[0] else shutil.which(command[0], path=env.get("PATH"))
    try:
        with open(program or "", "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    if not head.startswith(b"#!"):
        return False
    line = head[2:].splitlines()[0] if head[2:] else b""
    return _starts_python(line.decode("utf-8", "replace").split())


def build_native_env(args: argparse.Namespace, env: dict) -> dict:
    """A program that is not Python: libdeepum_interpose.so preloaded, deepum's
    settings as libdeepum reads them (DEEPUM_PLAN, DEEPUM_STATS, ...)."""
    import deepum

    env = dict(env)
    interpose = interpose_library_path(env)
    env["DEEPUM_LIBRARY"] = str(deepum.library_path())
    preload = env.get("LD_PRELOAD")
    # Ours first: it must interpose before whatever else was preloaded.
    env["LD_PRELOAD"] = f"{interpose}:{preload}" if preload else str(interpose)
    for name in ("DEEPUM_PLAN_TEMPLATE", "DEEPUM_STATS_TEMPLATE", "DEEPUM_AUTOLOAD"):
        env.pop(name, None)
    if args.plan:
        env["DEEPUM_PLAN"] = deepum.resolve_path(args.plan, env, "plan path")
    if args.gpu_memory:
        env["DEEPUM_GPU_MEMORY"] = args.gpu_memory
    if args.log:
        env["DEEPUM_LOG"] = args.log
    if getattr(args, "stats", None):
        env["DEEPUM_STATS"] = deepum.resolve_path(args.stats, env, "stats path")
    if strict(args, env):
        env["DEEPUM_STRICT"] = "1"
    return env


def strict(args: argparse.Namespace, env: dict) -> bool:
    """Whether the user asked for deepum explicitly: --plan, --strict or DEEPUM_STRICT=1."""
    return bool(args.plan) or bool(getattr(args, "strict", False)) or \
        env.get("DEEPUM_STRICT") == "1"


def parse(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="deepum-run", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"deepum {version()}")
    p.add_argument("--plan", help="plan file; {rank} and {local_rank} are substituted "
                                  "(implies --strict)")
    p.add_argument("--gpu-memory", metavar="SIZE",
                   help="capacity: the GPU memory deepum may use, e.g. 16GiB")
    p.add_argument("--stats", metavar="FILE",
                   help="write deepum's report (JSON) here at exit; {rank} is substituted")
    p.add_argument("--log", metavar="LEVEL",
                   help="off, error, warn (default), info or debug, optionally :FILE")
    p.add_argument("--strict", action="store_true",
                   help="stop with an error before the script starts when deepum cannot run, "
                        "instead of training without it")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--python", dest="python", action="store_const", const=True,
                       help="COMMAND runs Python: enable deepum in the interpreter")
    which.add_argument("--no-python", dest="python", action="store_const", const=False,
                       help="COMMAND is a CUDA program: preload libdeepum_interpose.so")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("no command given (usage: deepum-run [options] -- COMMAND ARGS...)")
    from deepum import DeepumError, check_log

    for what, value in (("--log", args.log), ("DEEPUM_LOG", os.environ.get("DEEPUM_LOG"))):
        if value:
            try:
                check_log(value)
            except DeepumError as e:
                p.error(str(e).replace("DEEPUM_LOG", what, 1))
    return args


def check(args: argparse.Namespace, env: dict) -> None:
    """What deepum-run can check before the command starts; raises DeepumError.

    A bad --gpu-memory is always an error (it was typed here); a plan is
    checked here unless its path depends on the rank, then each worker
    checks its own. Everything else is checked in the worker (strict mode).
    """
    import deepum

    if args.gpu_memory:
        deepum.check_size(args.gpu_memory)
    for template, what in ((args.plan, "plan path"), (getattr(args, "stats", None), "stats path")):
        if template:
            try:
                deepum.resolve_path(template, {}, what)
            except ValueError as e:
                raise deepum.DeepumError(str(e)) from None
    if args.plan and "{" not in args.plan:
        deepum._check_plan(args.plan)


def main(argv: Optional[List[str]] = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    args = parse(sys.argv[1:] if argv is None else argv)
    from deepum import DeepumError

    try:
        check(args, os.environ)
    except DeepumError as e:
        print(f"deepum: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    python = args.python if args.python is not None else \
        is_python_command(args.command, os.environ)
    if python:
        env = build_env(args, os.environ)
    else:
        try:
            env = build_native_env(args, os.environ)
            interpose = interpose_library_path(env)
            if not interpose.exists():
                raise DeepumError(f"{interpose} not found: the CUDA program cannot be given "
                                  "deepum's allocator (set DEEPUM_INTERPOSE_LIBRARY)")
        except (DeepumError, FileNotFoundError, ValueError) as e:
            if strict(args, os.environ):
                print(f"deepum: error: {e}", file=sys.stderr)
                return EXIT_BAD_INPUT
            print(f"deepum: deepum not enabled: {e}", file=sys.stderr)
            env = dict(os.environ)
    try:
        os.execvpe(args.command[0], args.command, env)
    except FileNotFoundError:
        print(f"deepum-run: {args.command[0]}: command not found", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"deepum-run: {args.command[0]}: permission denied", file=sys.stderr)
        return 126
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
