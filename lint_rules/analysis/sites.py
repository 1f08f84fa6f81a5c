"""What a call passes and to what: the ``FlagCall`` the rules (``checks``) are handed.

``flag_call`` looks at one call the walk hands over and, when it passes the flag (by keyword,
by position to a TE class, or in a splatted mapping) to a TE module or to a callee it cannot
resolve, or passes it to a TE callable that rejects it, describes the call once for every rule.
"""

from __future__ import annotations

import ast
import functools

from lint_rules.analysis.resolve import Callee, TEModule, TERejects, Unresolved
from lint_rules.analysis.stateful import constant_index
from lint_rules.analysis.symbols import Scope, contains, dotted, is_none, span
from lint_rules.analysis.walk import COMPREHENSIONS, Context
from lint_rules.rules import callee_text, repeat_text
from lint_rules.slotted import Record
from lint_rules.te import FLAG, FLAG_POSITION, FORWARDERS

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.core import Analysis


class FlagCall(Record):
    """A call to a TE module (or an unresolved callee) and how it passes the flag."""

    _fields = (
        "call",
        "ctx",
        "scope",
        "callee",
        "guarded",
        "keyword",
        "index",
        "value",
        "node",
        "repeated",
        "splats",
        "rejected",
    )
    __slots__ = (*_fields, "__dict__")  # ``__dict__``: for the cached ``target``
    call: ast.Call
    ctx: Context
    scope: Scope | None
    callee: Callee
    guarded: bool
    """The call sits in a branch that runs only when a guard returned True."""
    keyword: ast.keyword | None
    index: int | None
    """The positional index of the flag, when it is passed positionally to a known class."""
    value: ast.expr | None
    node: ast.AST | None
    """Where a finding about the flag is reported: the keyword or the positional argument."""
    repeated: str | None
    """Why the call may run more than once per forward (TEM005), if it may."""
    splats: list[ast.keyword]
    """The ``**mapping`` arguments of the call."""
    rejected: ast.AST | None
    """Where a callee that does not take the flag is handed it positionally (TEM004)."""

    def __init__(
        self,
        call: ast.Call,
        ctx: Context,
        scope: Scope | None,
        callee: Callee,
        guarded: bool,
        keyword: ast.keyword | None,
        index: int | None,
        value: ast.expr | None,
        node: ast.AST | None,
        repeated: str | None,
        splats: list[ast.keyword] | None = None,
        rejected: ast.AST | None = None,
    ) -> None:
        if splats is None:
            splats = list()
        self._fill(locals())

    @functools.cached_property
    def target(self) -> str:
        """The ``{callee}`` text of the messages (built only for a finding)."""
        return target_text(self.call, self.callee)


def describe(func: ast.expr) -> str:
    text = dotted(func) or ast.unparse(func)  # a dotted name unparses to itself
    return text if len(text) <= 60 else text[:57] + "..."


def target_text(call: ast.Call, callee: Callee) -> str:
    """The ``{callee}`` text of a message about ``call``."""
    via = callee.via if isinstance(callee, (TEModule, Unresolved)) else ""
    func = call.args[0] if via else call.func
    if isinstance(callee, TEModule):
        return callee_text(describe(func), callee.name or callee.cls or None, via=via)
    origin = callee.origin if isinstance(callee, Unresolved) else None
    told = origin.describe() if origin is not None else ""
    return callee_text(describe(func), resolved=False, via=via, origin=told)


def flag_index(call: ast.Call, callee: TEModule) -> int | None:
    """Where a TE module's positional flag sits in this call, if it is passed positionally.

    Unknown class (and no in-file ``forward`` that says), a class whose index depends on the TE
    version (``te.VERSION_DEPENDENT_POSITION``), too few arguments, or a ``*args`` at or before
    it: no position.
    """
    position = callee.index if callee.index is not None else FLAG_POSITION.get(callee.cls)
    if position is None:
        return None
    index = position + callee.shift
    if len(call.args) <= index or any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return None
    return index


FORWARDER_NAMES = frozenset(qual.rsplit(".", 1)[-1] for qual in FORWARDERS)


