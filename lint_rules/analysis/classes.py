"""Classes defined in the file: their lineage, TE bases, and what ``self.x`` holds.

A class is a TE module when a base (through in-file classes) is a TE module class. Attributes
are what any method assigns to ``self.x`` (or adds to it: ``self.x.append(v)``), class
attributes, declared annotations, or a ``@property``'s return value; a plain method is a
method (calling it is not a TE call; its result is what it returns).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.analysis.kinds import (
    NOT_TE,
    UNKNOWN,
    Container,
    Kind,
    LocalClass,
    LocalInstance,
    LocalMethod,
    ProjectClass,
    QualName,
    TEClass,
    TEInstance,
    TEUnbound,
    Unknown,
    join,
    unknown,
)
from lint_rules.analysis.provenance import origin_of
from lint_rules.analysis.symbols import statements
from lint_rules.te import FLAG, TE_ROOT

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.resolve import Resolver
    from lint_rules.analysis.scopes import FunctionNode, Scope

_NON_TE_BASE_PREFIXES = ("torch.", "builtins.", "typing.", "abc.", "enum.", "dataclasses.")


class Classes:
    """Answers about in-file classes, memoised; resolution of bases goes through ``resolver``."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.symbols = resolver.symbols
        self._lineage: dict[int, list[ast.ClassDef]] = {}
        self._enclosing: dict[int, tuple[FunctionNode, ast.ClassDef | None]] | None = None

    def base_scope(self, node: ast.ClassDef) -> Scope | None:
        """Where ``node``'s bases are looked up: for a class defined in a function (or a
        method), that function's scope, whose imports may be local to it
        (``def build(): import transformer_engine.pytorch as te; class L(te.Linear): ...``)."""
        if node.col_offset == 0:  # a statement of the module's own body: in no function
            return None
        if self._enclosing is None:
            self._enclosing = {}
            for stmt in self.symbols.tree.body:
                owner = stmt if isinstance(stmt, ast.ClassDef) else None
                for function in owner.body if owner is not None else [stmt]:
                    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        for inner in statements(function.body):
                            if isinstance(inner, ast.ClassDef):
                                self._enclosing[id(inner)] = (function, owner)
        found = self._enclosing.get(id(node))
        if found is None:
            return None
        return self.symbols.scope(found[0], None, found[1])

    def lineage(self, node: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its ancestors defined in this file, nearest first, each once."""
        found = self._lineage.get(id(node))
        if found is None:
            found = []
            self._lineage[id(node)] = found  # a class that derives from itself stops here
            pending = [node]
            while pending:
                current = pending.pop(0)
                if any(current is seen for seen in found):
                    continue
                found.append(current)
                scope = self.base_scope(current)
                for base in current.bases:
                    kind = self.resolver.resolve(base, scope)
                    if isinstance(kind, LocalClass):
                        pending.append(kind.node)
        return found

    def outside_bases(self, node: ast.ClassDef) -> list[Kind]:
        """What the lineage's bases that are not in-file classes resolve to."""
        resolve = self.resolver.resolve
        kinds = (
            resolve(base, self.base_scope(cls)) for cls in self.lineage(node) for base in cls.bases
        )
        return [kind for kind in kinds if not isinstance(kind, LocalClass)]

    def te_base(self, node: ast.ClassDef) -> str | None:
        """The TE module class this in-file class derives from, if any (also through a TE
        subclass of another file of the run, ``project``)."""
        for kind in self.outside_bases(node):
            if isinstance(kind, TEClass):
                return kind.name
            if isinstance(kind, ProjectClass):
                return self.resolver.project.te_base(kind.name)  # type: ignore[union-attr]
        return None

    def project_base(self, lineage: list[ast.ClassDef]) -> ProjectClass | None:
        """The TE subclass of another file of the run that ``lineage`` derives from, when it
        is the first TE base (its ``forward`` runs unless an in-file class defines one)."""
        if self.resolver.project is None:
            return None
        for cls in lineage:
            for base in cls.bases:
                kind = self.resolver.resolve(base, None)
                if isinstance(kind, TEClass):
                    return None
                if isinstance(kind, ProjectClass):
                    return kind
        return None

    def foreign_base(self, node: ast.ClassDef) -> str | None:
        """A base imported from a module we cannot see (maybe a TE subclass), if any."""
        for kind in self.outside_bases(node):
            if isinstance(kind, Unknown):
                return "a base that is not resolved"
            if (
                isinstance(kind, QualName)
                and not kind.name.startswith(_NON_TE_BASE_PREFIXES)
                and not kind.name.startswith(TE_ROOT + ".")
            ):
                return f"a base `{kind.name}` defined outside the file"
        return None

    def defines(self, node: ast.ClassDef, method: str) -> bool:
        lineage = self.lineage(node)
        if any(method in self.symbols.class_info(cls).methods for cls in lineage):
            return True
        project = self.resolver.project
        if project is None or method != "forward":
            return False
        base = self.project_base(lineage)
        return base is not None and project.defines_forward(base.name)

    def te_forward(
        self,
        te: str,
        lineage: list[ast.ClassDef],
        node: ast.ClassDef | None,
        bases_of: list[ast.ClassDef] | None = None,
    ) -> TEInstance:
        """Calling a TE subclass whose in-file classes (``lineage``, nearest first) may define
        ``forward``: TE's own (class ``te``), or the nearest in-file one, read off its
        signature (where it takes the flag positionally, or that it takes none), or that of
        the TE subclass of another file that ``bases_of`` (else ``lineage``) derives from."""
        for owner in lineage:
            method = self.symbols.class_info(owner).methods.get("forward")
            if method is None:
                continue
            through = self.passes_through(method)
            if through == "super":
                continue  # `forward(self, *args, **kwargs)` hands everything to the next one
            if through:
                return TEInstance(through, node)  # `te.Linear.forward(self, ...)`
            index, accepts = flag_parameter(method)
            takes = keyword_only_takes(method)
            return TEInstance("", node, index, not accepts, takes)
        base = self.project_base(lineage if bases_of is None else bases_of)
        if base is not None:
            return self.resolver.project.instance(base.name, node)  # type: ignore[union-attr]
        return TEInstance(te, node)

    def passes_through(self, method: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """``"super"`` when ``method`` is only ``return super().forward(p.., *args, **kwargs)``
        (its own positional parameters in order, then its ``*args`` and ``**kwargs``, nothing
        else in the body but a docstring); the TE class when it is ``return
        TEClass.forward(self, p.., *args, **kwargs)``; else None. Such a forward maps every
        argument through unchanged, so the next ``forward``'s layout is the caller's."""
        args = method.args
        if args.vararg is None or args.kwarg is None or args.kwonlyargs:
            return None
        body = method.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # a docstring
        if len(body) != 1 or not isinstance(body[0], ast.Return):
            return None
        call = body[0].value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return None
        if call.func.attr != "forward" or len(call.keywords) != 1:
            return None
        names = [a.arg for a in (*args.posonlyargs, *args.args)]
        splat = call.keywords[0]
        if splat.arg is not None or not _is_name(splat.value, args.kwarg.arg):
            return None
        owner = call.func.value
        passed = call.args
        through = None
        if isinstance(owner, ast.Call) and _is_name(owner.func, "super"):
            through, names = "super", names[1:]  # `self` is bound by super()
        else:
            kind = self.resolver.resolve(owner, None)
            if isinstance(kind, TEClass):
                through = kind.name
        if through is None or len(passed) != len(names) + 1:
            return None
        if not all(_is_name(a, n) for a, n in zip(passed, names)):
            return None
        last = passed[-1]
        if not (isinstance(last, ast.Starred) and _is_name(last.value, args.vararg.arg)):
            return None
        return through

    def instance(self, node: ast.ClassDef) -> Kind:
        """An instance of the in-file class ``node``."""
        te = self.te_base(node)
        if te is not None:
            return self.te_forward(te, self.lineage(node), node)
        foreign = self.foreign_base(node)
        if foreign:
            return unknown(f"an instance of `{node.name}`, which has {foreign}")
        return LocalInstance(node.name, node)

    def class_attribute(self, node: ast.ClassDef, attr: str) -> Kind:
        """``Cls.attr`` on an in-file class."""
        if attr == "forward":
            te = self.te_base(node)
            if te and not self.defines(node, "forward"):
                return TEUnbound(te)
            if self.foreign_base(node) and not self.defines(node, "forward"):
                return unknown(f"`{node.name}.forward` comes from a base outside the file")
        for owner in self.lineage(node):
            method = self.symbols.class_info(owner).methods.get(attr)
            if method is not None and _decorated(method, _CLASS_LEVEL):
                # `Utils.create_layer(kind)`: a static or class method, called on the class,
                # gives what its `return` statements give (a factory of TE modules is TE)
                return LocalMethod(attr, method, owner)
        return NOT_TE if self.defines(node, attr) else UNKNOWN

    def self_attribute(self, cls: ast.ClassDef, attr: str) -> Kind:
        """``self.attr``: a method, a property's value, or what the class's methods store."""
        key = ("attribute", id(cls), attr)
        return self.resolver.memoised(key, self._self_attribute, cls, attr)

    def _self_attribute(self, cls: ast.ClassDef, attr: str) -> Kind:
        resolver = self.resolver
        for owner in self.lineage(cls):
            info = self.symbols.class_info(owner)
            if attr in info.properties:
                return resolver.returns(info.methods[attr], None, owner)
            if attr in info.methods:
                return LocalMethod(attr, info.methods[attr], owner)
            kinds = [
                resolver.resolve(value, self.symbols.scope(method, None, owner))
                for value, method in info.attributes.get(attr, [])
            ]
            if attr in info.class_attributes:
                kinds.append(resolver.resolve(info.class_attributes[attr], None))
            added = info.additions.get(attr)
            if added:
                kinds.append(self._added(owner, added))
            if attr in info.annotations:  # a declared type says what any value is
                declared = resolver.instance_of(resolver.annotation(info.annotations[attr]))
                if not isinstance(declared, Unknown) or not kinds:
                    return declared
            if kinds:
                return join(kinds)
        if attr == "forward":
            te = self.te_base(cls)
            if te:
                return TEInstance(te, cls)
        return unknown(f"`{attr}` is not set in the class")

    def _added(self, owner: ast.ClassDef, added: Sequence[tuple[str, ast.expr, ast.AST]]) -> Kind:
        resolver = self.resolver
        elements = []
        for how, value, method in added:
            scope = self.symbols.scope(method, None, owner)  # type: ignore[arg-type]
            kind = resolver.resolve(value, scope)
            elements.append(kind if how == "item" else resolver.element_of(kind))
        return Container(join(elements))

    def super_kind(self, cls: ast.ClassDef) -> Kind:
        """``super()`` (its ``forward``) inside ``cls``."""
        te = self.te_base(cls)
        if te:
            # An in-file ancestor's own forward runs first: its signature, not TE's, decides
            # where a positional flag goes, and whether it takes one.
            # It is named after the in-file base whose class it calls (TE's own: none).
            lineage = self.lineage(cls)
            above = lineage[1:]
            return self.te_forward(te, above, above[0] if above else None, lineage)
        foreign = self.foreign_base(cls)
        if foreign:
            bases = self.outside_bases(cls)
            origins = [origin_of(k.name) for k in bases if isinstance(k, QualName)]
            origin = next((o for o in origins if o is not None), None)
            return Unknown(f"`{cls.name}` has {foreign}", origin)
        return NOT_TE


def flag_parameter(method: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int | None, bool]:
    """Where an in-file ``forward`` takes the flag positionally (counting after ``self``), and
    whether it takes it at all (a parameter of that name, or ``**kwargs``)."""
    args = method.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][1:]
    if FLAG in positional:
        return positional.index(FLAG), True
    named = any(a.arg == FLAG for a in args.kwonlyargs)
    return None, named or args.kwarg is not None


def keyword_only_takes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """How many positional arguments (after ``self``) an in-file ``forward`` takes when it takes
    the flag keyword-only and has no ``*args`` (one more is a TypeError); else None."""
    args = method.args
    if args.vararg is not None or not any(a.arg == FLAG for a in args.kwonlyargs):
        return None
    return len(args.posonlyargs) + len(args.args) - 1


_CLASS_LEVEL = frozenset({"staticmethod", "classmethod"})


def _decorated(method: ast.FunctionDef | ast.AsyncFunctionDef, names: frozenset[str]) -> bool:
    return any(
        (d.id if isinstance(d, ast.Name) else d.attr) in names
        for d in method.decorator_list
        if isinstance(d, (ast.Name, ast.Attribute))
    )


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
