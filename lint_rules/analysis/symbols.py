"""What a file binds: module-level names (imports with their ``try``/``if`` alternatives,
functions, classes, assignments), and, lazily, its function scopes (``scopes``) and the
classes it defines (``classinfo``).

Nothing here knows about TE; ``resolve`` turns these bindings into meanings. The node helpers
(``nodes``) and scope types are re-exported here, where the rest of the analysis imports them.
"""

from __future__ import annotations

import ast
from bisect import bisect_left

from lint_rules.analysis.classinfo import (
    ClassInfo,
    read_class,
)
from lint_rules.analysis.nodes import (
    SIMPLE_STATEMENTS,
    Branch,
    FunctionNode,
    blocks,
    constant_str,
    contains,
    dotted,
    imported_name,
    is_none,
    runs_before,
    span,
    statements,
    stores_flag,
    target_names,
    target_paths,
)
from lint_rules.analysis.prefilter import ON, Gates
from lint_rules.analysis.scopes import Binding, Scope, ScopeCollector

__all__ = [
    "Binding",
    "Branch",
    "ClassInfo",
    "FunctionNode",
    "ModuleSymbols",
    "Scope",
    "blocks",
    "constant_str",
    "contains",
    "dotted",
    "imported_name",
    "is_none",
    "optional_import",
    "runs_before",
    "span",
    "statements",
    "stores_flag",
    "target_names",
    "target_paths",
]


def optional_import(
    value: ast.expr, helpers: tuple[str, ...], aliases: dict[str, list[str]]
) -> str | None:
    """The dotted name an optional-import helper call imports, if ``value`` is one: a helper
    named in ``helpers`` (by its last name, or by its dotted name as imported), given the
    module (and the symbol) as string constants."""
    if not isinstance(value, ast.Call) or not value.args:
        return None
    spelled = dotted(value.func)
    if spelled is None:
        return None
    head, _, rest = spelled.partition(".")
    qual = spelled
    if aliases.get(head):
        qual = aliases[head][0] + (f".{rest}" if rest else "")
    short = spelled.rsplit(".", 1)[-1]
    if not any(h in (qual, spelled) or ("." not in h and h == short) for h in helpers):
        return None
    texts = [constant_str(a) for a in value.args[:2]]
    for keyword in value.keywords:
        if keyword.arg in ("module", "symbol"):
            index = 0 if keyword.arg == "module" else 1
            while len(texts) <= index:
                texts.append(None)
            texts[index] = constant_str(keyword.value)
    module = texts[0]
    if not module:
        return None
    symbol = texts[1] if len(texts) > 1 else None
    return imported_name(module, symbol) if symbol else module


