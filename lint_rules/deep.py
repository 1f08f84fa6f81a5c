"""No recursion limit on valid code: deep work is retried in a thread with a large stack.

``ast`` trees of long expressions are deep (``a + b + ... + z`` with 100,000 terms nests
100,000 ``BinOp`` nodes), and building, walking and printing them recurses. ``@deep`` runs a
function as usual; only when it raises ``RecursionError`` is it run again in a thread with a
1 GiB stack (reserved, not committed: only the pages used cost memory) and a raised recursion
limit, so the common case pays nothing. Calls made from inside that thread run directly.

Python 3.12 and later cap the depth of the tree ``ast.parse`` builds (a few thousand levels)
whatever the limit; such a file raises ``SyntaxError("expression too deeply nested")`` here
(reported in one line, exit 2, the file untouched).
"""

from __future__ import annotations

import functools
import sys
import threading

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

STACK_BYTES = 1 << 30
RECURSION_LIMIT = 1_000_000
TOO_DEEP = "expression too deeply nested"
"""What a file deeper than this Python's parser builds is told (``cannot parse: ...``)."""
_state = threading.local()
_lock = threading.Lock()


def deep(function: F) -> F:
    """Decorate ``function`` so that a ``RecursionError`` retries it in a deep thread."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "deep", False):
            return function(*args, **kwargs)
        try:
            return function(*args, **kwargs)
        except RecursionError:
            pass
        except MemoryError as error:
            if _from_the_parser(error):  # its own stack overflowed (10,000 nested `-`)
                raise SyntaxError(TOO_DEEP) from None
            raise
        return _in_deep_thread(function, args, kwargs)

    return run  # type: ignore[return-value]


def _from_the_parser(error: BaseException) -> bool:
    """Whether ``error`` was raised by ``ast.parse``/``compile`` itself (the innermost frame)."""
    trace = error.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    if trace is None:
        return False
    code = trace.tb_frame.f_code
    return code.co_name == "parse" and code.co_filename.endswith("ast.py")


def _in_deep_thread(function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    outcome: dict[str, Any] = {}

    def target() -> None:
        _state.deep = True
        try:
            outcome["value"] = function(*args, **kwargs)
        except RecursionError:
            outcome["error"] = SyntaxError(TOO_DEEP)
        except MemoryError as error:
            outcome["error"] = SyntaxError(TOO_DEEP) if _from_the_parser(error) else error
        except BaseException as error:  # handed to the caller's thread as it is
            outcome["error"] = error

    with _lock:  # the recursion limit is per interpreter: one deep run at a time
        limit = sys.getrecursionlimit()
        stack = threading.stack_size()
        worker = threading.Thread(target=target, name="te-microbatch-lint-deep", daemon=True)
        sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
        try:
            threading.stack_size(STACK_BYTES)  # read when the thread starts, not when made
            try:
                worker.start()
            finally:
                threading.stack_size(stack)
            worker.join()
        finally:
            sys.setrecursionlimit(limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
