# Loaded by the interpreter at start-up when deepum-run put this folder on
# PYTHONPATH: enables deepum before the training script runs. Never breaks the
# training: any failure is reported once and the script runs without deepum,
# unless the user asked for deepum explicitly (DEEPUM_STRICT=1: deepum-run
# --plan or --strict); then the failure is one "deepum: error:" line and exit 1,
# before the script starts.
import os
import sys


def _torchrun_launcher():
    """Whether this interpreter is torchrun's launcher (not one of its workers).

    The launcher runs no training: deepum skips it and stays armed for the
    workers it starts, which then each read their own rank's plan.
    """
    if "RANK" in os.environ:
        return False
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    for i, arg in enumerate(argv[:3]):
        if os.path.basename(arg) == "torchrun":
            return True
        if arg == "-m" and i + 1 < len(argv) and argv[i + 1] in (
                "torch.distributed.run", "torch.distributed.launch"):
            return True
    return False


def _write_stats_without_library(path, why_not, plan):
    """DEEPUM_STATS when libdeepum never loaded: the report says why."""
    import json

    report = {"schema": 1, "devices": [], "why_not": why_not, "plan": plan,
              "rank": int(os.environ.get("RANK", "0") or 0)}
    try:
        with open(path, "w") as f:
            json.dump(report, f)
            f.write("\n")
    except OSError as e:
        print(f"deepum: DEEPUM_STATS: cannot write {path}: {e.strerror}", file=sys.stderr)


def _autoload():
    strict = os.environ.get("DEEPUM_STRICT") == "1"
    enabled, why_not, plan = False, None, None
    try:
        import deepum

        template = os.environ.get("DEEPUM_PLAN_TEMPLATE")
        plan = deepum.resolve_plan_path(template) if template else None
        stats = os.environ.get("DEEPUM_STATS_TEMPLATE")
        if stats:  # libdeepum reads DEEPUM_STATS when it starts
            os.environ["DEEPUM_STATS"] = deepum.resolve_path(stats, what="stats path")
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enabled = deepum.enable(plan=template, gpu_memory=os.environ.get("DEEPUM_GPU_MEMORY"),
                                    strict=strict)
        for w in caught:
            print(f"{w.message}", file=sys.stderr)
            why_not = str(w.message).replace("deepum: ", "", 1).split(";")[0]
    except Exception as e:  # noqa: BLE001 - deepum must not stop the training
        if strict:
            print(f"deepum: error: {e}", file=sys.stderr, flush=True)
            os._exit(1)
        print(f"deepum: deepum not enabled: {e}", file=sys.stderr)
        why_not = str(e)
    if not enabled and os.environ.get("DEEPUM_STATS"):
        import atexit

        atexit.register(_write_stats_without_library, os.environ["DEEPUM_STATS"],
                        why_not or "deepum was not enabled", plan)
    try:
        # One iteration mark per optimizer step, for scripts that mark none.
        import deepum
        from deepum import _autostep

        _autostep.install(deepum._mark)
    except Exception as e:  # noqa: BLE001
        print(f"deepum: no iteration marks from optimizer steps: {e}", file=sys.stderr)


if os.environ.get("DEEPUM_AUTOLOAD") == "1" and not _torchrun_launcher():
    os.environ["DEEPUM_AUTOLOAD"] = "0"  # children of the script decide for themselves
    _autoload()


# This file shadows any sitecustomize further down sys.path (Debian ships
# one); run that one too, so deepum-run changes nothing else.
def _chain_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if p and os.path.abspath(p) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001
        print(f"deepum-run: the system sitecustomize failed: {e}", file=sys.stderr)


_chain_next_sitecustomize()
