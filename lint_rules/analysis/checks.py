"""The rules: one object per code, each reading like its row in ``docs/rules.md``.

Every rule has the one interface of ``Rule``: ``visit`` is handed each call that passes the
flag (a ``FlagCall``, built once by ``sites.flag_call``), ``finish`` runs once the walk is done,
and whatever a rule remembers between the two (what it reported, the calls it keeps for later)
is its own. ``Analysis`` makes one of each per file (``RULES``) and owns nothing of theirs.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.analysis.lifecycle import Judgement, Verdict
from lint_rules.analysis.resolve import TERejects
from lint_rules.analysis.sites import FlagCall, call_key, describe, runs_after, target_text
from lint_rules.analysis.stateful import StatefulCheck
from lint_rules.analysis.symbols import (
    Branch,
    Scope,
    constant_str,
    dotted,
    is_none,
    runs_before,
    stores_flag,
)
from lint_rules.analysis.walk import Context, Walker, exclusive
from lint_rules.findings import Evidence, Finding, Fix
from lint_rules.rules import callee_text, format_message
from lint_rules.slotted import Record
from lint_rules.te import FLAG

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from typing import ClassVar

    from lint_rules.analysis.core import Analysis
    from lint_rules.analysis.forwarders import Forwarded


class Rule:
    """One code's rule over one file. Subclasses set ``code`` and override what they use."""

    code: ClassVar[str]

    def __init__(self, a: Analysis) -> None:
        self.a = a

    def visit(self, site: FlagCall) -> None:
        """A call that passes the flag, in the order the walk finds them."""

    def forwarded(self, site: Forwarded) -> None:
        """A call of an in-file function that passes its argument on to TE (``forwarders``)."""

    def finish(self) -> None:
        """Once every call of the file has been visited."""

    def report(
        self,
        node: ast.AST,
        target: str,
        fix: Fix | None,
        judgement: Judgement | None = None,
        evidence: tuple[Evidence, ...] = (),
        **extra: str,
    ) -> None:
        """A finding of this rule at ``node``: its message, and the judgement's verdict and
        evidence (or ``evidence`` and ``extra["verdict"]`` where no value is judged)."""
        guards = self.a.tracker.guards
        guard = guards[0] if guards else "is_first_microbatch_tracked"
        message = format_message(
            self.code,
            target,
            guard=guard.rsplit(".", 1)[-1],
            mapping=extra.get("mapping", "kwargs"),
            why=extra.get("why", ""),
        )
        end_col = getattr(node, "end_col_offset", None)
        self.a.findings.append(
            Finding(
                self.code,
                message,
                node.lineno,  # type: ignore[attr-defined]
                node.col_offset,  # type: ignore[attr-defined]
                getattr(node, "end_lineno", None) or node.lineno,  # type: ignore[attr-defined]
                end_col if end_col is not None else node.col_offset,  # type: ignore[attr-defined]
                fix,
                verdict=judgement.verdict.value
                if judgement is not None
                else extra.get("verdict", ""),
                evidence=judgement.evidence if judgement is not None else evidence,
            )
        )

    def stale(
        self,
        value: ast.expr,
        scope: Scope | None,
        ctx: Context,
        guarded: bool,
        loops: Sequence[ast.AST] | None = None,
    ) -> Judgement | None:
        """The lifecycle's judgement of a value passed as the flag, unless it is maintained
        (guarded, tracked in ``loops``, by default the call's, or judged so): what TEM001-003
        report."""
        a = self.a
        loops = ctx.loops if loops is None else loops
        if guarded or a.tracker.is_tracked(value, scope, loops=loops):
            return None
        judgement = a.lifecycle.judge(value, scope, ctx)
        return None if judgement.verdict is Verdict.MAINTAINED else judgement


