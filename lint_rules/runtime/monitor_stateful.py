"""Watching TE subclasses that keep the flag as state (Megatron-Core's ``TELinear`` shape).

Megatron-Core's TE wrappers override ``forward(self, x)`` (no flag parameter), keep
``self.is_first_microbatch`` and pass it on as ``super().forward(x, is_first_microbatch=...)``.
That inner call does not go through ``Module.__call__``, so no module hook sees the value TE
receives. For such a module (its own ``forward`` lacks the flag, the instance has the
attribute, and a base class's ``forward`` takes the flag) the monitor wraps that base class's
``forward`` while it is attached: the wrapper hands the value really passed to TE to the
monitor for the instances it watches, and calls the original unchanged for every other
object. The original is put back when the last watching monitor detaches.

No torch import.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable

from lint_rules.runtime.monitor_hazards import FLAG

Hook = Callable[[Any, tuple[Any, ...], dict[str, Any]], None]

_LOCK = threading.Lock()
# base class -> (its original forward, the wrapper, {id(instance): [hooks]})
_PATCHES: dict[type, tuple[Any, Any, dict[int, list[Hook]]]] = {}


def stateful_base(module: Any) -> tuple[type, int | None, Any] | None:
    """(base class, positional index, default) when ``module`` keeps the flag as state.

    That is: the instance has an ``is_first_microbatch`` attribute, its class's ``forward``
    does not take the flag, and the nearest base class defining ``forward`` does.
    """
    if not hasattr(module, FLAG):
        return None
    cls = type(module)
    own = _defining_class(cls)
    if own is None:
        return None
    for base in cls.__mro__[cls.__mro__.index(own) + 1 :]:
        forward = base.__dict__.get("forward")
        if forward is None:
            continue
        where = _unbound_flag_position(forward)
        return (base, *where) if where is not None else None
    return None


def _defining_class(cls: type) -> type | None:
    return next((c for c in cls.__mro__ if "forward" in c.__dict__), None)


def _unbound_flag_position(function: Any) -> tuple[int | None, Any] | None:
    try:
        params = list(inspect.signature(function).parameters.values())[1:]  # drop self
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for i, param in enumerate(params):
        if param.name != FLAG:
            continue
        if param.kind not in positional and param.kind is not inspect.Parameter.KEYWORD_ONLY:
            return None
        default = None if param.default is inspect.Parameter.empty else param.default
        return (i if param.kind in positional else None), default
    return None


def _set_forward(cls: type, forward: Any) -> None:
    """Set ``cls.forward``: ``cls`` is any class, and ``type`` declares no ``forward``."""
    setattr(cls, "forward", forward)  # noqa: B010 - a plain assignment does not type-check


def watch_base_calls(base: type, module: Any, hook: Hook) -> Callable[[], None]:
    """Call ``hook(module, args, kwargs)`` whenever ``base.forward`` runs on ``module``.

    Returns the function that stops it (and restores ``base.forward`` when nobody watches).
    """
    with _LOCK:
        if base not in _PATCHES:
            original = base.__dict__["forward"]
            table: dict[int, list[Hook]] = {}

            @functools.wraps(original)
            def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
                hooks = table.get(id(self))
                if hooks:
                    for watcher in list(hooks):
                        watcher(self, args, kwargs)
                return original(self, *args, **kwargs)

            _set_forward(base, forward)
            _PATCHES[base] = (original, forward, table)
        table = _PATCHES[base][2]
        table.setdefault(id(module), []).append(hook)

    def stop() -> None:
        with _LOCK:
            entry = _PATCHES.get(base)
            if entry is None:
                return
            original, wrapper, hooks = entry
            watchers = hooks.get(id(module), [])
            if hook in watchers:
                watchers.remove(hook)
            if not watchers:
                hooks.pop(id(module), None)
            if not hooks:
                if base.__dict__.get("forward") is wrapper:
                    _set_forward(base, original)
                del _PATCHES[base]

    return stop
