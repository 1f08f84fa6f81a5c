"""The fold of a local that only fed the flag: with ``None`` in place of its one read, the
local would be assigned and never used (pyflakes' F841), so the fix deletes its assignments too.

``fold_local`` answers one of three things:

- ``()``: nothing to fold (not a local of the function, or read somewhere else too);
- edits: every assignment of the local deleted (a statement that is the whole of its block
  becomes ``pass``; one target of ``a = b = value`` goes alone); where a statement cannot go
  (unpacking, ``with ... as``, a comment or other code on its lines, a value with an effect)
  its target becomes ``_``, which pyflakes never reports, when the function never names ``_``;
- ``None``: the local cannot go without changing the program: the function reads its locals
  dynamically (``eval``, ``exec``, ``vars()``, ``locals()``, ``dir()``, its frame), a
  ``match`` captures it, or ``_`` is in use. The ``None`` fix would then leave a new pyflakes
  warning (or change what a dynamic read sees), so it is not safe.

A local passed as the flag more than once (``first = self.flag``, then ``fc1(x, FLAG=first)``
and ``fc2(y, FLAG=first)``), read inside a replaced value (``self.flag if ok else None``), or
read by a TEM005 fix, is folded by ``combine`` once every finding of the file is known: when
the file's fixes drop every read of it, their findings carry one shared fix, all the
replacements and the fold, so that applying any of them applies all (``fixing.apply_edits``
applies it only when all of them are fixed). A local bound only as a ``for`` target is left
alone: pyflakes never reports one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from lint_rules.analysis.symbols import Scope
from lint_rules.findings import Edit, Finding, Fix, Position

_EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)
_DYNAMIC = frozenset({"eval", "exec", "locals"})
_DYNAMIC_NO_ARGUMENT = frozenset({"vars", "dir"})
_FRAMES = frozenset({"_getframe", "currentframe", "getframeinfo", "stack", "f_locals"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_EQUALS = re.compile(rb"[ \t]*=(?!=)[ \t]*")
_CAPTURES = tuple(getattr(ast, name) for name in ("MatchAs", "MatchStar") if hasattr(ast, name))


def reads_locals_dynamically(function: ast.AST) -> bool:
    """Whether code in ``function`` may read its locals by name at run time."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            callee = node.func
            name = (
                callee.id
                if isinstance(callee, ast.Name)
                else callee.attr
                if isinstance(callee, ast.Attribute)
                else ""
            )
            if name in _DYNAMIC or name in _FRAMES:
                return True
            if name in _DYNAMIC_NO_ARGUMENT and not node.args and not node.keywords:
                return True
        elif isinstance(node, ast.Attribute) and node.attr == "f_locals":
            return True
    return False


def _blocks(function: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list of ``function``'s own body (nested scopes excluded)."""
    stack: list[ast.AST] = [function]
    while stack:
        node = stack.pop()
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
                stack.extend(s for s in block if not isinstance(s, _SCOPES))
        for child in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            stack.append(child)


def _stores(function: ast.AST, name: str) -> tuple[int, list[ast.Name]] | None:
    """(loads, stores) of ``name`` in ``function``; None when ``del``, ``global`` or
    ``nonlocal`` name it."""
    loads = 0
    stores: list[ast.Name] = []
    updated = {id(n.target) for n in ast.walk(function) if isinstance(n, ast.AugAssign)}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load) or id(node) in updated:  # `_F += 1` reads it
                loads += 1
            elif isinstance(node.ctx, ast.Del):
                return None
            else:
                stores.append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        elif isinstance(node, _CAPTURES) and getattr(node, "name", None) == name:
            stores.append(ast.Name(id=name, ctx=ast.Store()))  # never a plain assignment
        elif getattr(node, "rest", None) == name:  # `case {**rest}`
            stores.append(ast.Name(id=name, ctx=ast.Store()))
    return loads, stores


def fold_local(value: ast.expr, scope: Scope | None, lines: list[str]) -> tuple[Edit, ...] | None:
    """The edits that delete the local ``value`` reads, when the fix replaces that read (see
    the module's docstring). ``lines``: the file's lines as ``ast`` numbers them."""
    return fold_reads((value,), scope, lines)