class KeywordFlag(Rule):
    """TEM001: ``is_first_microbatch=<value>`` to a TE module, value neither None nor
    maintained; also a stale value passed by keyword to a function that forwards it to TE."""

    code = "TEM001"

    def visit(self, site: FlagCall) -> None:
        if site.keyword is None or site.rejected is not None or isinstance(site.callee, TERejects):
            return
        value = site.keyword.value
        self.a.forwarders.note(value, site.scope, site.target, site.call.lineno)
        judgement = self.stale(value, site.scope, site.ctx, site.guarded)
        if judgement is None:
            return
        fix = self.a.fixes.value_fix(
            value, site.scope, site.repeated, site.callee, judgement=judgement
        )
        self.report(site.keyword, site.target, fix, judgement)

    def forwarded(self, site: Forwarded) -> None:
        a = self.a
        if a.tracker.branches_guarded(site.ctx.branches, site.scope):
            return
        judgement = self.stale(site.value, site.scope, site.ctx, False)
        if judgement is None:
            return
        judgement = judgement._replace(evidence=(site.chain, *judgement.evidence))
        node: ast.AST = site.keyword if site.keyword is not None else site.value
        fix = a.fixes.value_fix(site.value, site.scope, None, None, judgement=judgement)  # type: ignore[arg-type]
        self.report(node, site.target, fix, judgement)


class PositionalFlag(KeywordFlag):
    """TEM002: the flag passed positionally to a TE module of known class, not maintained;
    also a stale value passed by position to a function that forwards it to TE."""

    code = "TEM002"

    def visit(self, site: FlagCall) -> None:
        if site.index is None or site.value is None:
            return
        self.a.forwarders.note(site.value, site.scope, site.target, site.call.lineno)
        judgement = self.stale(site.value, site.scope, site.ctx, site.guarded)
        if judgement is None:
            return
        fix = self.a.fixes.positional_fix(
            site.call, site.index, site.scope, site.repeated, site.callee, judgement=judgement
        )
        self.report(site.value, site.target, fix, judgement)


class MappingFlag(Rule):
    """TEM003: the flag stored in a mapping of the same function splatted into the call."""

    code = "TEM003"

    def __init__(self, a: Analysis) -> None:
        super().__init__(a)
        self.reported: set[int] = set()
        """The entries already reported (a mapping splatted into several calls)."""

    def visit(self, site: FlagCall) -> None:
        if site.rejected is not None or isinstance(site.callee, TERejects):
            return
        for splat in site.splats:
            self._mapping(site, splat.value)

    def _mapping(self, site: FlagCall, mapping: ast.expr) -> None:
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
        tracker = self.a.tracker
        for node, value, branches, where in entries:
            if id(node) in self.reported:
                continue
            end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
            if any((s.lineno, s.col_offset) >= end for s in later):
                continue
            guarded = site.guarded or tracker.branches_guarded(branches, where)
            loops = None if where is scope else ()
            judgement = self.stale(value, where, site.ctx, guarded, loops)
            if judgement is None:
                continue
            self.reported.add(id(node))
            fix = self.a.fixes.mapping_fix(value, where, site.callee, mapping, judgement=judgement)
            self.report(node, site.target, fix, judgement, mapping=mapping_name)


class RejectedFlag(Rule):
    """TEM004: the flag passed to a TE callable that does not take it (no fix)."""

    code = "TEM004"

    def visit(self, site: FlagCall) -> None:
        callee = site.callee
        if site.rejected is not None:
            self.report(site.rejected, target_text(site.call, callee), None)
            return
        if not isinstance(callee, TERejects):
            return
        target = callee_text(describe(site.call.func), callee.name)
        if site.keyword is not None:
            self.report(site.keyword, target, None)
        for splat in site.splats:
            if isinstance(splat.value, ast.Dict):
                for key in splat.value.keys:
                    if key is not None and constant_str(key) == FLAG:
                        self.report(key, target, None)


class CallSite(Record):
    """A call that passes a non-None flag, kept to look for a module called twice (TEM005)."""

    __slots__ = ("key", "flag_node", "exclusive_path", "call")
    key: str
    flag_node: ast.AST
    exclusive_path: tuple[tuple[int, int], ...]
    call: FlagCall

    def __init__(
        self,
        key: str,
        flag_node: ast.AST,
        exclusive_path: tuple[tuple[int, int], ...],
        call: FlagCall,
    ) -> None:
        self._fill(locals())


