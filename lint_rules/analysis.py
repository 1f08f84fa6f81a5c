"""The analysis core: every rule lives here, every face (flake8, CLI, codemod) adapts it.

One pass over the ``ast`` tree visits calls with the context they need (enclosing class,
function, guarding ``if`` branches, loops). Callees are resolved within the file (imports,
aliases, ``self`` attributes, containers, ``super()``), so that a same-named keyword to a
non-TE function is never reported. Function scopes are summarised lazily, only for functions
that contain a candidate call, which keeps the cost near ``ast.parse`` itself.
"""

from __future__ import annotations

import ast
import builtins
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Union

from lint_rules.findings import Edit, Finding, Fix, Position, split_lines
from lint_rules.rules import (
    FLAG,
    FLAG_POSITION,
    MESSAGES,
    TE_GRAPH_FACTORY,
    TE_ROOT,
    te_class_of,
    te_rejecting_name,
)
from lint_rules.settings import DEFAULT_SETTINGS, Settings

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
Branch = tuple[ast.expr, bool]
"""A guarding condition and the outcome under which the code runs (True: the ``if`` body)."""

_CONTAINER_FACTORIES = frozenset(
    {
        "torch.nn.ModuleList",
        "torch.nn.Sequential",
        "torch.nn.ModuleDict",
        "torch.nn.modules.container.ModuleList",
        "torch.nn.modules.container.Sequential",
        "torch.nn.modules.container.ModuleDict",
        "list",
        "tuple",
    }
)
_NON_TE_BASE_PREFIXES = ("torch.", "builtins.", "typing.", "abc.", "enum.", "dataclasses.")
_BUILTIN_NAMES = frozenset(dir(builtins))
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias, ast.Pass, ast.Break}
    | {ast.Continue, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom}
    | {type(op) for op in (ast.Add(), ast.Sub(), ast.Mult(), ast.Div(), ast.Mod(), ast.Pow())}
    | {ast.And, ast.Or, ast.Not, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is}
    | {ast.IsNot, ast.In, ast.NotIn, ast.USub, ast.UAdd, ast.Invert, ast.FloorDiv, ast.MatMult}
    | {ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift}
)
"""Nodes that can never contain a call: the walk does not descend into them."""
_MAPPING_STORES = frozenset({"update", "setdefault"})
_WRAP_IN_PARENS = (ast.Lambda, ast.IfExp, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Starred)


# --------------------------------------------------------------------------------------------
# What an expression resolves to


@dataclass(frozen=True)
class Kind:
    """The resolved meaning of an expression, as far as the flag is concerned."""

    tag: str
    name: str = ""
    element: Kind | None = None
    node: ast.ClassDef | None = field(default=None, compare=False)


NOT_TE = Kind("not_te")
UNKNOWN = Kind("unknown")
GRAPHED = Kind("graphed")


def te_instance(cls: str) -> Kind:
    return Kind("te_instance", cls)


def join(kinds: Sequence[Kind]) -> Kind:
    """Merge the kinds of several assignments: anything that may be TE stays TE."""
    if not kinds:
        return UNKNOWN
    first = kinds[0]
    if all(k == first for k in kinds):
        return first
    te = [k for k in kinds if k.tag == "te_instance"]
    if te:
        # Keep the class only when every alternative is that class (or plainly not TE, like a
        # `None` placeholder): TEM002 reads the flag's position from it.
        others_inert = all(k.tag == "te_instance" or k == NOT_TE for k in kinds)
        if others_inert and len({k.name for k in te}) == 1:
            return te[0]
        return Kind("te_instance", "")
    for tag in ("te_class", "unbound", "reject", "container"):
        for k in kinds:
            if k.tag == tag:
                return k
    return UNKNOWN


# --------------------------------------------------------------------------------------------
# Function scopes


@dataclass
class Binding:
    """One way a local name gets a value inside a function."""

    how: str  # "assign" | "unpack" | "for" | "import" | "def" | "class" | "aug" | "other"
    value: ast.expr | None
    branches: tuple[Branch, ...]
    qualname: str = ""
    definition: ast.ClassDef | None = None


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


def _target_names(target: ast.expr) -> Iterator[ast.Name]:
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


