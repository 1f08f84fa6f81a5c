"""Classes defined in the file: their methods, properties, and what their methods store on
``self`` (``ClassInfo``), read from the class body alone; and two text searches that tell
facts about classes without reading them.
"""

from __future__ import annotations

import ast

from lint_rules.analysis.nodes import FunctionNode, statements
from lint_rules.slotted import Record

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any


class ClassInfo(Record):
    """A class defined in the file: its methods and what its methods store on ``self``."""

    __slots__ = (
        "node",
        "methods",
        "properties",
        "attributes",
        "additions",
        "class_attributes",
        "annotations",
    )
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

    def __init__(
        self,
        node: ast.ClassDef,
        methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
        properties: set[str],
        attributes: dict[str, list[tuple[ast.expr, FunctionNode]]],
        additions: dict[str, list[tuple[str, ast.expr, FunctionNode]]],
        class_attributes: dict[str, ast.expr],
        annotations: dict[str, ast.expr],
    ) -> None:
        self._fill(locals())


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


def read_class(node: ast.ClassDef) -> ClassInfo:
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


def _collect_self_stores(
    info: ClassInfo, method: ast.FunctionDef | ast.AsyncFunctionDef, self_name: str
) -> None:
    sub: Any  # (told by its type: ``ast.parse`` makes no subclass of a node type)
    for sub in statements(method.body):
        kind = type(sub)
        if kind is ast.Assign or kind is ast.AnnAssign:
            if sub.value is None:
                continue
            targets = sub.targets if kind is ast.Assign else [sub.target]
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
                elif isinstance(target, (ast.Tuple, ast.List)):
                    for attr, part in _unpacked_attrs(target, sub.value, self_name):
                        info.attributes.setdefault(attr, []).append((part, method))
        elif (
            kind is ast.Expr
            and isinstance(sub.value, ast.Call)
            and isinstance(sub.value.func, ast.Attribute)
            and sub.value.func.attr in _ADDERS
            and sub.value.args
        ):
            attr = _self_attr(sub.value.func.value, self_name)
            if attr is not None:
                how = _ADDERS[sub.value.func.attr]
                info.additions.setdefault(attr, []).append((how, sub.value.args[-1], method))


def _unpacked_attrs(
    target: ast.Tuple | ast.List, value: ast.expr, self_name: str
) -> list[tuple[str, ast.expr]]:
    """``(self.x, self.y) = value``: each attribute with the part of ``value`` it receives,
    written as ``value[i]`` (``(self.graphed,) = make_graphed_callables(...)``)."""
    found: list[tuple[str, ast.expr]] = []
    if any(isinstance(e, ast.Starred) for e in target.elts):
        return found
    for index, element in enumerate(target.elts):
        part = ast.Subscript(value=value, slice=ast.Constant(index), ctx=ast.Load())
        ast.copy_location(part, value)
        attr = _self_attr(element, self_name)
        if attr is not None:
            found.append((attr, part))
        elif isinstance(element, (ast.Tuple, ast.List)):
            found.extend(_unpacked_attrs(element, part, self_name))
    return found