class SharedModule(Rule):
    """TEM005: a non-None flag to a TE module that runs more than once per forward: in a loop
    over a fixed module, called again in the same function, or held by a stateful wrapper."""

    code = "TEM005"

    def __init__(self, a: Analysis) -> None:
        super().__init__(a)
        self.sites: dict[int, list[CallSite]] = {}
        """The calls that pass a non-None flag, by the function they are in."""
        self.in_loop: set[int] = set()
        """The flags already reported because their call runs in a loop."""

    def visit(self, site: FlagCall) -> None:
        node, value = site.node, site.value
        if node is None or value is None or is_none(value) or site.rejected is not None:
            return
        if isinstance(site.callee, TERejects):
            return
        if site.repeated:
            why = f"the call runs more than once per forward ({site.repeated})"
            self.report(
                node,
                site.target,
                self.fix(site),
                why=site.repeated,
                evidence=(Evidence(why),),
                verdict="repeated",
            )
            self.in_loop.add(id(node))
        ctx = site.ctx
        if ctx.scope is not None and site.scope is not None:
            entry = CallSite(call_key(site.call), node, ctx.exclusive_path, site)
            self.sites.setdefault(id(ctx.scope[0]), []).append(entry)

    def fix(self, site: FlagCall) -> Fix | None:
        """None, whatever the strategy (built only for a finding)."""
        fixes = self.a.fixes
        if site.keyword is not None:
            return fixes.none_fix(site.keyword.value, site.callee, site.scope)
        if site.index is not None:
            return fixes.positional_fix(site.call, site.index, site.scope, "shared", site.callee)
        return None

    def finish(self) -> None:
        for sites in self.sites.values():
            if self._may_repeat(sites):
                self._called_twice(sites)
        a = self.a
        if not a.pending and a.gates.spells_any(a.source, (FLAG,)):
            StatefulCheck(a, self).run()

    def _called_twice(self, sites: list[CallSite]) -> None:
        """A module called with a non-None flag at a place of a function where it is also
        called (not in an exclusive branch) with a non-None flag, or with none (or ``None``)
        after it: backward runs in reverse, so the flagged call's gradient is written last."""
        calls = _calls_by_key(sites)
        flag_lines = {id(site.call.call): site.flag_node.lineno for site in sites}  # type: ignore[attr-defined]
        for site in sites:
            if id(site.flag_node) in self.in_loop:
                continue  # already reported: it runs in a loop
            this = site.call.call
            others = [
                call
                for call, path in calls.get(site.key, ())
                if call is not this
                and not exclusive(path, site.exclusive_path)
                and (id(call) in flag_lines or runs_after(call, this))
                and self.a.gradients.pair_loses(this, call, site.call.ctx)
            ]
            if not others:
                continue
            # Another flagged call names its flag's line, as the message always did.
            flagged = [call for call in others if id(call) in flag_lines]
            line = flag_lines[id(flagged[0])] if flagged else others[0].lineno
            step = Evidence("the same module is called here too", line)
            self.report(
                site.flag_node,
                site.call.target,
                self.fix(site.call),
                why=f"also at line {line}",
                evidence=(step,),
                verdict="repeated",
            )

    def _may_repeat(self, sites: list[CallSite]) -> bool:
        """Whether a module of these sites may be called twice in their function, from its
        text: a site's callee named once in the function's lines (and by no other site) is
        called once. Only for ASCII text (an identifier's spelling is then what ``ast`` says)."""
        a = self.a
        if a.source is None or not a.source.isascii():
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
        return a.gates.spelled_twice(text, names)


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


RULES: tuple[type[Rule], ...] = (
    KeywordFlag,
    PositionalFlag,
    MappingFlag,
    RejectedFlag,
    SharedModule,
)
"""One rule object per code, in the order of the rule table (``lint_rules.rules``)."""
