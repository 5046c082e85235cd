"""deepum-run: run an unmodified training command with deepum as its allocator.

    python3 -m deepum.run [--plan PLAN] [--gpu-memory SIZE] [--log LEVEL] -- python train.py ...

The child interpreter imports deepum at start-up (through a sitecustomize on
PYTHONPATH) and enables it before the script runs. Under torchrun, `--plan
'plan.rank{rank}.pb'` gives each rank its own plan.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import List, Optional


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
    return env


def parse(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="deepum-run", description=__doc__.splitlines()[0])
    p.add_argument("--plan", help="plan file; {rank} and {local_rank} are substituted")
    p.add_argument("--gpu-memory", help="capacity budget, e.g. 16GiB")
    p.add_argument("--log", help="log level: error, warning, info, debug")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("no command given (usage: deepum-run [options] -- COMMAND ARGS...)")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    env = build_env(args, os.environ)
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
