"""What a file binds: module-level names (imports with their ``try``/``if`` alternatives,
functions, classes, assignments), function scopes, and the classes defined in the file.

Nothing here knows about TE; ``resolve`` turns these bindings into meanings.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Union

from lint_rules.findings import ast_lines
from lint_rules.te import FLAG

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
Branch = tuple[ast.expr, bool]
"""A guarding condition and the outcome under which the code runs (True: the ``if`` body)."""


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def constant_str(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def target_names(target: ast.expr) -> Iterator[ast.Name]:
    """The names an assignment or loop target binds."""
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def target_paths(
    target: ast.expr, path: tuple[int, ...] | None = ()
) -> Iterator[tuple[ast.Name, tuple[int, ...] | None]]:
    """The names a target binds, each with its position in nested tuples (None after ``*``)."""
    if isinstance(target, ast.Name):
        yield target, path
    elif isinstance(target, (ast.Tuple, ast.List)):
        for index, elt in enumerate(target.elts):
            yield from target_paths(elt, None if path is None else (*path, index))
    elif isinstance(target, ast.Starred):
        yield from target_paths(target.value, None)


def statements(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    """Every statement of a body, through compound statements but not into nested scopes,
    in source order.

    Assignments are statements, so this finds ``self.x = ...`` without visiting expressions.
    """
    found: list[ast.stmt] = []
    pending = list(reversed(body))
    while pending:
        stmt = pending.pop()
        found.append(stmt)
        kind = type(stmt)
        if kind in _SIMPLE or kind in _NESTED_SCOPES:
            continue
        pending.extend(reversed(blocks(stmt)))
    return found


def blocks(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements a compound statement holds, in order: its body, ``else``, ``finally``,
    then its ``except`` handlers' and ``match`` cases' bodies."""
    inner: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        inner.extend(getattr(stmt, name, ()))
    for handler in getattr(stmt, "handlers", ()):
        inner.extend(handler.body)
    for case in getattr(stmt, "cases", ()):
        inner.extend(case.body)
    return inner


_NESTED_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_SIMPLE = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass, ast.Raise}
    | {ast.Import, ast.ImportFrom, ast.Break, ast.Continue, ast.Delete, ast.Global}
    | {ast.Nonlocal, ast.Assert}
)
"""Statements that hold no block."""


def span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where a node starts and ends in the source: ``(line, column)`` pairs."""
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    return start, (node.end_lineno or start[0], node.end_col_offset or 0)  # type: ignore[attr-defined]


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    """``inner`` lies within ``outer``'s source range."""
    (start, end), (inner_start, inner_end) = span(outer), span(inner)
    return start <= inner_start and inner_end <= end


def runs_before(function: FunctionNode, node: ast.AST) -> Iterator[ast.stmt]:
    """The statements of ``function`` that have run whenever ``node`` runs: those ahead of it
    in each block that encloses it (not inside a loop, ``try`` or branch it is not in)."""
    if isinstance(function, ast.Lambda):
        return
    body: Sequence[ast.stmt] = function.body
    while body:
        inner: Sequence[ast.stmt] = ()
        for index, stmt in enumerate(body):
            if contains(stmt, node):
                yield from body[:index]
                if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    blocks = [getattr(stmt, name, ()) for name in ("body", "orelse", "finalbody")]
                    blocks += [h.body for h in getattr(stmt, "handlers", ())]
                    blocks += [c.body for c in getattr(stmt, "cases", ())]
                    inner = next((b for b in blocks if b and _contains_block(b, node)), ())
                break
        body = inner


def _contains_block(block: Sequence[ast.stmt], node: ast.AST) -> bool:
    return any(contains(stmt, node) for stmt in block)


