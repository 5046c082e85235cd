"""Iteration marks without script changes: one deepum.step() per optimizer step.

deepum-run and deepum-profile install this at start-up (_autoload). PyTorch 2.x
calls a global hook after every optimizer step; older releases have none, so
there each optimizer class's step is wrapped the first time one is built.

The rule when the script marks iterations itself: explicit marks win. The hook
marks each optimizer step until the script's first own deepum.step(). That
call closes the iteration the hook's last mark already closed, so it makes no
second mark; from then on only the script's calls mark.
"""
from __future__ import annotations

import functools
import threading
from typing import Callable, Optional

_installed = False
_hook_marked = False  # the hook has made a mark
_explicit_seen = False  # the script has called deepum.step()
_mark: Optional[Callable[[], None]] = None
_depth = threading.local()  # wrapped steps running on this thread (super().step() nests)


def after_optimizer_step(*_args, **_kwargs) -> None:
    """The optimizer step post-hook: one mark, unless the script marks itself."""
    global _hook_marked
    if _explicit_seen or _mark is None:
        return
    _hook_marked = True
    _mark()


def explicit_step() -> bool:
    """Called by deepum.step(): whether this call marks (see the module's rule)."""
    global _explicit_seen
    first = not _explicit_seen
    _explicit_seen = True
    return not (first and _hook_marked)


def _wrap_step(cls) -> None:
    step = cls.__dict__.get("step")
    if step is None or getattr(step, "_deepum_wrapped", False):
        return

    @functools.wraps(step)
    def wrapped(self, *args, **kwargs):
        depth = getattr(_depth, "n", 0)
        _depth.n = depth + 1
        try:
            result = step(self, *args, **kwargs)
        finally:
            _depth.n = depth
        if depth == 0:  # the outermost step of this call marks, once
            after_optimizer_step(self, args, kwargs)
        return result

    wrapped._deepum_wrapped = True
    cls.step = wrapped


def install(mark: Callable[[], None], optim=None) -> bool:
    """Calls `mark` after every optimizer step. Returns whether it could.

    `optim` is torch.optim (a stand-in in tests). Installs once per process.
    """
    global _installed, _mark
    _mark = mark
    if _installed:
        return True
    if optim is None:
        import torch

        optim = torch.optim
    register = getattr(getattr(optim, "optimizer", None), "register_optimizer_step_post_hook",
                       None)
    if register is not None:
        register(after_optimizer_step)
    else:
        base = getattr(optim, "Optimizer", None)
        if base is None:
            return False
        original_init = base.__init__

        @functools.wraps(original_init)
        def init(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            # Every class up to Optimizer that defines step (once per class).
            for cls in type(self).__mro__:
                if cls is base:
                    break
                _wrap_step(cls)

        base.__init__ = init
    _installed = True
    return True