def fold_reads(
    values: Sequence[ast.expr], scope: Scope | None, lines: list[str]
) -> tuple[Edit, ...] | None:
    """``fold_local`` for fixes applied together, each replacing one of ``values`` (distinct
    reads of one name in ``scope``): the local goes only when they are all its reads."""
    value = values[0]
    if not isinstance(value, ast.Name) or scope is None or scope.node is None:
        return ()
    if value.id in scope.params:
        return ()
    if len({id(v) for v in values}) != len(values) or any(
        not isinstance(v, ast.Name) or v.id != value.id for v in values
    ):
        return ()
    function = scope.node
    found = _stores(function, value.id)
    if found is None:
        return ()
    loads, stores = found
    captured = any(not hasattr(store, "lineno") for store in stores)  # `case _F:`
    if scope.lookup(value.id) is not scope and not captured:
        return ()
    if loads != len(values) or not stores:
        return ()  # read somewhere else too: it stays in use
    if reads_locals_dynamically(function):
        return None
    free = _underscore_free(function)
    whole: list[ast.stmt] = []
    edits: list[Edit] = []
    for store in stores:
        statement = _statement_of(function, store)
        if statement is not None and _alone(statement, lines):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if len(targets) > 1:  # `a = _F = value`: this target alone goes
                line = lines[store.lineno - 1].encode("utf-8")
                after = _EQUALS.match(line, store.end_col_offset or 0)
                if after is not None:
                    end = (store.lineno, after.end())
                    edits.append(Edit((store.lineno, store.col_offset), end, ""))
                    continue
            else:
                value_node = statement.value
                if value_node is not None and not any(
                    isinstance(n, _EFFECTS) for n in ast.walk(value_node)
                ):
                    if statement not in whole:
                        whole.append(statement)
                    continue
        if not free or not hasattr(store, "lineno"):
            return None  # a `match` capture, or `_` is in use here
        # Anything else (unpacking, `with ... as`, a comment or other code on its line, a
        # value with an effect): the target becomes `_`, which pyflakes never reports.
        end = (store.end_lineno or store.lineno, store.end_col_offset or 0)
        edits.append(Edit((store.lineno, store.col_offset), end, "_"))
    edits.extend(_delete(whole, function, lines))
    return tuple(edits)


def _underscore_free(function: ast.AST) -> bool:
    """Whether ``function`` never names ``_`` (binding it there then changes nothing)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == "_":
            return False
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "_" in node.names:
            return False
    return True


def _statement_of(function: ast.AST, store: ast.Name) -> ast.Assign | ast.AnnAssign | None:
    """The plain assignment whose target is ``store`` (None: any other way of binding)."""
    for block in _blocks(function):
        for statement in block:
            if isinstance(statement, ast.Assign) and any(t is store for t in statement.targets):
                return statement
            if (
                isinstance(statement, ast.AnnAssign)
                and statement.target is store
                and statement.value is not None
            ):
                return statement
    return None


def _alone(statement: ast.stmt, lines: list[str]) -> bool:
    """Whether ``statement`` stands alone on its lines, with no comment in or after it."""
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    if last >= len(lines):
        return False
    head = lines[first - 1].encode("utf-8")[: statement.col_offset]
    tail = lines[last - 1].encode("utf-8")[statement.end_col_offset or 0 :]
    if head.strip() or tail.strip():
        return False  # shares its line with other code, or a comment follows
    return not any("#" in line for line in lines[first - 1 : last])


def _delete(whole: list[ast.stmt], function: ast.AST, lines: list[str]) -> Iterator[Edit]:
    """Delete each statement's lines; one that would leave its block empty becomes ``pass``."""
    gone = {id(s) for s in whole}
    emptied: set[int] = set()
    for block in _blocks(function):
        if all(id(s) in gone for s in block):
            emptied.add(id(block[0]))
    for statement in whole:
        first, last = statement.lineno, statement.end_lineno or statement.lineno
        if id(statement) in emptied:
            end = (last, statement.end_col_offset or 0)
            yield Edit((first, statement.col_offset), end, "pass")
        else:
            yield Edit((first, 0), (last + 1, 0), "")