def stores_flag(stmt: ast.stmt, mapping: str) -> bool:
    """Does ``stmt`` replace (or drop) the flag's key of the mapping named ``mapping``:
    ``m["is_first_microbatch"] = v``, ``m.update(is_first_microbatch=v)``, ``del m[...]``,
    ``m.pop("is_first_microbatch")``, or ``m = <a new mapping that does not mention m>``?"""

    def is_key(target: ast.expr) -> bool:
        return (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == mapping
            and constant_str(target.slice) == FLAG
        )

    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if any(is_key(t) for t in targets):
            return True
        rebinds = any(isinstance(t, ast.Name) and t.id == mapping for t in targets)
        mentions = any(isinstance(n, ast.Name) and n.id == mapping for n in ast.walk(stmt.value))
        return rebinds and not mentions
    if isinstance(stmt, ast.Delete):
        return any(is_key(t) for t in stmt.targets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == mapping
        ):
            return False
        if func.attr == "update":
            return any(kw.arg == FLAG for kw in call.keywords)
        if func.attr == "pop":
            return bool(call.args) and constant_str(call.args[0]) == FLAG
    return False


# --------------------------------------------------------------------------------------------
# Function scopes


class Binding:
    """One way a local name gets a value inside a function (a slotted class: a scope makes
    one per assignment)."""

    __slots__ = ("how", "value", "branches", "qualname", "definition", "path")

    def __init__(
        self,
        how: str,
        value: ast.expr | None,
        branches: tuple[Branch, ...],
        qualname: str = "",
        definition: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None = None,
        path: tuple[int, ...] | None = (),
    ) -> None:
        self.how = how
        """"assign" | "unpack" | "for" | "import" | "def" | "class" | "aug" | "other"."""
        self.value = value
        self.branches = branches
        self.qualname = qualname
        self.definition = definition
        self.path = path
        """For "for" and "unpack": where the name sits in the target (``for i, x in ...``:
        (1,))."""

    def __repr__(self) -> str:
        return f"Binding({self.how!r}, {self.value!r}, {self.branches!r})"


@dataclass
class Scope:
    """What a function binds: parameters, local assignments, dict-key stores, loop names."""

    node: FunctionNode | None
    parent: Scope | None
    cls: ast.ClassDef | None
    params: dict[str, ast.expr | None] = field(default_factory=dict)
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    key_stores: dict[str, list[tuple[ast.AST, ast.expr, tuple[Branch, ...]]]] = field(
        default_factory=dict
    )

    def lookup(self, name: str) -> Scope | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.params or name in scope.bindings:
                return scope
            scope = scope.parent
        return None

    def enclosing_class(self) -> ast.ClassDef | None:
        """The class of the nearest enclosing method."""
        current: Scope | None = self
        while current is not None:
            if current.cls is not None:
                return current.cls
            current = current.parent
        return None

    @property
    def self_name(self) -> str | None:
        """The first parameter of a method (``self``), if this function is one."""
        return self._first_parameter() if self._method_kind() == "instance" else None

    @property
    def cls_name(self) -> str | None:
        """The first parameter of a classmethod (``cls``), if this function is one."""
        return self._first_parameter() if self._method_kind() == "class" else None

    def _first_parameter(self) -> str | None:
        assert isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef))
        args = self.node.args.posonlyargs + self.node.args.args
        return args[0].arg if args else None

    def _method_kind(self) -> str | None:
        if self.cls is None or not isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        names = {d.id for d in self.node.decorator_list if isinstance(d, ast.Name)}
        if "staticmethod" in names:
            return None
        return "class" if "classmethod" in names else "instance"


_INERT = frozenset({ast.Return, ast.Pass, ast.Raise, ast.Break, ast.Continue, ast.Delete})
_INERT |= {ast.Assert, ast.Global, ast.Nonlocal}
"""Statements that bind no name (but a walrus in their expressions) and hold no block."""