class _ScopeCollector:
    """Collect a function's bindings, with the guarding branches each one sits in."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

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
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bind(stmt.name, Binding("def", None, branches))
            return
        if isinstance(stmt, ast.ClassDef):
            self.bind(stmt.name, Binding("class", None, branches, definition=stmt))
            return
        if isinstance(stmt, ast.If):
            self.expr(stmt.test, branches)
            self.block(stmt.body, (*branches, (stmt.test, True)))
            self.block(stmt.orelse, (*branches, (stmt.test, False)))
            return
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self.assign_target(target, stmt.value, branches)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign_target(stmt.target, stmt.value, branches)
        elif isinstance(stmt, ast.AugAssign):
            for name in _target_names(stmt.target):
                self.bind(name.id, Binding("aug", stmt.value, branches))
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            for name in _target_names(stmt.target):
                self.bind(name.id, Binding("for", stmt.iter, branches))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    for name in _target_names(item.optional_vars):
                        self.bind(name.id, Binding("other", None, branches))
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                qual = alias.name if alias.asname else alias.name.split(".")[0]
                self.bind(local, Binding("import", None, branches, qual))
        elif isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                local = alias.asname or alias.name
                self.bind(local, Binding("import", None, branches, f"{module}.{alias.name}"))
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.block(stmt.body, branches)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    self.bind(handler.name, Binding("other", None, branches))
                self.block(handler.body, branches)
            self.block(stmt.orelse, branches)  # type: ignore[attr-defined]
            self.block(stmt.finalbody, branches)  # type: ignore[attr-defined]
            return
        elif isinstance(stmt, ast.Expr):
            self.update_call(stmt.value, branches)
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                self.stmt(child, branches)
            elif isinstance(child, ast.expr):
                self.expr(child, branches)

    def assign_target(
        self, target: ast.expr, value: ast.expr, branches: tuple[Branch, ...]
    ) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, Binding("assign", value, branches))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for name in _target_names(target):
                self.bind(name.id, Binding("unpack", value, branches))
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and _constant_str(target.slice) == FLAG
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
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.NamedExpr):
                self.bind(node.target.id, Binding("assign", node.value, branches))
            if isinstance(node, (ast.Lambda,)):
                continue
            stack.extend(ast.iter_child_nodes(node))


def _constant_str(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


# --------------------------------------------------------------------------------------------
# The module-level picture


@dataclass
class ClassInfo:
    """A class defined in the file: its methods and the attributes its methods assign."""

    node: ast.ClassDef
    methods: set[str]
    attributes: dict[str, list[tuple[ast.expr, FunctionNode]]]
    class_attributes: dict[str, ast.expr]


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


@dataclass
class _CallSite:
    """A call that passes the flag, kept to look for a module called twice (TEM005)."""

    key: str
    scope: Scope
    flag_node: ast.AST
    fix: Fix | None
    exclusive_path: tuple[tuple[int, int], ...]
    target: str


class Analyzer:
    """Run every rule over one module tree."""

    def __init__(self, tree: ast.Module, settings: Settings, source: str | None = None) -> None:
        self.tree = tree
        self.source = source
        self.mentions_te = source is None or TE_ROOT in source
        self.source_lines: list[str] | None = None
        self.settings = settings
        self.findings: list[Finding] = []
        self.alias_choices: dict[str, list[str]] = {}
        """Every module a module-level name may be imported from (``try``/``if`` picks one)."""
        self.module_functions: set[str] = set()
        self.module_classes: dict[str, ast.ClassDef] = {}
        self.module_assigns: dict[str, list[ast.expr]] = {}
        self.class_info: dict[ast.ClassDef, ClassInfo] = {}
        self.scopes: dict[FunctionNode, Scope] = {}
        self.reported_keys: set[int] = set()
        self.resolving: set[int] = set()
        self.sites: dict[int, list[_CallSite]] = {}
        self.reported_shared: set[int] = set()
        self.memo: dict[tuple[str, int, str], Any] = {}
        guard_import = settings.guard_import
        self.guards = tuple(dict.fromkeys((*settings.guard_functions, guard_import)))
        self._collect_module()

    # -- module set-up ------------------------------------------------------------------------

    def _collect_module(self) -> None:
        """Module-level names only; imports inside functions live in their scopes."""
        for stmt in self.tree.body:
            self._collect_module_stmt(stmt)

    def _alias(self, local: str, qualname: str) -> None:
        """Remember every module a name may come from (``try``/``if`` picks one at run time)."""
        choices = self.alias_choices.setdefault(local, [])
        if qualname not in choices:
            choices.append(qualname)

    def _collect_module_stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self._alias(alias.asname, alias.name)
                else:
                    root = alias.name.split(".")[0]
                    self._alias(root, root)
        elif isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                if alias.name != "*":
                    self._alias(alias.asname or alias.name, f"{module}.{alias.name}")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.module_functions.add(stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            self.module_classes[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self.module_assigns.setdefault(target.id, []).append(stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value and isinstance(stmt.target, ast.Name):
            self.module_assigns.setdefault(stmt.target.id, []).append(stmt.value)
        elif isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    self._collect_module_stmt(child)
                elif isinstance(child, ast.ExceptHandler):
                    for sub in child.body:
                        self._collect_module_stmt(sub)

    def _class(self, node: ast.ClassDef) -> ClassInfo:
        info = self.class_info.get(node)
        if info is None:
            methods: set[str] = set()
            attributes: dict[str, list[tuple[ast.expr, FunctionNode]]] = {}
            class_attributes: dict[str, ast.expr] = {}
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    methods.add(stmt.name)
                    args = stmt.args.posonlyargs + stmt.args.args
                    if not args:
                        continue
                    self_name = args[0].arg
                    for sub in _statements(stmt.body):
                        if isinstance(sub, (ast.Assign, ast.AnnAssign)):
                            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                            if sub.value is None:
                                continue
                            for target in targets:
                                if (
                                    isinstance(target, ast.Attribute)
                                    and isinstance(target.value, ast.Name)
                                    and target.value.id == self_name
                                ):
                                    attributes.setdefault(target.attr, []).append((sub.value, stmt))
                elif isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name):
                            class_attributes[target.id] = stmt.value
                elif (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.value is not None
                ):
                    class_attributes[stmt.target.id] = stmt.value
            info = ClassInfo(node, methods, attributes, class_attributes)
            self.class_info[node] = info
        return info

    def _scope(self, node: FunctionNode, parent: Scope | None, cls: ast.ClassDef | None) -> Scope:
        scope = self.scopes.get(node)
        if scope is None:
            scope = Scope(node, parent, cls)
            _ScopeCollector(scope).collect(node)
            self.scopes[node] = scope
        return scope

    # -- class hierarchy ----------------------------------------------------------------------

    def lineage(self, node: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its ancestors defined in this file, nearest first, each once."""
        key = ("lineage", id(node), "")
        if key not in self.memo:
            found: list[ast.ClassDef] = []
            pending = [node]
            while pending:
                current = pending.pop(0)
                if any(current is seen for seen in found):
                    continue
                found.append(current)
                for base in current.bases:
                    kind = self.resolve(base, None)
                    if kind.tag == "class" and kind.node is not None:
                        pending.append(kind.node)
            self.memo[key] = found
        return self.memo[key]

    def outside_bases(self, node: ast.ClassDef) -> list[Kind]:
        """What the lineage's bases that are not in-file classes resolve to."""
        kinds = (self.resolve(base, None) for cls in self.lineage(node) for base in cls.bases)
        return [kind for kind in kinds if kind.tag != "class"]

    def class_te_base(self, node: ast.ClassDef) -> str | None:
        """The TE module class this in-file class derives from, if any."""
        return next((k.name for k in self.outside_bases(node) if k.tag == "te_class"), None)

    def class_may_be_te(self, node: ast.ClassDef) -> bool:
        """True when a base is imported from a module we cannot see (maybe a TE subclass)."""
        return any(
            kind.tag == "unknown"
            or (
                kind.tag == "qualname"
                and not kind.name.startswith(_NON_TE_BASE_PREFIXES)
                and not kind.name.startswith(TE_ROOT + ".")
            )
            for kind in self.outside_bases(node)
        )

    def _class_defines(self, node: ast.ClassDef, method: str) -> bool:
        return any(method in self._class(cls).methods for cls in self.lineage(node))

    def _instance_of_class(self, node: ast.ClassDef) -> Kind:
        te = self.class_te_base(node)
        if te is not None:
            overridden = self._class_defines(node, "forward")
            return Kind("te_instance", "" if overridden else te, node=node)
        if self.class_may_be_te(node):
            return UNKNOWN
        return Kind("local_instance", node.name, node=node)

    # -- resolution ---------------------------------------------------------------------------

    def classify_qualname(self, qual: str) -> Kind:
        cls = te_class_of(qual)
        if cls:
            return Kind("te_class", cls)
        reject = te_rejecting_name(qual)
        if reject:
            return Kind("reject", reject)
        return Kind("qualname", qual)

    def resolve_name(self, name: str, scope: Scope | None) -> Kind:
        owner = scope.lookup(name) if scope is not None else None
        if owner is not None:
            if name in owner.params and name not in owner.bindings:
                if owner.self_name == name and owner.cls is not None:
                    return Kind("self", owner.cls.name, node=owner.cls)
                if owner.cls_name == name and owner.cls is not None:
                    return Kind("class", owner.cls.name, node=owner.cls)
                annotation = owner.params[name]
                if annotation is not None:
                    return self.instance_of(self.resolve(annotation, None))
                return UNKNOWN
            kinds = []
            for binding in owner.bindings.get(name, []):
                if binding.how == "assign" and binding.value is not None:
                    kinds.append(self.resolve(binding.value, owner))
                elif binding.how in ("for", "unpack") and binding.value is not None:
                    kinds.append(self.element_of(self.resolve(binding.value, owner)))
                elif binding.how == "def":
                    kinds.append(NOT_TE)
                elif binding.how == "class" and binding.definition is not None:
                    kinds.append(Kind("class", binding.definition.name, node=binding.definition))
                elif binding.how == "import":
                    kinds.append(self.classify_qualname(binding.qualname))
                else:
                    kinds.append(UNKNOWN)
            return join(kinds)
        if name in self.module_classes:
            node = self.module_classes[name]
            return Kind("class", name, node=node)
        if name in self.module_functions:
            return NOT_TE
        if name in self.alias_choices:
            return join([self.classify_qualname(q) for q in self.alias_choices[name]])
        if name in self.module_assigns:
            return join([self.resolve(v, None) for v in self.module_assigns[name]])
        if name in _BUILTIN_NAMES:
            return Kind("qualname", name)
        return UNKNOWN

    def resolve(self, node: ast.expr, scope: Scope | None) -> Kind:
        """What ``node`` evaluates to: a TE class, a TE instance, a container of them..."""
        key = id(node)
        if key in self.resolving:
            return UNKNOWN
        self.resolving.add(key)
        try:
            return self._resolve(node, scope)
        finally:
            self.resolving.discard(key)

    def _resolve(self, node: ast.expr, scope: Scope | None) -> Kind:
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id, scope)
        if isinstance(node, ast.Attribute):
            spelled = _dotted(node)
            if spelled is not None:
                head, _, rest = spelled.partition(".")
                choices = self.alias_choices.get(head, ())
                if len(choices) > 1 and (scope is None or scope.lookup(head) is None):
                    return join([self.classify_qualname(f"{q}.{rest}") for q in choices])
            return self.attribute_of(self.resolve(node.value, scope), node.attr, scope)
        if isinstance(node, ast.Subscript):
            return self.element_of(self.resolve(node.value, scope))
        if isinstance(node, ast.Call):
            return self.call_result(node, scope)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return Kind("container", element=join([self.resolve(e, scope) for e in node.elts]))
        if isinstance(node, ast.Dict):
            return Kind("container", element=join([self.resolve(v, scope) for v in node.values]))
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return Kind("container", element=self.resolve(node.elt, scope))
        if isinstance(node, ast.DictComp):
            return Kind("container", element=self.resolve(node.value, scope))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
            return join([self.resolve(node.left, scope), self.resolve(node.right, scope)])
        if isinstance(node, ast.IfExp):
            return join([self.resolve(node.body, scope), self.resolve(node.orelse, scope)])
        if isinstance(node, (ast.Constant, ast.Lambda)):
            return NOT_TE
        return UNKNOWN

    def element_of(self, kind: Kind) -> Kind:
        if kind.tag == "container" and kind.element is not None:
            return kind.element
        if kind == GRAPHED:  # make_graphed_callables returns a tuple for a tuple of modules
            return GRAPHED
        return UNKNOWN

    def instance_of(self, kind: Kind) -> Kind:
        if kind.tag == "te_class":
            return te_instance(kind.name)
        if kind.tag == "reject":
            return kind
        if kind.tag == "class" and kind.node is not None:
            return self._instance_of_class(kind.node)
        return UNKNOWN

    def attribute_of(self, base: Kind, attr: str, scope: Scope | None) -> Kind:
        if base.tag == "qualname":
            return self.classify_qualname(f"{base.name}.{attr}")
        if base.tag == "self" and base.node is not None:
            return self.self_attribute(base.node, attr)
        if base.tag == "te_instance":
            return base if attr == "forward" else UNKNOWN
        if base.tag == "te_class":
            return Kind("unbound", base.name) if attr == "forward" else UNKNOWN
        if base.tag == "class" and base.node is not None:
            if attr == "forward":
                te = self.class_te_base(base.node)
                if te and not self._class_defines(base.node, "forward"):
                    return Kind("unbound", te)
                if self.class_may_be_te(base.node) and not self._class_defines(
                    base.node, "forward"
                ):
                    return UNKNOWN
            return NOT_TE if self._class_defines(base.node, attr) else UNKNOWN
        if base.tag == "local_instance" and base.node is not None:
            if self._class_defines(base.node, attr):
                return NOT_TE
            return self.self_attribute(base.node, attr)
        if base.tag == "super" and base.node is not None:
            return self.super_kind(base.node) if attr == "forward" else UNKNOWN
        if base.tag == "reject":
            return base
        return UNKNOWN

    def self_attribute(self, cls: ast.ClassDef, attr: str) -> Kind:
        """``self.attr``: a method (not TE), or what the class's methods assign to it."""
        key = ("self_attribute", id(cls), attr)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = UNKNOWN  # a cycle through this attribute resolves to unknown
        result = UNKNOWN
        for owner in self.lineage(cls):
            info = self._class(owner)
            if attr in info.methods:
                result = NOT_TE
                break
            kinds = [
                self.resolve(value, self._scope(method, None, owner))
                for value, method in info.attributes.get(attr, [])
            ]
            if attr in info.class_attributes:
                kinds.append(self.resolve(info.class_attributes[attr], None))
            if kinds:
                result = join(kinds)
                break
        else:
            te = self.class_te_base(cls) if attr == "forward" else None
            if te:
                result = Kind("te_instance", te, node=cls)
        self.memo[key] = result
        return result

    def super_kind(self, cls: ast.ClassDef) -> Kind:
        te = self.class_te_base(cls)
        if te:
            # An in-file ancestor's own forward runs first: its signature, not TE's, decides
            # where a positional flag goes, so the class is left unknown (no TEM002).
            ancestors = self.lineage(cls)[1:]
            overridden = any("forward" in self._class(c).methods for c in ancestors)
            return te_instance("" if overridden else te)
        if self.class_may_be_te(cls):
            return UNKNOWN
        return NOT_TE

    def call_result(self, call: ast.Call, scope: Scope | None) -> Kind:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "super" and scope is not None:
            cls = self._enclosing_class(scope)
            if cls is not None:
                return Kind("super", cls.name, node=cls)
            return UNKNOWN
        if isinstance(func, ast.Name) and func.id == "getattr" and len(call.args) >= 2:
            name = _constant_str(call.args[1])
            if name is not None:
                return self.attribute_of(self.resolve(call.args[0], scope), name, scope)
            return UNKNOWN
        kind = self.resolve(func, scope)
        if kind.tag in ("te_class", "reject", "class"):
            return self.instance_of(kind)
        if kind.tag == "qualname":
            short = kind.name.rsplit(".", 1)[-1]
            if kind.name.startswith(TE_ROOT + ".") and short == TE_GRAPH_FACTORY:
                return GRAPHED
            if kind.name in _CONTAINER_FACTORIES or short in (
                "ModuleList",
                "Sequential",
                "ModuleDict",
            ):
                elements = [self.resolve(a, scope) for a in call.args]
                if short in ("ModuleList", "list", "tuple", "ModuleDict") and elements:
                    return Kind("container", element=self.element_of(elements[0]))
                return Kind("container", element=join(elements))
        return UNKNOWN

    def _enclosing_class(self, scope: Scope) -> ast.ClassDef | None:
        current: Scope | None = scope
        while current is not None:
            if current.cls is not None:
                return current.cls
            current = current.parent
        return None

    # -- guards and tracked values -------------------------------------------------------------

    def is_guard_call(self, node: ast.expr, scope: Scope | None) -> bool:
        if not isinstance(node, ast.Call):
            return False
        spelled = _dotted(node.func)
        if spelled is None:
            return False
        head, _, rest = spelled.partition(".")
        qual = spelled
        owner = scope.lookup(head) if scope is not None else None
        imported = (
            [b.qualname for b in owner.bindings.get(head, []) if b.how == "import"] if owner else []
        )
        if imported:
            qual = imported[0] + ("." + rest if rest else "")
        elif owner is None and head in self.alias_choices:
            qual = self.alias_choices[head][0] + ("." + rest if rest else "")
        for guard in self.guards:
            if "." in guard:
                if (
                    qual == guard
                    or spelled == guard
                    or qual.endswith("." + guard)
                    or spelled.endswith("." + guard)
                ):
                    return True
            elif qual.rsplit(".", 1)[-1] == guard:
                return True
        return False

    def implies_guard(
        self, test: ast.expr, positive: bool, scope: Scope | None, depth: int = 0
    ) -> bool:
        """Does the test having this outcome prove that a guard call returned True?"""
        if depth > 20:
            return False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.implies_guard(test.operand, not positive, scope, depth + 1)
        if isinstance(test, ast.BoolOp):
            parts = [self.implies_guard(v, positive, scope, depth + 1) for v in test.values]
            if isinstance(test.op, ast.And):
                return any(parts) if positive else all(parts)
            return all(parts) if positive else any(parts)
        if isinstance(test, ast.NamedExpr):
            return self.implies_guard(test.value, positive, scope, depth + 1)
        if not positive:
            return False
        if self.is_guard_call(test, scope):
            return True
        if isinstance(test, ast.Name) and scope is not None:
            owner = scope.lookup(test.id)
            if owner is not None and test.id not in owner.params:
                bindings = owner.bindings.get(test.id, [])
                return bool(bindings) and all(
                    b.how == "assign" and b.value is not None and self.is_guard_call(b.value, owner)
                    for b in bindings
                )
        return False

    def branches_guarded(self, branches: Sequence[Branch], scope: Scope | None) -> bool:
        return any(self.implies_guard(test, outcome, scope) for test, outcome in branches)

    def is_tracked(
        self, value: ast.expr, scope: Scope | None, seen: set[str] | None = None
    ) -> bool:
        """Is this flag value safe to pass to TE (None, a parameter, or guarded)?"""
        if _is_none(value):
            return True
        if isinstance(value, ast.IfExp):
            body_ok = self.implies_guard(value.test, True, scope) or self.is_tracked(
                value.body, scope, seen
            )
            else_ok = self.implies_guard(value.test, False, scope) or self.is_tracked(
                value.orelse, scope, seen
            )
            return body_ok and else_ok
        if isinstance(value, ast.Name) and scope is not None:
            seen = seen if seen is not None else set()
            if value.id in seen:
                return False
            owner = scope.lookup(value.id)
            if owner is None:
                return False
            bindings = owner.bindings.get(value.id, [])
            if value.id in owner.params and not bindings:
                return True
            if not bindings:
                return False
            seen = seen | {value.id}
            for binding in bindings:
                if self.branches_guarded(binding.branches, owner):
                    continue
                if binding.how != "assign" or binding.value is None:
                    return False
                if not self.is_tracked(binding.value, owner, seen):
                    return False
            return True
        return False

    # -- the walk -------------------------------------------------------------------------------

    def run(self) -> list[Finding]:
        self._walk_body(self.tree.body, _Context(None, None, (), (), ()))
        self._report_repeated_calls()
        self._share_fixes()
        self.findings.sort(key=lambda f: f.sort_key)
        return self.findings

    def _share_fixes(self) -> None:
        """A value that TEM005 reports gets TEM005's fix (None) under every code.

        A guard does not make a module called twice safe, and one value must have one fix.
        """
        shared = {(f.line, f.col): f.fix for f in self.findings if f.code == "TEM005"}
        if shared:
            self.findings = [
                replace(f, fix=shared[(f.line, f.col)])
                if f.code != "TEM005" and (f.line, f.col) in shared
                else f
                for f in self.findings
            ]

    def _walk_body(self, body: Sequence[ast.AST], ctx: _Context) -> None:
        for node in body:
            self._walk(node, ctx)
            if isinstance(node, ast.If) and node.body and _leaves_block(node.body[-1]):
                # `if not tracked(cfg): return ...`: what follows runs only when the test is
                # false, exclusive with the `if` body (like an `else`).
                ctx = ctx.branch(node.test, False, node, 1)
            elif isinstance(node, ast.If) and node.orelse and _leaves_block(node.orelse[-1]):
                ctx = ctx.branch(node.test, True, node, 0)

    def _walk(self, node: ast.AST, ctx: _Context) -> None:
        if isinstance(node, ast.ClassDef):
            for child in (*node.bases, *node.keywords, *node.decorator_list):
                self._walk(child, ctx)
            self._walk_body(node.body, _Context(node, ctx.scope, (), (), ()))
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for default in (*node.args.defaults, *[d for d in node.args.kw_defaults if d]):
                self._walk(default, ctx)
            if not isinstance(node, ast.Lambda):
                for deco in node.decorator_list:
                    self._walk(deco, ctx)
            inner = _Context(None, (node, ctx, ctx.cls), (), (), ())
            if isinstance(node, ast.Lambda):
                self._walk(node.body, inner)
            else:
                self._walk_body(node.body, inner)
            return
        if isinstance(node, ast.If):
            self._walk(node.test, ctx)
            self._walk_body(node.body, ctx.branch(node.test, True, node, 0))
            self._walk_body(node.orelse, ctx.branch(node.test, False, node, 1))
            return
        if isinstance(node, ast.IfExp):
            self._walk(node.test, ctx)
            self._walk(node.body, ctx.branch(node.test, True, node, 0))
            self._walk(node.orelse, ctx.branch(node.test, False, node, 1))
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self._walk_body(node.body, ctx.exclusive(node, 0))  # type: ignore[attr-defined]
            for index, handler in enumerate(node.handlers, start=1):  # type: ignore[attr-defined]
                self._walk(handler, ctx.exclusive(node, index))
            self._walk_body(node.orelse, ctx.exclusive(node, 0))  # type: ignore[attr-defined]
            self._walk_body(node.finalbody, ctx)  # type: ignore[attr-defined]
            return
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            head = node.iter if not isinstance(node, ast.While) else node.test
            self._walk(head, ctx)
            loop_ctx = ctx.loop(node)
            self._walk_body(node.body, loop_ctx)
            self._walk_body(node.orelse, ctx)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            if node.generators:
                self._walk(node.generators[0].iter, ctx)
            loop_ctx = ctx.loop(node)
            for index, gen in enumerate(node.generators):
                if index:
                    self._walk(gen.iter, loop_ctx)
                for cond in gen.ifs:
                    self._walk(cond, loop_ctx)
            if isinstance(node, ast.DictComp):
                self._walk(node.key, loop_ctx)
                self._walk(node.value, loop_ctx)
            else:
                self._walk(node.elt, loop_ctx)
            return
        if isinstance(node, ast.Call):
            self._check_call(node, ctx)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and type(item) not in _LEAVES:
                        self._walk(item, ctx)
            elif isinstance(value, ast.AST) and type(value) not in _LEAVES:
                self._walk(value, ctx)

    # -- the rules ------------------------------------------------------------------------------

    def _check_call(self, call: ast.Call, ctx: _Context) -> None:
        flag_kw = next((kw for kw in call.keywords if kw.arg == FLAG), None)
        splats = [kw for kw in call.keywords if kw.arg is None]
        if flag_kw is None and not splats and (len(call.args) < 2 or not self.mentions_te):
            return  # a positional flag needs a TE class, and a TE class needs a TE import
        scope = self.scope_of(ctx)
        kind = self.callee_kind(call, scope)
        if kind.tag == "reject":
            self._check_rejecting(call, kind, flag_kw, splats)
            return
        if kind.tag == "te_instance" or kind.tag == "unbound":
            cls = kind.name
            shift = 1 if kind.tag == "unbound" else 0
            target = f"TE {cls or 'module'} `{_describe(call.func)}`"
        elif kind.tag == "unknown" and flag_kw is None and not splats:
            return  # positional arguments of an unknown callee: no class, no TEM002
        elif kind.tag == "unknown" and self.settings.unresolved == "report":
            cls = ""
            shift = 0
            target = f"`{_describe(call.func)}` (not resolved; it may be a TE module)"
        else:
            return
        guarded = self.branches_guarded(ctx.branches, scope)
        index = None if flag_kw is not None else _flag_index(call, cls, shift)
        flag_value = flag_kw.value if flag_kw is not None else None
        if index is not None:
            flag_value = call.args[index]
        flag_node: ast.AST | None = flag_kw if flag_kw is not None else flag_value
        repeated = None
        if flag_value is not None and not _is_none(flag_value):
            repeated = self._repeat_reason(call, ctx)
        shared_fix: Fix | None = None  # what TEM005 does: None, whatever the strategy
        if flag_kw is not None:
            shared_fix = self._none_fix(flag_kw.value)
            if not guarded and not self.is_tracked(flag_kw.value, scope):
                self._report(
                    "TEM001", flag_kw, target, self._value_fix(flag_kw.value, scope, repeated)
                )
        elif index is not None and flag_value is not None:
            shared_fix = self._positional_fix(call, index, scope, "shared")
            if not guarded and not self.is_tracked(flag_value, scope):
                self._report(
                    "TEM002", flag_value, target, self._positional_fix(call, index, scope, repeated)
                )
        for splat in splats:
            self._check_splat(splat.value, scope, target, guarded)
        if flag_node is None or flag_value is None or _is_none(flag_value):
            return
        if repeated:
            self._report("TEM005", flag_node, target, shared_fix, why=repeated)
            self.reported_shared.add(id(flag_node))
        if ctx.scope is not None and scope is not None:
            site = _CallSite(
                ast.dump(call.func), scope, flag_node, shared_fix, ctx.exclusive_path, target
            )
            self.sites.setdefault(id(ctx.scope[0]), []).append(site)

    def scope_of(self, ctx: _Context) -> Scope | None:
        """The (lazily built) scope of the function the walk is in, chained to its parents."""
        if ctx.scope is None:
            return None
        node, outer, method_class = ctx.scope
        cached = self.scopes.get(node)
        if cached is not None:
            return cached
        parent = self.scope_of(outer) if outer is not None else None
        return self._scope(node, parent, method_class)

    def callee_kind(self, call: ast.Call, scope: Scope | None) -> Kind:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "super":
            return NOT_TE
        if isinstance(func, ast.Attribute) and func.attr in _MAPPING_STORES:
            return NOT_TE  # kw.update(is_first_microbatch=v) stores a key (TEM003's business)
        kind = self.resolve(func, scope)
        if kind.tag == "self" and kind.node is not None:
            return (
                self.self_attribute(kind.node, "forward")
                if not self._class_defines(kind.node, "forward")
                else NOT_TE
            )
        if kind.tag == "super" and kind.node is not None:
            return self.super_kind(kind.node)
        if kind.tag in ("te_instance", "unbound", "reject", "unknown"):
            return kind
        if kind.tag == "te_class":
            # The constructors take no such keyword (and no **kwargs): a TypeError.
            return Kind("reject", f"{kind.name} constructor")
        # A name imported from elsewhere and called directly is a function (or constructor)
        # call; a local class's instance has its own forward, analysed where it is defined.
        return NOT_TE

    def _check_rejecting(
        self,
        call: ast.Call,
        kind: Kind,
        flag_kw: ast.keyword | None,
        splats: list[ast.keyword],
    ) -> None:
        target = f"TE {kind.name} `{_describe(call.func)}`"
        if flag_kw is not None:
            self._report("TEM004", flag_kw, target, None)
        for splat in splats:
            if isinstance(splat.value, ast.Dict):
                for key in splat.value.keys:
                    if key is not None and _constant_str(key) == FLAG:
                        self._report("TEM004", key, target, None)

    def _check_splat(
        self, mapping: ast.expr, scope: Scope | None, target: str, guarded: bool
    ) -> None:
        """TEM003: the flag stored in a dict that is splatted into the call."""
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
                    if key is not None and _constant_str(key) == FLAG:
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
        for node, value, branches, where in entries:
            if id(node) in self.reported_keys:
                continue
            if guarded or self.branches_guarded(branches, where) or self.is_tracked(value, where):
                continue
            self.reported_keys.add(id(node))
            self._report(
                "TEM003", node, target, self._value_fix(value, where, None), mapping=mapping_name
            )

    # -- TEM005 -----------------------------------------------------------------------------------

    def _repeat_reason(self, call: ast.Call, ctx: _Context) -> str | None:
        """Why this call may run more than once per forward (a loop over a fixed module)."""
        for loop in reversed(ctx.loops):
            bound, runs_backward = self._loop_facts(loop)
            used = {n.id for n in ast.walk(call.func) if isinstance(n, ast.Name)}
            if used & bound:
                return None
            if runs_backward:
                return None
            kind = (
                "comprehension"
                if isinstance(loop, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))
                else ("while loop" if isinstance(loop, ast.While) else "for loop")
            )
            return f"called in a {kind} at line {loop.lineno}"
        return None

    def _loop_facts(self, loop: ast.AST) -> tuple[set[str], bool]:
        """The names a loop binds and whether it runs backward, computed once per loop."""
        key = ("loop", id(loop), "")
        if key not in self.memo:
            self.memo[key] = (_loop_bound_names(loop), _loop_runs_backward(loop))
        return self.memo[key]

    def _report_repeated_calls(self) -> None:
        for sites in self.sites.values():
            by_key: dict[str, list[_CallSite]] = {}
            for site in sites:
                by_key.setdefault(site.key, []).append(site)
            for group in by_key.values():
                if len(group) < 2:
                    continue
                for site in group:
                    if id(site.flag_node) in self.reported_shared:
                        continue  # already reported: it runs in a loop
                    others = [o for o in group if o is not site and not _exclusive(o, site)]
                    if not others:
                        continue
                    line = others[0].flag_node.lineno  # type: ignore[attr-defined]
                    why = f"also called at line {line}"
                    self._report("TEM005", site.flag_node, site.target, site.fix, why=why)

    # -- fixes ------------------------------------------------------------------------------------

    def _value_fix(
        self,
        value: ast.expr,
        scope: Scope | None,
        repeated: str | None,
        span: tuple[Position, Position] | None = None,
        prefix: str = "",
    ) -> Fix | None:
        """Rewrite ``value`` (or ``span``, its parenthesised extent) to None or guarded.

        ``prefix`` turns a positional argument into the keyword form.
        """
        if isinstance(value, ast.NamedExpr):
            return None  # `(f := x)`: any rewrite would change what `f` is bound to
        start, end = span or (_start(value), _end(value))
        if repeated or self.settings.fix_strategy == "none":
            return Fix((Edit(start, end, f"{prefix}None"),))
        guard = self._guard_expression(scope)
        if isinstance(guard, str):
            return Fix(
                (Edit(start, end, f"{prefix}None"),),
                note=f"guard strategy fell back to None: {guard}",
            )
        call, import_name = guard
        wrap = span is None and isinstance(value, _WRAP_IN_PARENS)
        opening, closing = ("((", ")") if wrap else ("(", "")
        return Fix(
            (
                Edit(start, start, f"{prefix}{opening}"),
                Edit(end, end, f"{closing} if {call} else None)"),
            ),
            guard_import=import_name,
        )

    def _positional_fix(
        self, call: ast.Call, index: int, scope: Scope | None, repeated: str | None
    ) -> Fix | None:
        """Keyword form where no positional argument follows, else the value in place."""
        arg = call.args[index]
        if index + 1 < len(call.args):
            return self._value_fix(arg, scope, repeated)
        span = self._paren_span(arg)
        if span == "unsure":  # parentheses across lines: the value in place is always valid
            return self._value_fix(arg, scope, repeated)
        return self._value_fix(arg, scope, repeated, span, f"{FLAG}=")

    def _none_fix(self, value: ast.expr) -> Fix | None:
        return self._value_fix(value, None, "shared")

    def _paren_span(self, node: ast.expr) -> tuple[Position, Position] | str | None:
        """The extent of ``node`` with its own parentheses (``f(x, (a == b))``), if any.

        ``ast`` ranges exclude such parentheses, so a keyword inserted at the node's start would
        land inside them. Only parentheses on the node's own lines are seen; without the source
        (flake8 never applies fixes) there are none. "unsure" when they may span lines.
        """
        if self.source is None:
            return None
        if self.source_lines is None:
            self.source_lines = split_lines(self.source)
        head = self.source_lines[node.lineno - 1].encode("utf-8")
        tail = self.source_lines[node.end_lineno - 1].encode("utf-8")  # type: ignore[operator]
        start, depth = node.col_offset, 0
        outer_start = start
        while start > 0 and head[start - 1 : start] in (b" ", b"\t", b"("):
            start -= 1
            if head[start : start + 1] == b"(":
                depth += 1
                outer_start = start
        if start == 0:
            return "unsure"  # the value opens its line: a "(" may stand on the line above
        if depth == 0:
            return None
        end, closed = node.end_col_offset or 0, 0
        while closed < depth and end < len(tail) and tail[end : end + 1] in (b" ", b"\t", b")"):
            if tail[end : end + 1] == b")":
                closed += 1
            end += 1
        if closed != depth:
            return "unsure"
        return (node.lineno, outer_start), (node.end_lineno or node.lineno, end)

    def _config_root(self) -> str:
        return self.settings.guard_config.split(".", 1)[0].split("(", 1)[0].strip()

    def _guard_expression(self, scope: Scope | None) -> tuple[str, str | None] | str:
        """The guard call and the import it needs, or why the guard cannot be used here."""
        root = self._config_root()
        if (
            root
            and (scope is None or scope.lookup(root) is None)
            and root not in self.alias_choices
        ):
            return f"`{root}` is not in scope"
        dotted = self.settings.guard_import
        name = dotted.rsplit(".", 1)[-1]
        owner = scope.lookup(name) if scope is not None else None
        if owner is not None and not any(
            b.how == "import" and b.qualname == dotted for b in owner.bindings.get(name, [])
        ):
            return f"a local `{name}` would shadow the guard"
        needs_import: str | None = dotted if "." in dotted else None
        if name in self.alias_choices or name in self.module_functions:
            needs_import = None
        return f"{name}({self.settings.guard_config})", needs_import

    def _report(self, code: str, node: ast.AST, target: str, fix: Fix | None, **extra: str) -> None:
        guard = self.guards[0] if self.guards else "is_first_microbatch_tracked"
        message = MESSAGES[code].format(
            callee=target,
            guard=guard.rsplit(".", 1)[-1],
            mapping=extra.get("mapping", "kwargs"),
            why=extra.get("why", ""),
        )
        self.findings.append(
            Finding(
                code,
                message,
                node.lineno,  # type: ignore[attr-defined]
                node.col_offset,  # type: ignore[attr-defined]
                node.end_lineno or node.lineno,  # type: ignore[attr-defined]
                node.end_col_offset if node.end_col_offset is not None else node.col_offset,  # type: ignore[attr-defined]
                fix,
            )
        )


