"""The flag's life as facts: every write of a state the flag may come from, and every call that
may re-arm it, with the function and class each sits in, the object it writes or calls through,
the conditions that guard it and where it runs in its function (a loop, before the training
loop, under the step's first-microbatch test).

``collect`` reads one module tree. ``lines`` limits it to the statements whose lines may hold
such a write or call (``prefilter.state_lines``, the text gate a run over several files uses to
share facts); ``None`` reads every statement (the file's own verdicts). Statements after a
``return``/``raise``/``continue``/``break`` in the same block never run and give no facts.
Facts are plain tuples, so that a run's worker processes and its result cache pass them on
unchanged (``from_json`` reads the cache's form back).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.analysis.conditions import (
    MODE_ATTRIBUTES,
    Reading,
    When,
    classify,
    condition_text,
)
from lint_rules.analysis.nodes import iter_nodes, statements
from lint_rules.analysis.prefilter import ON, Gates
from lint_rules.slotted import NamedTuple

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MODE_ATTRIBUTES", "CallFact", "FileFacts", "Write", "collect", "from_json"]


class Write(NamedTuple):
    """``<object>.name = value`` (``key`` ``attr:name``) or a module global (``global:name``)."""

    key: str
    value: str
    """``true``, ``false``, ``none``, ``zero`` (a count reset), ``const`` (another constant, or
    a step ``n += 1``), ``param:<name>``, ``copy`` (another state's value) or ``derived``
    (anything else: a mode, a function of an argument)."""
    function: str
    """The qualified name of the function it sits in (``Class.method``); "" at module level."""
    conditions: tuple[str, ...]
    """The conditions on the run it runs under (``condition_text``), outermost first."""
    line: int
    col: int
    path: str | None = None
    evaluation: bool = False
    """Its function runs without gradients (``evaluating``): a re-arm there is evaluation's."""
    target: str = ""
    """The object written: ``self:<Class>`` (a method's own instance), ``tree`` (every module
    of a tree: a ``.modules()`` loop, a function given to ``.apply()``), ``unknown:<text>``
    (another object: it re-arms nothing known), "" for a global."""
    first: str = ""
    """Where it runs in its function: ``first`` (under the step's first-microbatch test),
    ``once`` (the first pass of the loop that changes the weights), ``step`` (in that loop),
    ``micro`` (in a microbatch loop: every microbatch), ``before`` (before that loop), ""."""


class CallFact(NamedTuple):
    """A call of a function or method by its last name, with its first argument's kind."""

    name: str
    arg: str
    """``true``, ``false`` or "" (anything else, or no argument)."""
    function: str
    line: int
    col: int
    path: str | None = None
    evaluation: bool = False
    """The calling function runs without gradients (``evaluating``): evaluation, not a step."""
    conditions: tuple[str, ...] = ()
    """The conditions on the run the call runs under."""
    first: str = ""
    """Where it runs in its function (``Write.first``)."""
    receiver: str = ""
    """What it is called on: ``name`` (a plain ``f()``), ``module`` (an imported module's
    function), ``self:<Class>``, ``obj:<Class>`` (a local or attribute built from that class),
    ``obj`` (another object), or ``hook:<kind>`` for a function handed to torch to call
    (``apply``: on a module tree, here; ``forward``: on every forward or backward; ``step``:
    on every optimizer step; ``resume``: when a state dict is loaded)."""


class FileFacts(NamedTuple):
    writes: tuple[Write, ...] = ()
    calls: tuple[CallFact, ...] = ()
    getters: tuple[tuple[str, str], ...] = ()
    """Module-level functions that return a state: ``(function name, key)``."""
    classes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each class of the file, by name, with the last names of its bases."""


EMPTY = FileFacts()

_NONE: frozenset[str] = frozenset()
HOOKS = {
    "register_forward_pre_hook": "forward",
    "register_forward_hook": "forward",
    "register_full_backward_hook": "forward",
    "register_full_backward_pre_hook": "forward",
    "register_backward_hook": "forward",
    "register_step_pre_hook": "step",
    "register_step_post_hook": "step",
    "register_optimizer_step_pre_hook": "step",
    "register_optimizer_step_post_hook": "step",
    "register_load_state_dict_post_hook": "resume",
    "register_load_state_dict_pre_hook": "resume",
    "_register_load_state_dict_pre_hook": "resume",
    "apply": "apply",
}
"""Registrations whose argument torch calls, and when (``CallFact.receiver``)."""


def write_value(value: ast.expr | None, params: frozenset[str]) -> str:
    if value is None:
        return "derived"
    if isinstance(value, ast.Constant):
        if value.value is True:
            return "true"
        if value.value is False:
            return "false"
        if value.value is None:
            return "none"
        return "zero" if value.value == 0 and not isinstance(value.value, bool) else "const"
    if isinstance(value, ast.Name) and value.id in params:
        return f"param:{value.id}"
    if isinstance(value, ast.Attribute) and value.attr not in MODE_ATTRIBUTES:
        return "copy"
    return "derived"


def _arg_kind(call: ast.Call) -> str:
    if call.args and isinstance(call.args[0], ast.Constant):
        if call.args[0].value is True:
            return "true"
        if call.args[0].value is False:
            return "false"
    return ""


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return frozenset(names)


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call) and _last_name(node.func) == "partial" and node.args:
        return _last_name(node.args[0])  # functools.partial(fn, ...)
    return ""


_GRAD_OFF = frozenset({"no_grad", "inference_mode"})


def evaluating(function: ast.AST) -> bool:
    """A function that runs without gradients: it turns them off (``with torch.no_grad():``,
    ``inference_mode``, ``set_grad_enabled(False)``, or such a decorator) and calls no
    backward. What it re-arms, its own forwards under no_grad use up: no training step reads
    it (an evaluation loop that resets the flags first)."""
    decorators = getattr(function, "decorator_list", ())
    body = getattr(function, "body", ())
    if not any(_turns_grad_off(d) for d in decorators) and not any(
        isinstance(stmt, (ast.With, ast.AsyncWith))
        and any(_turns_grad_off(item.context_expr) for item in stmt.items)
        for stmt in statements(body)
    ):
        return False  # (found from the statements alone: most functions stop here)
    for node in iter_nodes(function):
        if isinstance(node, ast.Call) and "backward" in _last_name(node.func):
            return False
    return True


def _turns_grad_off(node: ast.expr) -> bool:
    call = node if isinstance(node, ast.Call) else None
    func = call.func if call is not None else node
    name = _last_name(func)
    if name in _GRAD_OFF:
        return True
    if name == "set_grad_enabled" and call is not None and call.args:
        mode = call.args[0]
        return isinstance(mode, ast.Constant) and mode.value is False
    return False


class Where(NamedTuple):
    """Where the collector is: the function (qualified), its class and instance name, the run
    conditions around, the loops around (innermost last), the first-microbatch test around."""

    function: str = ""
    cls: str = ""
    me: str = ""
    conditions: tuple[str, ...] = ()
    params: frozenset[str] = _NONE
    loops: tuple[ast.AST, ...] = ()
    first: str = ""
    trees: frozenset[str] = _NONE
    top: int = -1
    """The index of the function's top-level statement the collector is in."""
    body_of: str = "module"
    """``module``, ``class`` or ``function``: what the statements are the body of."""


def collect(
    tree: ast.Module,
    lines: Sequence[int] | None = None,
    source: str | None = None,
    gates: Gates = ON,
) -> FileFacts:
    """The facts of one module (``lines``: only statements on these lines, ascending;
    ``source``: its text, which tells that no function declares a ``global``; ``gates``: the
    text-level shortcuts, ``prefilter``)."""
    if lines is not None and not lines:
        return EMPTY
    from lint_rules.analysis.collector import Collector  # it reads the tuples above

    collector = Collector(tree, lines, source, gates)
    collector.body(tree.body, Where())
    writes = tuple(
        w._replace(evaluation=True) if w.function and collector.file.evaluating(w.function) else w
        for w in collector.writes
    )
    return FileFacts(
        writes, tuple(collector.calls), tuple(collector.getters), collector.classes(lines)
    )


def with_path(facts: FileFacts, path: str) -> FileFacts:
    """The facts of another file of the run, each naming it."""
    return facts._replace(
        writes=tuple(w._replace(path=path) for w in facts.writes),
        calls=tuple(c._replace(path=path) for c in facts.calls),
    )


def from_json(raw: list[Any]) -> FileFacts:
    """``FileFacts`` from its JSON form (lists for tuples)."""
    writes, calls, getters, *rest = raw
    classes = rest[0] if rest else []
    return FileFacts(
        tuple(
            Write(k, v, f, tuple(c), int(ln), int(col), p, bool(e), str(t), str(fi))
            for k, v, f, c, ln, col, p, e, t, fi in writes
        ),
        tuple(
            CallFact(n, a, f, int(ln), int(col), p, bool(e), tuple(c), str(fi), str(r))
            for n, a, f, ln, col, p, e, c, fi, r in calls
        ),
        tuple((str(n), str(k)) for n, k in getters),
        tuple((str(n), tuple(b)) for n, b in classes),
    )


__all__ += ["EMPTY", "HOOKS", "Where", "Reading", "When", "classify", "condition_text"]
__all__ += ["evaluating", "write_value", "with_path"]
