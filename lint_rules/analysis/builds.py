"""Where a class is built, and under which condition: is it built only where a re-arm's
condition holds?

A flag re-armed only under a condition C (``if self.config.fp8 is not None or
getattr(self.config, 'use_kitchen', False)``) is maintained in every run that builds the
class holding it, when the files of the run build that class only where C holds (megatron-core
0.14.0 builds its kitchen modules only ``if use_kitchen``). The lifecycle asks this as a
*question* (``question``), a key of the file's verdicts, and a run over several files answers it
once for every file (``Answers``), from the text of the run's files:

- every reference to the class by name, and to its subclasses, is looked at. A reference
  under a test that implies C (``if use_kitchen:``, ``A if config.use_kitchen else B``,
  ``use_kitchen and A``, after ``if not use_kitchen: return``) is a build where C holds;
- a reference elsewhere inside a module-level function or class makes that function or
  class a builder in turn, whose references are looked at the same way;
- a reference at module level under no such test, a builder that no file refers to (it may
  be called from elsewhere), or a question that would read more than ``MAX_FILES`` files
  (``MAX_BYTES`` in all) or ``MAX_NAMES`` names, answers no. So does a class the files never build.

Imports, annotations, ``isinstance``/``issubclass`` tests and the bases of a subclass build
nothing. A test and C are matched by the name they test (``use_kitchen`` the parameter and
``config.use_kitchen`` the attribute are taken for the same switch), as re-arms are matched by
attribute name: docs/rules.md says so.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from lint_rules.analysis import prefilter
from lint_rules.analysis.blocks import block
from lint_rules.deep import deep
from lint_rules.findings import Evidence

PREFIX = "built:"
MAX_FILES = 4
"""Files naming one of the question's classes or builders, at most, read for one answer."""
MAX_NAMES = 16
MAX_BYTES = 256 << 10
"""Bytes of those files, at most: what an answer may parse (checked before it parses)."""

Term = tuple[str, str]
"""``("truthy", name)`` or ``("set", name)`` (``name is not None``)."""