class _ScopeCollector:
    """Collect a function's bindings, with the guarding branches each one sits in."""

    def __init__(self, scope: Scope, walrus: bool = True) -> None:
        self.scope = scope
        self.walrus = walrus
        """False when the file has no ``:=``: expressions then bind nothing."""

    def bind(self, name: str, binding: Binding) -> None:
        self.scope.bindings.setdefault(name, []).append(binding)

    def collect(self, node: FunctionNode) -> None:
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            self.scope.params[arg.arg] = arg.annotation
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                self.scope.params[arg.arg] = None
        if isinstance(node, ast.Lambda):
            self.expr(node.body, ())
        else:
            self.block(node.body, ())

    def block(self, body: Sequence[ast.stmt], branches: tuple[Branch, ...]) -> None:
        for stmt in body:
            self.stmt(stmt, branches)

    def stmt(self, stmt: ast.stmt, branches: tuple[Branch, ...]) -> None:
        kind = type(stmt)
        if kind is ast.Assign:  # the most frequent first: a scope is built per function
            for target in stmt.targets:  # type: ignore[attr-defined]
                self.assign_target(target, stmt.value, branches)  # type: ignore[attr-defined]
        elif kind in _INERT:
            if not self.walrus:
                return
        elif kind is ast.Expr:
            self.update_call(stmt.value, branches)  # type: ignore[attr-defined]
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            self.bind(stmt.name, Binding("def", None, branches, definition=stmt))  # type: ignore[attr-defined,arg-type]
            return
        elif kind is ast.ClassDef:
            self.bind(stmt.name, Binding("class", None, branches, definition=stmt))  # type: ignore[attr-defined,arg-type]
            return
        elif kind is ast.If:
            self.expr(stmt.test, branches)  # type: ignore[attr-defined]
            self.block(stmt.body, (*branches, (stmt.test, True)))  # type: ignore[attr-defined]
            self.block(stmt.orelse, (*branches, (stmt.test, False)))  # type: ignore[attr-defined]
            return
        elif kind is ast.AnnAssign:
            if stmt.value is not None:  # type: ignore[attr-defined]
                self.assign_target(stmt.target, stmt.value, branches)  # type: ignore[attr-defined]
        elif kind is ast.AugAssign:
            for name in target_names(stmt.target):  # type: ignore[attr-defined]
                self.bind(name.id, Binding("aug", stmt.value, branches))  # type: ignore[attr-defined]
        elif kind is ast.For or kind is ast.AsyncFor:
            for name, path in target_paths(stmt.target):  # type: ignore[attr-defined]
                self.bind(name.id, Binding("for", stmt.iter, branches, path=path))  # type: ignore[attr-defined]
        elif kind is ast.With or kind is ast.AsyncWith:
            for item in stmt.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    for name in target_names(item.optional_vars):
                        self.bind(name.id, Binding("other", None, branches))
        elif kind is ast.Import:
            for alias in stmt.names:  # type: ignore[attr-defined]
                local = alias.asname or alias.name.split(".")[0]
                qual = alias.name if alias.asname else alias.name.split(".")[0]
                self.bind(local, Binding("import", None, branches, qual))
        elif kind is ast.ImportFrom:
            module = "." * stmt.level + (stmt.module or "")  # type: ignore[attr-defined]
            for alias in stmt.names:  # type: ignore[attr-defined]
                local = alias.asname or alias.name
                self.bind(local, Binding("import", None, branches, f"{module}.{alias.name}"))
        elif kind is ast.Try or kind.__name__ == "TryStar":
            self.block(stmt.body, branches)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    self.bind(handler.name, Binding("other", None, branches))
                self.block(handler.body, branches)
            self.block(stmt.orelse, branches)  # type: ignore[attr-defined]
            self.block(stmt.finalbody, branches)  # type: ignore[attr-defined]
            return
        if self.walrus:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.expr(child, branches)
        if kind in _SIMPLE:
            return
        for field_name in ("body", "orelse"):  # for, while, with: the same branches
            for child in getattr(stmt, field_name, ()):
                self.stmt(child, branches)

    def assign_target(
        self, target: ast.expr, value: ast.expr, branches: tuple[Branch, ...]
    ) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, Binding("assign", value, branches))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for name, path in target_paths(target):
                self.bind(name.id, Binding("unpack", value, branches, path=path))
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and constant_str(target.slice) == FLAG
        ):
            self.scope.key_stores.setdefault(target.value.id, []).append((target, value, branches))

    def update_call(self, call: ast.expr, branches: tuple[Branch, ...]) -> None:
        """``kw.update(is_first_microbatch=v)`` stores the key like a subscript would."""
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("update", "setdefault")
            and isinstance(call.func.value, ast.Name)
        ):
            for kw in call.keywords:
                if kw.arg == FLAG:
                    self.scope.key_stores.setdefault(call.func.value.id, []).append(
                        (kw, kw.value, branches)
                    )

    def expr(self, expr: ast.expr, branches: tuple[Branch, ...]) -> None:
        """Walrus targets bind in the function; nested scopes are skipped."""
        if not self.walrus:
            return
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.NamedExpr):
                self.bind(node.target.id, Binding("assign", node.value, branches))
            if isinstance(node, (ast.Lambda,)):
                continue
            stack.extend(ast.iter_child_nodes(node))


