"""The rules, one function per code, each reading like its row in ``docs/rules.md``.

``check_call`` finds out what a call passes and to what (``FlagCall``), then asks each rule.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lint_rules.analysis import prefilter
from lint_rules.analysis.lifecycle import Verdict
from lint_rules.analysis.resolve import Callee, TEModule, TERejects, Unresolved
from lint_rules.analysis.stateful import constant_index
from lint_rules.analysis.symbols import (
    Branch,
    Scope,
    constant_str,
    contains,
    dotted,
    is_none,
    runs_before,
    span,
    stores_flag,
)
from lint_rules.analysis.walk import COMPREHENSIONS, Context, Walker, exclusive
from lint_rules.findings import Evidence, Fix
from lint_rules.rules import callee_text, repeat_text
from lint_rules.te import FLAG, FLAG_POSITION, FORWARDERS

if TYPE_CHECKING:
    from lint_rules.analysis.core import Analysis


@dataclass
class FlagCall:
    """A call to a TE module (or an unresolved callee) and how it passes the flag."""

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

    @functools.cached_property
    def target(self) -> str:
        """The ``{callee}`` text of the messages (built only for a finding)."""
        return target_text(self.call, self.callee)


@dataclass
class CallSite:
    """A call that passes a non-None flag, kept to look for a module called twice (TEM005)."""

    key: str
    flag_node: ast.AST
    exclusive_path: tuple[tuple[int, int], ...]
    call: FlagCall


def describe(func: ast.expr) -> str:
    text = dotted(func) or ast.unparse(func)  # a dotted name unparses to itself
    return text if len(text) <= 60 else text[:57] + "..."


def target_text(call: ast.Call, callee: Callee) -> str:
    """The ``{callee}`` text of a message about ``call``."""
    via = callee.via if isinstance(callee, (TEModule, Unresolved)) else ""
    func = call.args[0] if via else call.func
    if isinstance(callee, TEModule):
        return callee_text(describe(func), callee.name or callee.cls or None, via=via)
    return callee_text(describe(func), resolved=False, via=via)


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


_FORWARDER_NAMES = frozenset(qual.rsplit(".", 1)[-1] for qual in FORWARDERS)


def check_call(a: Analysis, call: ast.Call, ctx: Context) -> None:
    """The rules on one call the walk hands over: one that passes the flag or a splat by
    keyword, or, in a file that imports TE and names a TE class, two positional arguments (a
    positional flag needs a TE class, and a TE class needs a TE import)."""
    keyword = None
    splats = []
    for kw in call.keywords:
        if kw.arg == FLAG:
            keyword = kw
        elif kw.arg is None:
            splats.append(kw)
    if keyword is None and not splats and not may_be_module(a, call.func):
        return
    scope = a.scope_of(ctx)
    callee = a.resolver.callee(call, scope)
    if isinstance(callee, TERejects):
        tem004_rejected(a, call, callee, keyword, splats)
        return
    if isinstance(callee, TEModule):
        if keyword is None and tem004_positional(a, call, callee):
            return
        index = None if keyword is not None else flag_index(call, callee)
    elif isinstance(callee, Unresolved) and (keyword is not None or splats):
        if a.settings.unresolved != "report":
            return
        index = None
    else:
        return  # not TE, or positional arguments of an unresolved callee (no class, no TEM002)
    value = keyword.value if keyword is not None else None
    if index is not None:
        value = call.args[index]
    repeated = None
    if value is not None and not is_none(value):
        repeated = repeat_reason(a, call, ctx, callee)
    guarded = a.tracker.branches_guarded(ctx.branches, scope)
    node = keyword if keyword is not None else value
    site = FlagCall(call, ctx, scope, callee, guarded, keyword, index, value, node, repeated)
    if keyword is not None:
        tem001_keyword(a, site)
    elif index is not None:
        tem002_positional(a, site)
    for splat in splats:
        tem003_mapping(a, site, splat.value)
    if node is None or value is None or is_none(value):
        return
    tem005_in_loop(a, site)
    if ctx.scope is not None and scope is not None:
        key = call_key(call)
        entry = CallSite(key, node, ctx.exclusive_path, site)
        a.sites.setdefault(id(ctx.scope[0]), []).append(entry)


def may_be_module(a: Analysis, func: ast.expr) -> bool:
    """Whether ``func`` may resolve to a TE module, told without resolving it: ``x.name(...)``
    can only when ``name`` is ``forward``, a wrapper's name, or a name an in-file class holds
    a value under (``te.Linear(...)``, ``torch.cat(...)``, ``h.masked_fill(...)`` cannot).
    Only for a call that could pass the flag positionally, where no other rule applies."""
    if type(func) is not ast.Attribute or not prefilter.GATES:
        return True
    name = func.attr  # type: ignore[attr-defined]
    if name == "forward" or name in _FORWARDER_NAMES:
        return True
    symbols = a.symbols
    return not symbols.only_called(name) and name in symbols.stored_attributes()


def tem001_keyword(a: Analysis, site: FlagCall) -> None:
    """TEM001: ``is_first_microbatch=<value>`` to a TE module, value neither None nor tracked."""
    assert site.keyword is not None
    value = site.keyword.value
    a.forwarders.note(value, site.scope, site.target, site.call.lineno)
    if site.guarded or a.tracker.is_tracked(value, site.scope, loops=site.ctx.loops):
        return
    judgement = a.lifecycle.judge(value, site.scope, site.ctx)
    if judgement.verdict is Verdict.MAINTAINED:
        return
    fix = a.fixes.value_fix(value, site.scope, site.repeated, site.callee, judgement=judgement)
    a.report("TEM001", site.keyword, site.target, fix, judgement)


def tem002_positional(a: Analysis, site: FlagCall) -> None:
    """TEM002: the flag passed positionally to a TE module of known class, not tracked."""
    assert site.index is not None and site.value is not None
    a.forwarders.note(site.value, site.scope, site.target, site.call.lineno)
    if site.guarded or a.tracker.is_tracked(site.value, site.scope, loops=site.ctx.loops):
        return
    judgement = a.lifecycle.judge(site.value, site.scope, site.ctx)
    if judgement.verdict is Verdict.MAINTAINED:
        return
    fix = a.fixes.positional_fix(
        site.call, site.index, site.scope, site.repeated, site.callee, judgement=judgement
    )
    a.report("TEM002", site.value, site.target, fix, judgement)


def tem003_mapping(a: Analysis, site: FlagCall, mapping: ast.expr) -> None:
    """TEM003: the flag stored in a mapping of the same function splatted into the call."""
    scope = site.scope
    entries: list[tuple[ast.AST, ast.expr, tuple[Branch, ...], Scope | None]] = []
    name = mapping.id if isinstance(mapping, ast.Name) else None
    sources: list[ast.expr] = [mapping]
    owner = scope.lookup(name) if (scope is not None and name is not None) else None
    if owner is not None and name is not None:
        for binding in owner.bindings.get(name, []):
            if binding.how == "assign" and binding.value is not None:
                sources.append(binding.value)
        for node, value, branches in owner.key_stores.get(name, []):
            entries.append((node, value, branches, owner))
    for source in sources:
        if isinstance(source, ast.Dict):
            for key, value in zip(source.keys, source.values):
                if key is not None and constant_str(key) == FLAG:
                    entries.append((key, value, (), owner or scope))
        elif (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Name)
            and source.func.id == "dict"
        ):
            for kw in source.keywords:
                if kw.arg == FLAG:
                    entries.append((kw, kw.value, (), owner or scope))
    mapping_name = name or "{...}"
    # Stores that always run between an entry and the call replace it (`kw[FLAG] = None`).
    function = scope.node if scope is not None else None
    later: list[ast.stmt] = []
    if name is not None and owner is scope and function is not None:
        later = [s for s in runs_before(function, site.call) if stores_flag(s, name)]
    for node, value, branches, where in entries:
        if id(node) in a.reported_keys:
            continue
        end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        if any((s.lineno, s.col_offset) >= end for s in later):
            continue
        if (
            site.guarded
            or a.tracker.branches_guarded(branches, where)
            or a.tracker.is_tracked(value, where, loops=site.ctx.loops if where is scope else ())
        ):
            continue
        judgement = a.lifecycle.judge(value, where, site.ctx)
        if judgement.verdict is Verdict.MAINTAINED:
            continue
        a.reported_keys.add(id(node))
        fix = a.fixes.mapping_fix(value, where, site.callee, mapping, judgement=judgement)
        a.report("TEM003", node, site.target, fix, judgement, mapping=mapping_name)


def tem004_rejected(
    a: Analysis,
    call: ast.Call,
    callee: TERejects,
    keyword: ast.keyword | None,
    splats: list[ast.keyword],
) -> None:
    """TEM004: the flag passed to a TE callable that does not accept it (no fix)."""
    if keyword is None and not splats:
        return  # positional arguments only (a TE constructor's): nothing passes the flag
    target = callee_text(describe(call.func), callee.name)
    if keyword is not None:
        a.report("TEM004", keyword, target, None)
    for splat in splats:
        if isinstance(splat.value, ast.Dict):
            for key in splat.value.keys:
                if key is not None and constant_str(key) == FLAG:
                    a.report("TEM004", key, target, None)


def tem004_positional(a: Analysis, call: ast.Call, callee: TEModule) -> bool:
    """TEM004: a positional argument past an in-file ``forward`` that takes the flag only by
    keyword (``forward(self, x, *, is_first_microbatch=None)``): a TypeError (no fix)."""
    if callee.takes is None:
        return False
    index = callee.takes + callee.shift
    if len(call.args) <= index or any(isinstance(x, ast.Starred) for x in call.args):
        return False
    a.report("TEM004", call.args[index], target_text(call, callee), None)
    return True


def shared_fix(a: Analysis, site: FlagCall) -> Fix | None:
    """TEM005's fix: None, whatever the strategy (built only for a TEM005 finding)."""
    if site.keyword is not None:
        return a.fixes.none_fix(site.keyword.value, site.callee, site.scope)
    if site.index is not None:
        return a.fixes.positional_fix(site.call, site.index, site.scope, "shared", site.callee)
    return None


