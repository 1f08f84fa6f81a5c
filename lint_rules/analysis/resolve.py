"""What an expression, and above all a callee, IS as far as the flag is concerned.

Resolution stays inside the file: imports (with their alternatives), aliases, ``self``
attributes assigned in any method, class attributes, containers, ``super()``, in-file
subclasses of TE classes. ``Kind`` is the working value of an expression; ``Callee`` is the
small typed answer the rules (and fix building) get for the function of a call.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

from lint_rules.analysis.symbols import ModuleSymbols, Scope, constant_str, dotted
from lint_rules.te import TE_GRAPH_FACTORY, TE_ROOT, te_class_of, te_rejecting_name

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
MAPPING_STORES = frozenset({"update", "setdefault"})


# --------------------------------------------------------------------------------------------
# The typed answer for a callee


@dataclass(frozen=True)
class TEModule:
    """A TE module's forward. ``cls`` is the TE class ("" when it cannot be told which one);
    ``shift`` moves the positional flag (1 for the unbound ``Linear.forward(module, ...)``)."""

    cls: str = ""
    shift: int = 0


@dataclass(frozen=True)
class TERejects:
    """A TE callable that does not accept the flag (TypeError): ``name`` says which."""

    name: str


@dataclass(frozen=True)
class NotTE:
    """Not a TE module call (a function, a local class, a builtin, a graphed callable...)."""

    why: str = ""


@dataclass(frozen=True)
class Unresolved:
    """The tool cannot tell what is called: it may be a TE module."""

    why: str = "not resolved"


Callee = Union[TEModule, TERejects, NotTE, Unresolved]


# --------------------------------------------------------------------------------------------
# The working value of an expression


@dataclass(frozen=True)
class Kind:
    """The resolved meaning of an expression, as far as the flag is concerned.

    ``tag`` is one of: te_class, te_instance, unbound (``TEClass.forward``), reject, graphed,
    container (``element`` holds what it contains), class / local_instance / self / super (an
    in-file class, ``node``), qualname (a dotted name outside TE), not_te, unknown.
    """

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


def classify_qualname(qual: str) -> Kind:
    cls = te_class_of(qual)
    if cls:
        return Kind("te_class", cls)
    reject = te_rejecting_name(qual)
    if reject:
        return Kind("reject", reject)
    return Kind("qualname", qual)


class Resolver:
    """Resolve expressions of one file; results about classes are memoised."""

    def __init__(self, symbols: ModuleSymbols) -> None:
        self.symbols = symbols
        self.memo: dict[tuple[str, int, str], object] = {}
        self.resolving: set[int] = set()

    # -- the callee of a call ---------------------------------------------------------------

    def callee(self, call: ast.Call, scope: Scope | None) -> Callee:
        """What the function of ``call`` is."""
        kind = self.callee_kind(call, scope)
        if kind.tag == "te_instance":
            return TEModule(kind.name)
        if kind.tag == "unbound":
            return TEModule(kind.name, shift=1)
        if kind.tag == "reject":
            return TERejects(kind.name)
        if kind.tag == "unknown":
            return Unresolved()
        if kind.tag == "graphed":
            return NotTE("a make_graphed_callables callable needs a bool flag")
        return NotTE()

    def callee_kind(self, call: ast.Call, scope: Scope | None) -> Kind:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "super":
            return NOT_TE
        if isinstance(func, ast.Attribute) and func.attr in MAPPING_STORES:
            return NOT_TE  # kw.update(is_first_microbatch=v) stores a key (TEM003's business)
        kind = self.resolve(func, scope)
        if kind.tag == "self" and kind.node is not None:
            return (
                self.self_attribute(kind.node, "forward")
                if not self.class_defines(kind.node, "forward")
                else NOT_TE
            )
        if kind.tag == "super" and kind.node is not None:
            return self.super_kind(kind.node)
        if kind.tag in ("te_instance", "unbound", "reject", "unknown", "graphed"):
            return kind
        if kind.tag == "te_class":
            # The constructors take no such keyword (and no **kwargs): a TypeError.
            return Kind("reject", f"{kind.name} constructor")
        # A name imported from elsewhere and called directly is a function (or constructor)
        # call; a local class's instance has its own forward, analysed where it is defined.
        return NOT_TE

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
        return self.memo[key]  # type: ignore[return-value]

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

    def class_defines(self, node: ast.ClassDef, method: str) -> bool:
        return any(method in self.symbols.class_info(cls).methods for cls in self.lineage(node))

    def _instance_of_class(self, node: ast.ClassDef) -> Kind:
        te = self.class_te_base(node)
        if te is not None:
            overridden = self.class_defines(node, "forward")
            return Kind("te_instance", "" if overridden else te, node=node)
        if self.class_may_be_te(node):
            return UNKNOWN
        return Kind("local_instance", node.name, node=node)

    # -- expressions --------------------------------------------------------------------------

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
                    kinds.append(classify_qualname(binding.qualname))
                else:
                    kinds.append(UNKNOWN)
            return join(kinds)
        symbols = self.symbols
        if name in symbols.classes:
            return Kind("class", name, node=symbols.classes[name])
        if name in symbols.functions:
            return NOT_TE
        if name in symbols.alias_choices:
            return join([classify_qualname(q) for q in symbols.alias_choices[name]])
        if name in symbols.assigns:
            return join([self.resolve(v, None) for v in symbols.assigns[name]])
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
            spelled = dotted(node)
            if spelled is not None:
                head, _, rest = spelled.partition(".")
                choices = self.symbols.alias_choices.get(head, ())
                if len(choices) > 1 and (scope is None or scope.lookup(head) is None):
                    return join([classify_qualname(f"{q}.{rest}") for q in choices])
            return self.attribute_of(self.resolve(node.value, scope), node.attr)
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

    def attribute_of(self, base: Kind, attr: str) -> Kind:
        if base.tag == "qualname":
            return classify_qualname(f"{base.name}.{attr}")
        if base.tag == "self" and base.node is not None:
            return self.self_attribute(base.node, attr)
        if base.tag == "te_instance":
            return base if attr == "forward" else UNKNOWN
        if base.tag == "te_class":
            return Kind("unbound", base.name) if attr == "forward" else UNKNOWN
        if base.tag == "class" and base.node is not None:
            if attr == "forward":
                te = self.class_te_base(base.node)
                if te and not self.class_defines(base.node, "forward"):
                    return Kind("unbound", te)
                if self.class_may_be_te(base.node) and not self.class_defines(base.node, "forward"):
                    return UNKNOWN
            return NOT_TE if self.class_defines(base.node, attr) else UNKNOWN
        if base.tag == "local_instance" and base.node is not None:
            if self.class_defines(base.node, attr):
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
            return self.memo[key]  # type: ignore[return-value]
        self.memo[key] = UNKNOWN  # a cycle through this attribute resolves to unknown
        result = UNKNOWN
        for owner in self.lineage(cls):
            info = self.symbols.class_info(owner)
            if attr in info.methods:
                result = NOT_TE
                break
            kinds = [
                self.resolve(value, self.symbols.scope(method, None, owner))
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
            overridden = any("forward" in self.symbols.class_info(c).methods for c in ancestors)
            return te_instance("" if overridden else te)
        if self.class_may_be_te(cls):
            return UNKNOWN
        return NOT_TE

    def call_result(self, call: ast.Call, scope: Scope | None) -> Kind:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "super" and scope is not None:
            cls = scope.enclosing_class()
            if cls is not None:
                return Kind("super", cls.name, node=cls)
            return UNKNOWN
        if isinstance(func, ast.Name) and func.id == "getattr" and len(call.args) >= 2:
            name = constant_str(call.args[1])
            if name is not None:
                return self.attribute_of(self.resolve(call.args[0], scope), name)
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