# --------------------------------------------------------------------------------------------
# Classes defined in the file


@dataclass
class ClassInfo:
    """A class defined in the file: its methods and what its methods store on ``self``."""

    node: ast.ClassDef
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    properties: set[str]
    attributes: dict[str, list[tuple[ast.expr, FunctionNode]]]
    """``self.x = value`` in a method: the values of ``x``, each with its method."""
    additions: dict[str, list[tuple[str, ast.expr, FunctionNode]]]
    """``self.x.append(v)`` / ``.extend(vs)`` / ``self.x[k] = v``: what goes into ``x``."""
    class_attributes: dict[str, ast.expr]
    annotations: dict[str, ast.expr]
    """``x: T`` in the class body or ``self.x: T = ...`` in a method: the declared type."""


_PROPERTY_DECORATORS = frozenset({"property", "cached_property"})
_ADDERS = {"append": "item", "add": "item", "insert": "item", "extend": "items"}


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {
        d.id if isinstance(d, ast.Name) else d.attr
        for d in node.decorator_list
        if isinstance(d, (ast.Name, ast.Attribute))
    }


def _self_attr(node: ast.expr, self_name: str) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    ):
        return node.attr
    return None


def _class_info(node: ast.ClassDef) -> ClassInfo:
    info = ClassInfo(node, {}, set(), {}, {}, {}, {})
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = _decorator_names(stmt)
            if stmt.name not in info.methods or not decorators & {"setter", "deleter"}:
                info.methods[stmt.name] = stmt
            if decorators & _PROPERTY_DECORATORS:
                info.properties.add(stmt.name)
            args = stmt.args.posonlyargs + stmt.args.args
            if args:
                _collect_self_stores(info, stmt, args[0].arg)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    info.class_attributes[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.value is not None:
                info.class_attributes[stmt.target.id] = stmt.value
            info.annotations[stmt.target.id] = stmt.annotation
    return info


def _stored_names(node: ast.ClassDef, names: set[str]) -> None:
    """Add the keys ``_class_info(node)`` would have in its attributes, additions, class
    attributes, annotations and properties: the same statements, read for names only."""
    for stmt in node.body:
        kind = type(stmt)
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            if _decorator_names(stmt) & _PROPERTY_DECORATORS:  # type: ignore[arg-type]
                names.add(stmt.name)  # type: ignore[attr-defined]
            args = stmt.args.posonlyargs + stmt.args.args  # type: ignore[attr-defined]
            if args:
                _self_store_names(stmt.body, args[0].arg, names)  # type: ignore[attr-defined]
        elif kind is ast.Assign:
            names.update(t.id for t in stmt.targets if type(t) is ast.Name)  # type: ignore[attr-defined]
        elif kind is ast.AnnAssign and type(stmt.target) is ast.Name:  # type: ignore[attr-defined]
            names.add(stmt.target.id)  # type: ignore[attr-defined]


def _self_store_names(body: list[ast.stmt], self_name: str, names: set[str]) -> None:
    """The names ``_collect_self_stores`` files under (for ``self_name``), in ``body``."""
    for sub in statements(body):
        kind = type(sub)
        if kind is ast.Assign or kind is ast.AnnAssign:
            if sub.value is None:  # type: ignore[attr-defined]
                continue
            targets = sub.targets if kind is ast.Assign else [sub.target]  # type: ignore[attr-defined]
            for target in targets:
                if type(target) is ast.Subscript:
                    target = target.value
                if (
                    type(target) is ast.Attribute
                    and type(target.value) is ast.Name  # type: ignore[attr-defined]
                    and target.value.id == self_name  # type: ignore[attr-defined]
                ):
                    names.add(target.attr)  # type: ignore[attr-defined]
        elif kind is ast.Expr:
            call = sub.value  # type: ignore[attr-defined]
            if (
                type(call) is ast.Call
                and type(call.func) is ast.Attribute
                and call.func.attr in _ADDERS
                and call.args
            ):
                attr = _self_attr(call.func.value, self_name)
                if attr is not None:
                    names.add(attr)


def _collect_self_stores(
    info: ClassInfo, method: ast.FunctionDef | ast.AsyncFunctionDef, self_name: str
) -> None:
    for sub in statements(method.body):
        if isinstance(sub, (ast.Assign, ast.AnnAssign)):
            if sub.value is None:
                continue
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for target in targets:
                attr = _self_attr(target, self_name)
                if attr is not None:
                    info.attributes.setdefault(attr, []).append((sub.value, method))
                    if isinstance(sub, ast.AnnAssign):
                        info.annotations[attr] = sub.annotation
                elif isinstance(target, ast.Subscript):
                    attr = _self_attr(target.value, self_name)
                    if attr is not None:
                        info.additions.setdefault(attr, []).append(("item", sub.value, method))
        elif (
            isinstance(sub, ast.Expr)
            and isinstance(sub.value, ast.Call)
            and isinstance(sub.value.func, ast.Attribute)
            and sub.value.func.attr in _ADDERS
            and sub.value.args
        ):
            attr = _self_attr(sub.value.func.value, self_name)
            if attr is not None:
                how = _ADDERS[sub.value.func.attr]
                info.additions.setdefault(attr, []).append((how, sub.value.args[-1], method))


# --------------------------------------------------------------------------------------------
# The module


def _only_called(source: str | None, name: str) -> bool:
    """Every occurrence of ``name`` as a word in ``source`` is ``.name(``."""
    if source is None or not source.isascii():
        return False  # an identifier may be spelled with characters that normalise to it
    at = source.find(name)
    end = len(source)
    while at >= 0:
        after = at + len(name)
        word = not (at and _is_word(source[at - 1])) and not (
            after < end and _is_word(source[after])
        )
        if word and not (source[at - 1 : at] == "." and source[after : after + 1] == "("):
            return False
        at = source.find(name, after)
    return True


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _may_nest_class(source: str) -> bool:
    """Whether a ``class`` statement may stand below the top of the module: some line starts
    with an indented ``class`` (a ``class`` statement always starts its line)."""
    if "\r" in source:
        return True  # lines that end in a carriage return alone: not searched here
    at = source.find("class")
    while at >= 0:
        start = source.rfind("\n", 0, at) + 1
        if at > start and not source[start:at].strip(" \t\f"):
            return True
        at = source.find("class", at + 5)
    return False


class ModuleSymbols:
    """Module-level names, and (lazily) the scopes and classes the analysis asks about.

    Imports inside functions live in their scopes, not here.
    """

    def __init__(self, tree: ast.Module, source: str | None = None) -> None:
        self.walrus = source is None or ":=" in source
        self._walrus_marks: list[int] | None = None
        if self.walrus and source is not None:
            marks = [0]  # lines up to each line that spell `:=` (a string may: only a maybe)
            marks += accumulate(":=" in line for line in ast_lines(source))
            self._walrus_marks = marks
        self.alias_choices: dict[str, list[str]] = {}
        """Every module a module-level name may be imported from (``try``/``if`` picks one)."""
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.star_modules: list[str] = []
        """Modules imported with ``from M import *``."""
        self.assigns: dict[str, list[ast.expr]] = {}
        self._class_info: dict[ast.ClassDef, ClassInfo] = {}
        self._scopes: dict[FunctionNode, Scope] = {}
        self._tree = tree
        self._source = source
        self._stored: frozenset[str] | None = None
        self._only_called: dict[str, bool] = {}
        for stmt in tree.body:
            self._collect(stmt)

    def _alias(self, local: str, qualname: str) -> None:
        """Remember every module a name may come from (``try``/``if`` picks one at run time)."""
        choices = self.alias_choices.setdefault(local, [])
        if qualname not in choices:
            choices.append(qualname)

    def _collect(self, stmt: ast.stmt) -> None:
        kind = type(stmt)
        if kind is ast.Import:
            for alias in stmt.names:  # type: ignore[attr-defined]
                if alias.asname:
                    self._alias(alias.asname, alias.name)
                else:
                    root = alias.name.split(".")[0]
                    self._alias(root, root)
        elif kind is ast.ImportFrom:
            module = "." * stmt.level + (stmt.module or "")  # type: ignore[attr-defined]
            for alias in stmt.names:  # type: ignore[attr-defined]
                if alias.name != "*":
                    self._alias(alias.asname or alias.name, f"{module}.{alias.name}")
                elif module not in self.star_modules:
                    self.star_modules.append(module)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            self.functions[stmt.name] = stmt  # type: ignore[attr-defined]
        elif kind is ast.ClassDef:
            self.classes[stmt.name] = stmt  # type: ignore[attr-defined]
        elif kind is ast.Assign:
            for target in stmt.targets:  # type: ignore[attr-defined]
                if type(target) is ast.Name:
                    self.assigns.setdefault(target.id, []).append(stmt.value)  # type: ignore[attr-defined]
        elif kind is ast.AnnAssign:
            if stmt.value and type(stmt.target) is ast.Name:  # type: ignore[attr-defined]
                self.assigns.setdefault(stmt.target.id, []).append(stmt.value)  # type: ignore[attr-defined]
        elif kind is ast.If or kind is ast.Try or kind is ast.With or kind.__name__ == "TryStar":
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    self._collect(child)
                elif isinstance(child, ast.ExceptHandler):
                    for sub in child.body:
                        self._collect(sub)

    def all_classes(self) -> list[ast.ClassDef]:
        """Every class the file defines, at any depth."""
        body = self._tree.body
        source = self._source
        if source is not None and not _may_nest_class(source):
            # No line starts with an indented `class`: every class statement is at the top.
            return [stmt for stmt in body if isinstance(stmt, ast.ClassDef)]
        found = []
        pending: list[ast.stmt] = list(body)
        while pending:
            stmt = pending.pop()
            if isinstance(stmt, ast.ClassDef):
                found.append(stmt)
            if type(stmt) not in _SIMPLE:
                pending.extend(blocks(stmt))
        return found

    def only_called(self, name: str) -> bool:
        """Whether the ASCII text spells ``name`` only as ``.name(``: then no class stores a
        value under it (a store, an annotation, a class attribute or a property spells it
        otherwise), told without reading a class. False when it cannot be told."""
        known = self._only_called.get(name)
        if known is None:
            known = self._only_called[name] = _only_called(self._source, name)
        return known

    def stored_attributes(self) -> frozenset[str]:
        """Every name an in-file class holds a value under: what its methods store on
        ``self`` (or add to), its class attributes, annotations and properties. Only such an
        attribute of an in-file class can hold a module: any other ``x.name`` is a
        library's attribute, a method, or not resolved."""
        if self._stored is None:
            names: set[str] = set()
            for node in self.all_classes():
                info = self._class_info.get(node)
                if info is not None:
                    names.update(info.attributes, info.additions, info.class_attributes)
                    names.update(info.annotations, info.properties)
                else:
                    _stored_names(node, names)
            self._stored = frozenset(names)
        return self._stored

    def class_info(self, node: ast.ClassDef) -> ClassInfo:
        info = self._class_info.get(node)
        if info is None:
            info = self._class_info[node] = _class_info(node)
        return info

    def scope(self, node: FunctionNode, parent: Scope | None, cls: ast.ClassDef | None) -> Scope:
        """The bindings of a function, collected once, chained to its enclosing function."""
        scope = self._scopes.get(node)
        if scope is None:
            scope = Scope(node, parent, cls)
            _ScopeCollector(scope, self._may_bind_walrus(node)).collect(node)
            self._scopes[node] = scope
        return scope

    def _may_bind_walrus(self, node: FunctionNode) -> bool:
        """Whether the function's lines spell ``:=`` (else its expressions bind nothing)."""
        marks = self._walrus_marks
        if marks is None:
            return self.walrus
        last = min(node.end_lineno or node.lineno, len(marks) - 1)
        return marks[last] > marks[node.lineno - 1]

    def cached_scope(self, node: FunctionNode) -> Scope | None:
        return self._scopes.get(node)
