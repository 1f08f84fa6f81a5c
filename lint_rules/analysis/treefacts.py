"""What every collector of one tree reads off it, once (a file's verdicts make several
collectors): its functions and classes as the walk meets them, a function's locals, flags,
bindings and ``global`` names, the file's counters and imports, the kind of each loop and the
placement of each statement (``Write.first``: under a first-microbatch test, in a step or
microbatch loop, before the step loop)."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Mapping

from lint_rules.analysis.conditions import Reading
from lint_rules.analysis.counters import counters as _counters
from lint_rules.analysis.facts import HOOKS, Where, _last_name, evaluating
from lint_rules.analysis.nodes import statements, target_names
from lint_rules.analysis.objects import class_name
from lint_rules.analysis.prefilter import Gates
from lint_rules.analysis.walk import called_names, updates_parameters

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any

_ASSIGNS = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign})
_LOOPS_WITHS = frozenset({ast.For, ast.AsyncFor, ast.With, ast.AsyncWith})
_PER_TREE: weakref.WeakKeyDictionary[ast.Module, TreeFacts] = weakref.WeakKeyDictionary()


def tree_facts(tree: ast.Module) -> TreeFacts:
    """The one ``TreeFacts`` of ``tree`` (freed with it)."""
    found = _PER_TREE.get(tree)
    if found is None:
        found = _PER_TREE[tree] = TreeFacts(tree)
    return found


class TreeFacts:
    """What was read off one tree, each answer memoized (see the module's docstring)."""

    def __init__(self, tree: ast.Module) -> None:
        self._tree = weakref.ref(tree)  # (the table above keys by the tree: no strong ref)
        self.functions: dict[str, ast.AST] = {}
        """The functions met so far, by qualified name."""
        self.classes: dict[str, ast.ClassDef] = {}
        self._memo: dict[tuple[str, str], object] = {}
        self._file: dict[str, object] = {}
        self._places: dict[tuple[object, ...], str] = {}
        self._loop_kinds: dict[int, str] = {}

    @property
    def tree(self) -> ast.Module:
        tree = self._tree()
        assert tree is not None  # (a collector holds it while it asks)
        return tree

    # -- what a test is read through ---------------------------------------------------------

    def reading(self, where: Where) -> Reading:
        function = where.function if where.body_of == "function" else ""
        loops = where.loops

        def loop_of(name: str) -> str | None:
            for loop in reversed(loops):
                if isinstance(loop, (ast.For, ast.AsyncFor)) and name in {
                    n.id for n in target_names(loop.target)
                }:
                    return self.loop_kind(loop)
            return None

        return Reading(
            lambda: self.locals(function),
            lambda: self._flags(function),
            loop_of,
            lambda: self._counters_of(where.cls),
        )

    def locals(self, function: str) -> Mapping[str, ast.expr]:
        """The locals of ``function`` bound once (``name -> value``)."""
        key = ("locals", function)
        found = self._memo.get(key)
        if found is None:
            node = self.functions.get(function)
            counts: dict[str, int] = {}
            values: dict[str, ast.expr] = {}
            stmt: Any  # (told by its type: ``ast.parse`` makes no subclass of a node type)
            for stmt in statements(getattr(node, "body", ())) if node is not None else ():
                kind = type(stmt)
                if kind in _ASSIGNS:
                    targets = stmt.targets if kind is ast.Assign else [stmt.target]
                    for target in targets:
                        for name in target_names(target):
                            counts[name.id] = counts.get(name.id, 0) + 1
                            if stmt.value is not None and kind is not ast.AugAssign:
                                values[name.id] = stmt.value
                elif kind in _LOOPS_WITHS:
                    bound = (
                        [stmt.target]
                        if kind is ast.For or kind is ast.AsyncFor
                        else [i.optional_vars for i in stmt.items if i.optional_vars is not None]
                    )
                    for target in bound:
                        for other in target_names(target):
                            counts[other.id] = counts.get(other.id, 0) + 2
            found = self._memo[key] = {n: v for n, v in values.items() if counts.get(n) == 1}
        return found  # type: ignore[return-value]

    def _flags(self, function: str) -> frozenset[str]:
        """The locals of ``function`` that every assignment gives a constant."""
        key = ("flags", function)
        found = self._memo.get(key)
        if found is None:
            node = self.functions.get(function)
            values: dict[str, bool] = {}
            for stmt in statements(getattr(node, "body", ())) if node is not None else ():
                if type(stmt) is ast.Assign:
                    constant = isinstance(stmt.value, ast.Constant)  # type: ignore[attr-defined]
                    for target in stmt.targets:
                        if isinstance(target, ast.Name):
                            values[target.id] = values.get(target.id, True) and constant
            found = self._memo[key] = frozenset(n for n, c in values.items() if c)
        return found  # type: ignore[return-value]

    def _counters(self) -> frozenset[str]:
        """The file's counters: names and attributes stepped with ``+=``/``-=`` only by
        training (outside a forward, or in a forward under ``self.training`` /
        ``torch.is_grad_enabled()``: a counter evaluation forwards also move drifts off the
        step). A countdown (compared with its first value) counts only if it is also refilled
        outside ``__init__``: ``refill:<name>``."""
        found = self._file.get("counters")
        if found is None:
            found = self._file["counters"] = frozenset(_counters(self.tree))
        return found  # type: ignore[return-value]

    def _counters_of(self, cls: str) -> frozenset[str]:
        """The counters of the class ``cls`` (of module-level functions for "")."""
        key = ("counters", cls)
        found = self._memo.get(key)
        if found is None:
            prefix = f"{cls}."
            found = self._memo[key] = frozenset(
                c.replace(prefix, "", 1) for c in self._counters() if prefix in c
            )
        return found  # type: ignore[return-value]

    def applied(self, gates: Gates, source: str | None) -> frozenset[str]:
        """The names of the functions the file hands to ``.apply()`` or a hook registration."""
        found = self._file.get("applied")
        if found is None:
            spelled = gates.handed_names(source) if source is not None else None
            if spelled is None:
                names: set[str] = set()
                for node in ast.walk(self.tree):
                    if isinstance(node, ast.Call) and _last_name(node.func) in HOOKS:
                        names.update(_last_name(a) for a in node.args[:1])
                spelled = frozenset(names)
            found = self._file["applied"] = spelled
        return found  # type: ignore[return-value]

    # -- where a statement runs --------------------------------------------------------------

    def loop_kind(self, loop: ast.AST) -> str:
        """``step`` (it changes the weights, or holds a microbatch loop), ``micro`` (it runs
        backward), else ``loop`` (its body walked once; shared by every collector of the tree)."""
        kind = self._loop_kinds.get(id(loop))
        if kind is None:
            names = [name.lower() for name in called_names(loop)]
            if any(n in ("step", "zero_grad") or ("optim" in n and "step" in n) for n in names):
                kind = "step"
            elif any("backward" in n for n in names):
                inner = [
                    s
                    for s in statements(getattr(loop, "body", ()))
                    if isinstance(s, (ast.For, ast.AsyncFor, ast.While))
                ]
                nested = any(self.loop_kind(s) != "loop" for s in inner)  # (each walked once)
                kind = "step" if nested or updates_parameters(loop) else "micro"
            else:  # no backward: not the loop of a training step (its gradients come later)
                kind = "loop"
            self._loop_kinds[id(loop)] = kind
        return kind

    def placement(self, where: Where) -> str:
        """``Write.first`` for a statement at ``where`` (once per place)."""
        key = (where.function, where.top, tuple(id(loop) for loop in where.loops), where.first)
        found = self._places.get(key)
        if found is None:
            found = self._places[key] = self._placement(where)
        return found

    def _placement(self, where: Where) -> str:
        if where.first:
            return where.first
        for loop in reversed(where.loops):
            kind = self.loop_kind(loop)
            if kind != "loop":
                return kind
        if where.loops:
            return "loop"
        node = self.functions.get(where.function) if where.body_of == "function" else None
        if node is not None and where.top >= 0:
            later = getattr(node, "body", ())[where.top + 1 :]
            for stmt in later:
                for sub in statements([stmt]):
                    is_loop = isinstance(sub, (ast.For, ast.AsyncFor, ast.While))
                    if is_loop and self.loop_kind(sub) == "step":
                        return "before"
        return ""

    def evaluating(self, function: str) -> bool:
        key = ("evaluation", function)
        known = self._memo.get(key)
        if known is None:
            node = self.functions.get(function)
            known = self._memo[key] = node is not None and evaluating(node)
        return bool(known)

    # -- what a name or attribute is ---------------------------------------------------------

    def globals(self, function: str) -> frozenset[str]:
        """The names ``function`` declares ``global``."""
        key = ("globals", function)
        found = self._memo.get(key)
        if found is None:
            node = self.functions.get(function)
            found = self._memo[key] = frozenset(
                n
                for s in statements(getattr(node, "body", ()))
                if isinstance(s, ast.Global)
                for n in s.names
            )
        return found  # type: ignore[return-value]

    def from_model(self, name: str, where: Where) -> bool:
        """A local every value of which is fetched from a parameter or a tree's module
        (``decoder = get_attr_wrapped_model(model, "decoder")``, ``getattr(model, "fc")``,
        ``model.decoder``): a module of that model's tree."""
        if where.body_of != "function" or name in where.params:
            return False
        roots = where.params | where.trees
        values = [
            v
            for n, v in self._bindings(where.function)
            if n == name and not (isinstance(v, ast.Constant) and v.value is None)
        ]
        if not values:
            return False
        for value in values:
            base = value.args[0] if isinstance(value, ast.Call) and value.args else value
            if isinstance(value, ast.Attribute):
                base = value.value
            if not (isinstance(base, ast.Name) and base.id in roots):
                return False
        return True

    def _bindings(self, function: str) -> list[tuple[str, ast.expr]]:
        key = ("bindings", function)
        found = self._memo.get(key)
        if found is None:
            node = self.functions.get(function)
            found = self._memo[key] = [
                (t.id, s.value)
                for s in (statements(getattr(node, "body", ())) if node is not None else ())
                if isinstance(s, ast.Assign)
                for t in s.targets
                if isinstance(t, ast.Name)
            ]
        return found  # type: ignore[return-value]

    def imports(self) -> frozenset[str]:
        """The names the module's imports bind (their first part)."""
        found = self._file.get("imports")
        if found is None:
            names: set[str] = set()
            for stmt in statements(self.tree.body):
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    for alias in stmt.names:
                        names.add((alias.asname or alias.name).split(".")[0])
            found = self._file["imports"] = frozenset(names)
        return found  # type: ignore[return-value]

    def module_objects(self) -> dict[str, str]:
        """``name = Cls(...)`` at the module's top level: ``name -> Cls``."""
        found = self._file.get("objects")
        if found is None:
            found = self._file["objects"] = {
                t.id: class_name(s.value)
                for s in self.tree.body
                if isinstance(s, ast.Assign) and class_name(s.value)
                for t in s.targets
                if isinstance(t, ast.Name)
            }
        return found  # type: ignore[return-value]

    def attributes(self, cls: str) -> dict[str, str]:
        """``self.x = Cls(...)`` in any method of the class ``cls``: ``x -> Cls``."""
        key = ("attributes", cls)
        found = self._memo.get(key)
        if found is None:
            table: dict[str, str] = {}
            node = self.classes.get(cls)
            methods = [
                m
                for m in getattr(node, "body", ())
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            for method in methods:
                for stmt in statements(method.body):
                    if isinstance(stmt, ast.Assign) and class_name(stmt.value):
                        for target in stmt.targets:
                            if isinstance(target, ast.Attribute):
                                table[target.attr] = class_name(stmt.value)
            found = table
            if node is not None:  # (a class another collector meets later is read then)
                self._memo[key] = table
        return found  # type: ignore[return-value]