def flag_call(a: Analysis, call: ast.Call, ctx: Context) -> FlagCall | None:
    """The call as the rules see it, or None when no rule looks at it: one that passes the flag
    or a splat by keyword, or, in a file that imports TE and names a TE class, two positional
    arguments (a positional flag needs a TE class, and a TE class needs a TE import)."""
    keyword = None
    splats = []
    for kw in call.keywords:
        if kw.arg == FLAG:
            keyword = kw
        elif kw.arg is None:
            splats.append(kw)
    if keyword is None and not splats and not may_be_module(a, call.func):
        return None
    scope = a.scope_of(ctx)
    callee = a.resolver.callee(call, scope)
    index = None
    rejected: ast.AST | None = None
    if isinstance(callee, TERejects):
        if keyword is None and not splats:
            return None  # positional arguments only (a TE constructor's): no flag is passed
    elif isinstance(callee, TEModule):
        if keyword is None:
            rejected = keyword_only(call, callee)
            index = None if rejected is not None else flag_index(call, callee)
    elif not (isinstance(callee, Unresolved) and (keyword is not None or splats)):
        return None  # not TE, or positional arguments of an unresolved callee (no TEM002)
    elif a.settings.unresolved != "report":
        return None
    value = keyword.value if keyword is not None else None
    if index is not None:
        value = call.args[index]
    repeated = None
    if value is not None and not is_none(value) and not isinstance(callee, TERejects):
        repeated = repeat_reason(a, call, ctx, callee)
    guarded = a.tracker.branches_guarded(ctx.branches, scope)
    node = keyword if keyword is not None else value
    return FlagCall(
        call, ctx, scope, callee, guarded, keyword, index, value, node, repeated, splats, rejected
    )


def keyword_only(call: ast.Call, callee: TEModule) -> ast.expr | None:
    """A positional argument past an in-file ``forward`` that takes the flag only by keyword
    (``forward(self, x, *, is_first_microbatch=None)``): a TypeError at run time."""
    if callee.takes is None:
        return None
    index = callee.takes + callee.shift
    if len(call.args) <= index or any(isinstance(x, ast.Starred) for x in call.args):
        return None
    return call.args[index]


def may_be_module(a: Analysis, func: ast.expr) -> bool:
    """Whether ``func`` may resolve to a TE module, told without resolving it: ``x.name(...)``
    can only when ``name`` is ``forward``, a wrapper's name, or a name an in-file class holds
    a value under (``te.Linear(...)``, ``torch.cat(...)``, ``h.masked_fill(...)`` cannot).
    Only for a call that could pass the flag positionally, where no other rule applies."""
    if type(func) is not ast.Attribute or not a.gates.guesses_callees():
        return True
    name = func.attr  # type: ignore[attr-defined]
    if name == "forward" or name in FORWARDER_NAMES:
        return True
    symbols = a.symbols
    return not symbols.only_called(name) and name in symbols.stored_attributes()


def runs_after(call: ast.Call, first: ast.Call) -> bool:
    """Does ``call`` run after ``first`` (in one pass through their function)? A call runs
    after the calls in its arguments, and after the calls that end before it starts."""
    return contains(call, first) or span(call)[0] >= span(first)[1]


def call_key(call: ast.Call) -> str:
    """The module a call runs, as spelled: its function, or for a wrapper that forwards the
    call (``checkpoint(self.fc, x, ...)``) the wrapper's first argument."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in FORWARDER_NAMES and call.args:
        func = call.args[0]
    return dotted(func) or ast.dump(func)


def repeat_reason(
    a: Analysis, call: ast.Call, ctx: Context, callee: Callee | None = None
) -> str | None:
    """Why this call may run more than once per forward (a loop over a fixed module). Through a
    wrapper (``checkpoint(self.layers[i], ...)``) the module is the wrapper's first argument."""
    if not ctx.loops:
        return None
    via = getattr(callee, "via", "") if callee is not None else ""
    func = call.args[0] if via and call.args else call.func
    used = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    for loop in reversed(ctx.loops):
        bound, runs_backward = a.loop_facts(loop)
        if used & bound and not constant_index(func, ctx):
            return None
        if runs_backward or not a.gradients.loop_loses(call, ctx, loop):
            return None
        kind = (
            "comprehension"
            if isinstance(loop, COMPREHENSIONS)
            else ("while loop" if isinstance(loop, ast.While) else "for loop")
        )
        return repeat_text(kind, loop.lineno)  # type: ignore[attr-defined]
    return None
