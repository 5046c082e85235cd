# Loaded by the interpreter at start-up when deepum-run put this folder on
# PYTHONPATH: enables deepum before the training script runs. Never breaks the
# training: any failure is reported once and the script runs without deepum.
import os
import sys

if os.environ.get("DEEPUM_AUTOLOAD") == "1":
    os.environ["DEEPUM_AUTOLOAD"] = "0"  # children of the script decide for themselves
    try:
        import deepum

        template = os.environ.get("DEEPUM_PLAN_TEMPLATE")
        deepum.enable(plan=template)
    except Exception as e:  # noqa: BLE001 - deepum must not stop the training
        print(f"deepum: deepum not enabled: {e}", file=sys.stderr)
    try:
        # One iteration mark per optimizer step, for scripts that mark none.
        from deepum import _autostep

        _autostep.install(deepum._mark)
    except Exception as e:  # noqa: BLE001
        print(f"deepum: no iteration marks from optimizer steps: {e}", file=sys.stderr)

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
