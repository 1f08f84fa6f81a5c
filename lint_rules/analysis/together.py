"""One shared fix for the fixes of a file that together leave a local unused.

``fold`` deletes a local whose one read a fix replaces. Once every finding of the file is
known, ``combine`` follows what the file's None fixes drop (``FixBuilder.reads``: each fix's
replaced span and the reads of locals in it): a local of a function whose every read is
dropped goes too (``fold.plan``), and a statement deleted with it drops its own reads in turn
(``flag = first`` deleted: ``first``'s read goes), until nothing more goes. The fixes that took
part carry one shared fix: all their replacements and every fold, statements of one block
deleted together (one becomes ``pass`` if the block would be empty), so that applying any of
them applies all (``fixing.apply_edits`` applies it only when every one of them is fixed, and
never under a ``# noqa`` for any of their codes). It is safe only when every part is; a local
that cannot go (``fold.plan`` says None) makes it unsafe, with a note. A local bound only as a
``for`` target is left alone (pyflakes never reports one), and so is one read anywhere else.
"""

from __future__ import annotations

import ast
from collections import deque

from lint_rules.analysis.fold import bindings, delete, plan, warned_unused
from lint_rules.analysis.symbols import Scope
from lint_rules.findings import Edit, Finding, Fix, Position
from lint_rules.slotted import replace

Reads = dict[tuple[Position, Position], tuple[tuple[ast.Name, Scope], ...]]
"""Each None fix's replaced span: the reads of locals it drops, each with the function that
owns the local (``FixBuilder.reads``)."""

_Key = tuple[int, str]
"""A local: its function (by identity) and its name."""
_OWN_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
"""Values with a scope of their own: their reads are not followed."""
_Plan = tuple[list[Edit], list[ast.stmt]]


class _Fold:
    """A local that goes: its function's scope, the findings whose fixes led to it, and its
    plan (None: it cannot go, the shared fix is unsafe)."""

    def __init__(self, owner: Scope, name: str, group: set[int], planned: _Plan | None) -> None:
        self.owner, self.name, self.group, self.planned = owner, name, group, planned


def combine(findings: list[Finding], reads: Reads, lines: list[str]) -> list[Finding]:
    """``findings`` with the shared fixes of the module's docstring in place."""
    hits: dict[int, set[Edit]] = {}
    dropped: dict[int, set[int]] = {}
    """The dropped reads (by identity): the findings whose fixes drop them."""
    edit_of: dict[int, Edit] = {}
    mixed: set[int] = set()
    todo: deque[tuple[ast.Name, Scope]] = deque()
    for index, finding in enumerate(findings):
        fix = finding.fix
        if fix is None or fix.guard_import is not None:
            continue
        for edit in fix.edits:
            for node, owner in reads.get((edit.start, edit.end), ()):
                hits.setdefault(index, set()).add(edit)
                dropped.setdefault(id(node), set()).add(index)
                if edit_of.setdefault(id(node), edit) != edit:
                    mixed.add(id(node))  # two different rewrites of one read: leave it alone
                todo.append((node, owner))
    folds: dict[_Key, _Fold] = {}
    while todo:
        node, owner = todo.popleft()
        key = (id(owner.node), node.id)
        if key in folds or owner.node is None or node.id in owner.params:
            continue
        found = bindings(owner.node, node.id)
        if found is None:
            continue
        loads, stores = found
        if not stores or any(id(n) not in dropped or id(n) in mixed for n in loads):
            continue  # read somewhere else too (for now): it stays in use
        if not warned_unused(owner.node, node.id):
            continue  # only a loop's target: pyflakes never reports it
        group = set().union(*(dropped[id(n)] for n in loads))
        planned = plan(owner.node, stores, lines)
        folds[key] = _Fold(owner, node.id, group, planned)
        for statement in planned[1] if planned is not None else ():
            value = getattr(statement, "value", None)  # (an assignment)
            if value is None or any(isinstance(n, _OWN_SCOPES) for n in ast.walk(value)):
                continue
            for read in ast.walk(value):  # deleted with the statement: these reads go too
                if isinstance(read, ast.Name) and isinstance(read.ctx, ast.Load):
                    local = owner.lookup(read.id)
                    if local is not None and isinstance(
                        local.node, (ast.FunctionDef, ast.AsyncFunctionDef)
                    ):
                        dropped.setdefault(id(read), set()).update(group)
                        todo.append((read, local))  # looked at again, now with this read gone
    return _shared(findings, hits, folds, lines) if folds else findings


def _shared(
    findings: list[Finding], hits: dict[int, set[Edit]], folds: dict[_Key, _Fold], lines: list[str]
) -> list[Finding]:
    """Give the findings of each group (joined where they share a finding) one fix."""
    parent: dict[int, int] = {}

    def root(index: int) -> int:
        while parent.setdefault(index, index) != index:
            index = parent[index]
        return index

    for fold in folds.values():
        first, *rest = sorted(fold.group)
        for index in rest:
            parent[root(index)] = root(first)
    by_root: dict[int, list[_Fold]] = {}
    for fold in folds.values():
        by_root.setdefault(root(min(fold.group)), []).append(fold)
    for top, group_folds in by_root.items():
        indexes = sorted(i for i in hits if root(i) == top)
        parts = [fix for i in indexes if (fix := findings[i].fix) is not None]
        safe = all(part.applicability == "safe" for part in parts)
        notes = list(dict.fromkeys(part.note for part in parts if part.note))
        edits: list[Edit] = sorted({e for i in indexes for e in hits[i]}, key=_edit_order)
        replaced = len(edits)
        whole: dict[int, tuple[ast.AST, list[ast.stmt]]] = {}
        for fold in group_folds:
            if fold.planned is None:
                safe = False
                notes.append(f"leaves `{fold.name}` assigned and never used: delete it")
                continue
            target_edits, statements = fold.planned
            edits.extend(target_edits)
            owner = fold.owner.node
            assert owner is not None
            kept = whole.setdefault(id(owner), (owner, []))[1]
            kept.extend(s for s in statements if s not in kept)
        for function, statements in whole.values():
            edits.extend(delete(statements, function, lines))
        together = (
            tuple(sorted((findings[i].code, findings[i].line, findings[i].col) for i in indexes))
            if replaced > 1
            else ()  # one value, one fix (as TEM005 shares it)
        )
        shared = Fix(
            tuple(dict.fromkeys(edits)),
            note="; ".join(dict.fromkeys(notes)) or None,
            applicability="safe" if safe else "unsafe",
            together=together,
        )
        for index in indexes:
            findings[index] = replace(findings[index], fix=shared)
    return findings


def _edit_order(edit: Edit) -> tuple[Position, Position]:
    return edit.start, edit.end