def tem005_in_loop(a: Analysis, site: FlagCall) -> None:
    """TEM005: a non-None flag to a TE module that a loop calls more than once per forward."""
    if site.repeated and site.node is not None:
        a.report(
            "TEM005",
            site.node,
            site.target,
            shared_fix(a, site),
            why=site.repeated,
            evidence=(Evidence(f"the call runs more than once per forward ({site.repeated})"),),
            verdict="repeated",
        )
        a.reported_shared.add(id(site.node))


def tem005_called_twice(a: Analysis) -> None:
    """TEM005: a module called with a non-None flag at a place of a function where it is also
    called (not in an exclusive branch) with a non-None flag, or with none (or ``None``) after
    it: backward runs in reverse, so the flagged call's gradient is written last."""
    for sites in a.sites.values():
        if not _may_repeat(a, sites):
            continue
        calls = _calls_by_key(sites)
        flag_lines = {id(site.call.call): site.flag_node.lineno for site in sites}  # type: ignore[attr-defined]
        for site in sites:
            if id(site.flag_node) in a.reported_shared:
                continue  # already reported: it runs in a loop
            this = site.call.call
            others = [
                call
                for call, path in calls.get(site.key, ())
                if call is not this
                and not exclusive(path, site.exclusive_path)
                and (id(call) in flag_lines or runs_after(call, this))
                and a.gradients.pair_loses(this, call, site.call.ctx)
            ]
            if not others:
                continue
            # Another flagged call names its flag's line, as the message always did.
            flagged = [call for call in others if id(call) in flag_lines]
            line = flag_lines[id(flagged[0])] if flagged else others[0].lineno
            why = f"also at line {line}"
            fix = shared_fix(a, site.call)
            step = Evidence("the same module is called here too", line)
            a.report(
                "TEM005",
                site.flag_node,
                site.call.target,
                fix,
                why=why,
                evidence=(step,),
                verdict="repeated",
            )