def question(cls: str, conditions: Sequence[str]) -> str:
    """The key asking whether ``cls`` is built only where every one of ``conditions`` holds."""
    return PREFIX + cls + "\0" + "\0".join(conditions)


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def terms(test: ast.expr, outcome: bool) -> set[Term]:
    """What is known to hold on the ``outcome`` side of ``test``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return terms(test.operand, not outcome)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == outcome:  # `a and b` true, `a or b` false: each
            return set().union(*(terms(value, outcome) for value in test.values))
        return set()
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(right, ast.Constant) and right.value is None:
            name = _last_name(test.left)
            if name is not None and isinstance(op, ast.IsNot if outcome else ast.Is):
                return {("set", name)}
        return set()
    name = _last_name(test)
    return {("truthy", name)} if name is not None and outcome else set()


def _satisfied(disjunct: ast.expr, known: set[Term]) -> bool:
    needed = terms(disjunct, True)
    if len(needed) != 1 or isinstance(disjunct, ast.BoolOp):
        return False
    kind, name = next(iter(needed))
    return ("truthy", name) in known or (kind == "set" and ("set", name) in known)


def implies(known: set[Term], conditions: Sequence[ast.expr]) -> bool:
    """Whether what is ``known`` makes every condition hold (one of its ``or`` arms)."""
    for condition in conditions:
        either = isinstance(condition, ast.BoolOp) and isinstance(condition.op, ast.Or)
        arms = condition.values if either else [condition]  # type: ignore[attr-defined]
        if not any(_satisfied(arm, known) for arm in arms):
            return False
    return bool(conditions)


_SKIPPED = frozenset({"isinstance", "issubclass"})


Reference = tuple[ast.expr, frozenset[Term], "str | None"]
"""A name read: the node, what holds there, the module-level function or class it sits in."""


class _Scan:
    """The names one module reads (``found``, by name), with what is known where each sits,
    and the classes it derives from each name (``subclasses``). ``marks``: the lines that may
    hold a name looked for (ascending); a statement spanning none is not walked."""

    def __init__(self, marks: list[int] | None = None) -> None:
        self.found: dict[str, list[Reference]] = {}
        self.subclasses: dict[str, list[str]] = {}
        self.marks = marks

    def body(self, body: Sequence[ast.stmt], known: frozenset[Term], top: str | None) -> None:
        for _, stmt, after in block(body):  # only what can run (``blocks``)
            if prefilter.spans_a_mark(self.marks, stmt):
                self.stmt(stmt, known, top)
            for test, outcome in after:  # `if not use_kitchen: return ...`: what follows needs it
                known = known | terms(test.test, outcome)

    def stmt(self, stmt: ast.stmt, known: frozenset[Term], top: str | None) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return
        if isinstance(stmt, ast.ClassDef):
            for base in stmt.bases:
                name = _last_name(base)
                if name is not None:
                    self.subclasses.setdefault(name, []).append(stmt.name)
                if isinstance(base, ast.Attribute):
                    self.expr(base.value, known, top)
                elif not isinstance(base, ast.Name):
                    self.expr(base, known, top)
            for part in (*stmt.keywords, *stmt.decorator_list):
                self.expr(part, known, top)  # type: ignore[arg-type]
            self.body(stmt.body, known, top or stmt.name)
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = top or stmt.name
            for default in (*stmt.args.defaults, *stmt.args.kw_defaults, *stmt.decorator_list):
                if default is not None:
                    self.expr(default, known, top)
            self.body(stmt.body, known, inner)
            return
        if isinstance(stmt, ast.If):
            self.expr(stmt.test, known, top)
            self.body(stmt.body, known | terms(stmt.test, True), top)
            self.body(stmt.orelse, known | terms(stmt.test, False), top)
            return
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.expr(stmt.value, known, top)
            return
        for name, value in ast.iter_fields(stmt):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.stmt):
                        self.stmt(item, known, top)
                    elif isinstance(item, ast.AST):
                        self.part(item, known, top)
            elif isinstance(value, ast.AST) and name != "annotation":
                self.part(value, known, top)

    def part(self, node: ast.AST, known: frozenset[Term], top: str | None) -> None:
        if isinstance(node, ast.expr):
            self.expr(node, known, top)
        else:  # handlers, items, cases...
            for value in ast.iter_child_nodes(node):
                if isinstance(value, ast.stmt):
                    self.stmt(value, known, top)
                else:
                    self.part(value, known, top)

    def expr(self, node: ast.expr, known: frozenset[Term], top: str | None) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self.found.setdefault(node.id, []).append((node, known, top))
            return
        if isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Load):
                self.found.setdefault(node.attr, []).append((node, known, top))
            self.expr(node.value, known, top)
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test, known, top)
            self.expr(node.body, known | terms(node.test, True), top)
            self.expr(node.orelse, known | terms(node.test, False), top)
            return
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for index, value in enumerate(node.values):
                held = set().union(*(terms(v, True) for v in node.values[:index]))
                self.expr(value, known | held, top)
            return
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in _SKIPPED:
            for value in node.args[:1]:  # `isinstance(x, K)` builds no K (`x` may build one)
                self.expr(value, known, top)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, known, top)
            elif isinstance(child, ast.AST):
                self.part(child, known, top)


class Answers:
    """The answers of one run (``paths``: its files), sharing what they read: the files' bytes
    (searched for each name; kept up to ``KEEP_BYTES``) and the trees of the files parsed."""

    KEEP_BYTES = 64 << 20

    def __init__(
        self,
        paths: Sequence[str],
        gates: prefilter.Gates = prefilter.ON,
        read: dict[str, bytes] | None = None,
    ) -> None:
        """``read``: the bytes of files already read by the run (kept, not read again)."""
        self.paths = paths
        self.gates = gates
        self._bytes: dict[str, bytes] = dict(read or {})
        self._kept = sum(map(len, self._bytes.values()))
        self._trees: dict[str, ast.Module | None] = {}
        self._scans: dict[tuple[str, str], _Scan | None] = {}
        self._hits: dict[str, list[str]] = {}

    def _data(self, path: str) -> bytes:
        data = self._bytes.get(path)
        if data is None:
            from lint_rules.fileio import SourceError, read_regular

            try:  # never a FIFO (it could block forever) nor a device (/dev/zero never ends)
                data = read_regular(path)
            except SourceError:
                data = b""
            if self._kept + len(data) <= self.KEEP_BYTES:
                self._bytes[path] = data
                self._kept += len(data)
        return data

    def naming(self, name: str, read: set[str]) -> list[str] | None:
        """The files whose bytes spell ``name``; None as soon as they and the files ``read``
        so far are more than one question may read (``MAX_FILES``, ``MAX_BYTES``)."""
        found = self._hits.get(name)
        if found is None:
            needle, found = name.encode(), []
            for path in self.paths:
                spelled = self.gates.spells(self._data(path), needle)
                if spelled is None:  # (the gates off: parsed, and asked whether it reads it)
                    scan = self.scan(path, name)
                    spelled = scan is not None and (name in scan.found or name in scan.subclasses)
                if spelled:
                    found.append(path)
                    if _too_much(read.union(found), self._data):
                        return None  # (not kept: the rest of the files were not searched)
            self._hits[name] = found
        return None if _too_much(read.union(found), self._data) else found

    def scan(self, path: str, name: str) -> _Scan | None:
        """Where the file reads ``name``, and what it derives from it (parsed once per run;
        only the statements whose lines spell the name are walked); None if unparsable."""
        key = (path, name)
        if key not in self._scans:
            try:  # a long expression (a generated table) is parsed and walked in a deep stack
                self._scans[key] = self._scan(path, name)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
                self._scans[key] = None
        return self._scans[key]

    @deep
    def _scan(self, path: str, name: str) -> _Scan | None:
        data = self._data(path)
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse(data)
            except (SyntaxError, ValueError):
                self._trees[path] = None
        tree = self._trees[path]
        if tree is None:
            return None
        scan = _Scan(self.gates.lines_spelling(data, name.encode()))
        scan.body(tree.body, frozenset(), None)
        return scan

    def answer(self, key: str) -> tuple[Evidence, ...] | None:
        """Where the run builds the question's class, when it builds it only where the
        condition holds (the first few places, as evidence); None when it may build it
        elsewhere, never builds it, or the question reaches too far."""
        cls, *conditions_text = key[len(PREFIX) :].split("\0")
        try:
            conditions = [ast.parse(c, mode="eval").body for c in conditions_text]
        except SyntaxError:  # a condition shortened for its message ("...")
            return None
        todo, seen = [cls], {cls}
        classes = {cls}  # the class and its subclasses; the other names are builders
        places: list[Evidence] = []
        read: set[str] = set()
        while todo:
            name = todo.pop()
            naming = self.naming(name, read)
            if naming is None:
                return None
            read.update(naming)
            referenced = False
            for path in naming:
                scan = self.scan(path, name)
                if scan is None:
                    continue
                for subclass in scan.subclasses.get(name, ()):
                    if subclass not in seen:
                        seen.add(subclass)
                        classes.add(subclass)
                        todo.append(subclass)
                for node, known, top in scan.found.get(name, ()):
                    referenced = True
                    if implies(set(known), conditions):
                        if len(places) < 3:
                            places.append(_built_here(node, name, path))
                    elif top is None:
                        return None  # built at module level, whatever holds
                    elif top not in seen:
                        seen.add(top)
                        todo.append(top)
            if not referenced and name not in classes:
                return None  # a builder no file calls: it may be called from elsewhere
            if len(seen) > MAX_NAMES:
                return None
        return tuple(places) or None


def _too_much(paths: set[str], data: Callable[[str], bytes]) -> bool:
    return len(paths) > MAX_FILES or sum(len(data(path)) for path in paths) > MAX_BYTES


def _built_here(node: ast.expr, name: str, path: str) -> Evidence:
    return Evidence(
        f"`{name}` is built only where the condition holds", node.lineno, node.col_offset, path
    )