Reads = dict[tuple[Position, Position], tuple[tuple[ast.Name, Scope], ...]]
"""Each None fix's replaced span: the reads of locals it drops, each with the function that
owns the local (``FixBuilder.reads``)."""

_Key = tuple[int, str]
"""A local: its function (by identity) and its name."""


def combine(findings: list[Finding], reads: Reads, lines: list[str]) -> list[Finding]:
    """``findings`` with one shared fix for the fixes that together drop every read of one
    local (module docstring): safe only when each part is, with every part's note; when the
    local cannot go (``fold_reads`` says None) the shared fix is unsafe and says so. Fixes that
    drop only some of a local's reads stay as they are (the local stays in use), and so do
    fixes that would drop the last reads of two locals at once."""
    hits_of: dict[int, list[Edit]] = {}
    groups: dict[_Key, dict[int, tuple[ast.Name, Scope, Edit]]] = {}
    members: dict[_Key, list[int]] = {}
    mixed: set[_Key] = set()
    for index, finding in enumerate(findings):
        fix = finding.fix
        if fix is None or fix.guard_import is not None:
            continue
        for edit in fix.edits:
            for node, owner in reads.get((edit.start, edit.end), ()):
                hits_of.setdefault(index, []).append(edit)
                key = (id(owner.node), node.id)
                known = groups.setdefault(key, {}).setdefault(id(node), (node, owner, edit))
                if known[2] != edit:
                    mixed.add(key)  # two different rewrites of one read: leave them alone
                if index not in members.setdefault(key, []):
                    members[key].append(index)
    complete: dict[_Key, tuple[Edit, ...] | None] = {}
    for key, group in groups.items():
        parts = [fix for i in members[key] if (fix := findings[i].fix) is not None]
        if key in mixed or (len(group) == 1 and any(len(part.edits) > 1 for part in parts)):
            continue  # (one read, already folded: ``FixBuilder.value_fix``)
        nodes = [node for node, _, _ in group.values()]
        owner = next(iter(group.values()))[1]
        if owner.node is None or not _warned_unused(owner.node, key[1]):
            continue  # bound only where pyflakes never reports it (a loop target, unpacking)
        folded = fold_reads(nodes, owner, lines)
        if folded != ():  # () : not all its reads, or not a local that can be folded
            complete[key] = folded
    for key, folded in complete.items():
        indexes = members[key]
        if any(other != key and set(indexes) & set(members[other]) for other in complete):
            continue
        parts = [fix for i in indexes if (fix := findings[i].fix) is not None]
        safe = all(part.applicability == "safe" for part in parts)
        notes = list(dict.fromkeys(part.note for part in parts if part.note))
        if folded is None:
            safe = False
            notes.append(f"leaves `{key[1]}` assigned and never used: delete it")
            notes = list(dict.fromkeys(notes))
            folded = ()
        replacements = sorted({edit for i in indexes for edit in hits_of[i]}, key=_edit_order)
        together = (
            tuple(sorted((findings[i].code, findings[i].line, findings[i].col) for i in indexes))
            if len(replacements) > 1
            else ()  # one value, one fix (as TEM005 shares it)
        )
        shared = Fix(
            (*replacements, *folded),
            note="; ".join(notes) or None,
            applicability="safe" if safe else "unsafe",
            together=together,
        )
        for index in indexes:
            findings[index] = replace(findings[index], fix=shared)
    return findings


def _warned_unused(function: ast.AST, name: str) -> bool:
    """Whether pyflakes may report ``name`` when nothing reads it (F841): it is bound other than
    as a ``for`` loop's (or a comprehension's) target, which pyflakes never reports."""
    targets: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets.update(id(n) for n in ast.walk(node.target))
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            if id(node) not in targets:
                return True
        elif getattr(node, "name", None) == name and isinstance(
            node, (ast.ExceptHandler, *_CAPTURES)
        ):
            return True  # `except E as name`, `case [name]`
    return False


def _edit_order(edit: Edit) -> tuple[Position, Position]:
    return edit.start, edit.end