def _may_repeat(a: Analysis, sites: list[CallSite]) -> bool:
    """Whether a module of these sites may be called twice in their function, from its text:
    a site's callee named once in the function's lines (and by no other site) is called
    once. Only for ASCII text (an identifier's spelling is then what ``ast`` says)."""
    if a.source is None or not a.source.isascii() or not prefilter.GATES:
        return True
    names: dict[str, int] = {}
    for site in sites:
        func = site.call.call.func
        if not isinstance(func, (ast.Name, ast.Attribute)) or dotted(func) != site.key:
            return True
        name = func.id if isinstance(func, ast.Name) else func.attr
        names[name] = names.get(name, 0) + 1
    if any(count > 1 for count in names.values()):
        return True
    function = sites[0].call.ctx.scope[0]  # type: ignore[index]
    lines = a.lines()[function.lineno - 1 : function.end_lineno]
    text = "\n".join(lines)
    return any(text.count(name) > 1 for name in names)


def runs_after(call: ast.Call, first: ast.Call) -> bool:
    """Does ``call`` run after ``first`` (in one pass through their function)? A call runs
    after the calls in its arguments, and after the calls that end before it starts."""
    return contains(call, first) or span(call)[0] >= span(first)[1]


def _calls_by_key(
    sites: list[CallSite],
) -> dict[str, list[tuple[ast.Call, tuple[tuple[int, int], ...]]]]:
    """Every call in the sites' function (not in nested ones) whose function is spelled like a
    site's, with its exclusive path: the same module, called with or without a flag."""
    scope = sites[0].call.ctx.scope
    assert scope is not None
    function = scope[0]
    keys = {site.key for site in sites}
    found: dict[str, list[tuple[ast.Call, tuple[tuple[int, int], ...]]]] = {}

    def on_call(call: ast.Call, ctx: Context) -> None:
        if ctx.scope is None or ctx.scope[0] is not function:
            return
        key = call_key(call)
        if key in keys:
            found.setdefault(key, []).append((call, ctx.exclusive_path))

    walker = Walker(on_call)
    start = Context(None, (function, None, None), (), (), ())
    if isinstance(function, ast.Lambda):
        walker.walk(function.body, start)
    else:
        walker.walk_body(function.body, start)
    return found


def call_key(call: ast.Call) -> str:
    """The module a call runs, as spelled: its function, or for a wrapper that forwards the
    call (``checkpoint(self.fc, x, ...)``) the wrapper's first argument."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in _FORWARDER_NAMES and call.args:
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