# --------------------------------------------------------------------------------------------
# Walk context


@dataclass(frozen=True)
class _Context:
    """Where the walk is: class, function chain, guarding branches, loops, exclusive arms."""

    cls: ast.ClassDef | None
    """The class whose body the walk is directly in (its functions are methods)."""
    scope: tuple[FunctionNode, _Context | None, ast.ClassDef | None] | None
    """The enclosing function, the context it was defined in, and its class if a method."""
    branches: tuple[Branch, ...]
    loops: tuple[ast.AST, ...]
    exclusive_path: tuple[tuple[int, int], ...]

    def branch(self, test: ast.expr, outcome: bool, node: ast.AST, arm: int) -> _Context:
        return _Context(
            self.cls,
            self.scope,
            (*self.branches, (test, outcome)),
            self.loops,
            (*self.exclusive_path, (id(node), arm)),
        )

    def exclusive(self, node: ast.AST, arm: int) -> _Context:
        return _Context(
            self.cls, self.scope, self.branches, self.loops, (*self.exclusive_path, (id(node), arm))
        )

    def loop(self, node: ast.AST) -> _Context:
        return _Context(
            self.cls, self.scope, self.branches, (*self.loops, node), self.exclusive_path
        )


def _exclusive(a: _CallSite, b: _CallSite) -> bool:
    """Two calls in different arms of the same ``if``/``try`` never both run."""
    arms_a = dict(a.exclusive_path)
    return any(node in arms_a and arms_a[node] != arm for node, arm in b.exclusive_path)