class ModuleSymbols:
    """Module-level names, and (lazily) the scopes and classes the analysis asks about.

    Imports inside functions live in their scopes, not here.
    """

    def __init__(
        self,
        tree: ast.Module,
        source: str | None = None,
        helpers: tuple[str, ...] = (),
        gates: Gates = ON,
    ) -> None:
        self.helpers = helpers
        """Optional-import helpers (setting ``import-helpers``): ``optional_import``."""
        self.gates = gates
        self._walrus_lines = gates.walrus_lines(source) if source is not None else None
        """The lines that spell ``:=`` (``prefilter``); None: every function may bind one."""
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
        self._all_classes: list[ast.ClassDef] | None = None
        self._only_called: dict[str, bool] = {}
        self._yield_lines: list[int] | None | bool = False
        """The lines that spell ``yield`` (``prefilter.lines_of``), found when first asked
        (False: not yet); None: every function may."""
        for stmt in tree.body:
            self._collect(stmt)

    @property
    def tree(self) -> ast.Module:
        return self._tree

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
                    self._alias(alias.asname or alias.name, imported_name(module, alias.name))
                elif module not in self.star_modules:
                    self.star_modules.append(module)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            self.functions[stmt.name] = stmt  # type: ignore[attr-defined,assignment]
        elif kind is ast.ClassDef:
            self.classes[stmt.name] = stmt  # type: ignore[attr-defined,assignment]
        elif kind is ast.Assign:
            if self.helpers and self._helper_import(stmt):  # type: ignore[arg-type]
                return
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

    def _helper_import(self, stmt: ast.Assign) -> bool:
        """``X, HAVE_X = safe_import_from("pkg.mod", "X")`` (or ``mod, HAVE = safe_import(
        "pkg.mod")``): an import of ``pkg.mod.X`` bound to the first name, like ``from pkg.mod
        import X``, so that a fallback bound under ``if not HAVE_X:`` never masks it."""
        qual = optional_import(stmt.value, self.helpers, self.alias_choices)
        if qual is None or len(stmt.targets) != 1:
            return False
        target = stmt.targets[0]
        if isinstance(target, (ast.Tuple, ast.List)) and target.elts:
            target = target.elts[0]
        if not isinstance(target, ast.Name):
            return False
        self._alias(target.id, qual)
        return True

    def all_classes(self) -> list[ast.ClassDef]:
        """Every class the file defines, at any depth (found once: a new list each time)."""
        if self._all_classes is None:
            self._all_classes = self._find_classes()
        return list(self._all_classes)

    def _find_classes(self) -> list[ast.ClassDef]:
        body = self._tree.body
        source = self._source
        if source is not None and not self.gates.may_nest_class(source):
            # No line starts with an indented `class`: every class statement is at the top.
            return [stmt for stmt in body if isinstance(stmt, ast.ClassDef)]
        found = []
        pending: list[ast.stmt] = list(body)
        while pending:
            stmt = pending.pop()
            if isinstance(stmt, ast.ClassDef):
                found.append(stmt)
            if type(stmt) not in SIMPLE_STATEMENTS:
                pending.extend(blocks(stmt))
        return found

    def only_called(self, name: str) -> bool:
        """Whether the ASCII text spells ``name`` only as ``.name(``: then no class stores a
        value under it (a store, an annotation, a class attribute or a property spells it
        otherwise), told without reading a class. False when it cannot be told."""
        known = self._only_called.get(name)
        if known is None:
            known = self._only_called[name] = self.gates.only_called(self._source, name)
        return known

    def stored_attributes(self) -> frozenset[str]:
        """Every name an in-file class holds a value under: what its methods store on
        ``self`` (or add to), its class attributes, annotations and properties. Only such an
        attribute of an in-file class can hold a module: any other ``x.name`` is a
        library's attribute, a method, or not resolved."""
        if self._stored is None:
            names: set[str] = set()
            for node in self.all_classes():
                info = self.class_info(node)
                names.update(info.attributes, info.additions, info.class_attributes)
                names.update(info.annotations, info.properties)
            self._stored = frozenset(names)
        return self._stored

    def class_info(self, node: ast.ClassDef) -> ClassInfo:
        info = self._class_info.get(node)
        if info is None:
            info = self._class_info[node] = read_class(node)
        return info

    def scope(self, node: FunctionNode, parent: Scope | None, cls: ast.ClassDef | None) -> Scope:
        """The bindings of a function, collected once, chained to its enclosing function."""
        scope = self._scopes.get(node)
        if scope is None:
            scope = Scope(node, parent, cls)
            ScopeCollector(scope, self._may_bind_walrus(node)).collect(node)
            self._scopes[node] = scope
        return scope

    def _may_bind_walrus(self, node: FunctionNode) -> bool:
        """Whether the function's lines spell ``:=`` (else its expressions bind nothing)."""
        lines = self._walrus_lines
        if lines is None:
            return True
        at = bisect_left(lines, node.lineno)
        return at < len(lines) and lines[at] <= (node.end_lineno or node.lineno)

    def may_yield(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether the function's lines, its decorators' included, spell ``yield`` (a keyword
        is spelled in ASCII): else no ``yield`` node is in it (``ast.walk`` finds none)."""
        lines = self._yield_lines
        if lines is False:
            source = self._source
            found = self.gates.lines_of(source, ("yield",)) if source is not None else None
            lines = self._yield_lines = found
        if lines is None:
            return True
        assert isinstance(lines, list)
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        at = bisect_left(lines, first)
        return at < len(lines) and lines[at] <= (node.end_lineno or node.lineno)

    def cached_scope(self, node: FunctionNode) -> Scope | None:
        return self._scopes.get(node)