def _statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, through compound statements but not into nested scopes.

    Assignments are statements, so this finds ``self.x = ...`` without visiting expressions.
    """
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, name, ()))
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


def _flag_index(call: ast.Call, cls: str, shift: int) -> int | None:
    """Where a TE class's positional flag sits in this call, if it is passed positionally.

    Unknown class, too few arguments, or a ``*args`` at or before it: no position.
    """
    if not cls:
        return None
    index = FLAG_POSITION[cls] + shift
    if len(call.args) <= index or any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return None
    return index


def _leaves_block(stmt: ast.AST) -> bool:
    return isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _loop_bound_names(loop: ast.AST) -> set[str]:
    names: set[str] = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        names.update(n.id for n in _target_names(loop.target))
    if isinstance(loop, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        for gen in loop.generators:
            names.update(n.id for n in _target_names(gen.target))
        return names
    for stmt in getattr(loop, "body", ()):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _loop_runs_backward(loop: ast.AST) -> bool:
    """A loop that also calls ``.backward()`` is a microbatch loop, not a shared module."""
    for stmt in getattr(loop, "body", ()):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if "backward" in name:  # .backward(), torch.autograd.backward, backward_step
                    return True
    return False


def _describe(func: ast.expr) -> str:
    text = ast.unparse(func)
    return text if len(text) <= 60 else text[:57] + "..."


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# Entry points


def analyze_tree(
    tree: ast.Module, settings: Settings = DEFAULT_SETTINGS, source: str | None = None
) -> list[Finding]:
    """Findings for an already parsed module (flake8 hands us its tree). noqa not applied.

    ``source`` is only needed for exact fixes of parenthesised positional flags.
    """
    return Analyzer(tree, settings, source).run()


def mentions_flag(text: str) -> bool:
    """The byte prefilter: files that never spell the flag cannot have a finding."""
    return FLAG in text


def analyze_source(text: str, settings: Settings = DEFAULT_SETTINGS) -> list[Finding]:
    """Findings for one file's text (noqa not applied). Raises SyntaxError if unparsable."""
    if not mentions_flag(text):
        return []
    if "\0" in text:
        raise SyntaxError("source code cannot contain null bytes")
    try:
        with warnings.catch_warnings():
            # Invalid escapes in the user's strings are the user's business, not ours to print.
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except ValueError as error:  # pragma: no cover - older Pythons report NUL this way
        raise SyntaxError(str(error)) from error
    return analyze_tree(tree, settings, text)
