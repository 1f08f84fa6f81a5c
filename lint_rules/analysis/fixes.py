"""Edits for a finding, built only when a face asks for them (flake8 never applies a fix).

Every builder gets the resolved callee (``resolve.Callee``) of the call it fixes. A fix is
``safe`` (applied by ``fix``) only when the callee resolved to a TE module and the edit provably
changes nothing but the flag's value: the old value has no call or other effect that the fix
would skip, is not a parameter forwarded from the caller, and (for ``**mapping``) the mapping
goes nowhere else. Everything else is ``unsafe`` (applied with ``--unsafe-fixes``): see
docs/fixes.md.
"""

from __future__ import annotations

import ast

from lint_rules.analysis.classes import Classes
from lint_rules.analysis.fold import fold_local
from lint_rules.analysis.kinds import Kind, QualName, TEClass
from lint_rules.analysis.lifecycle import Judgement
from lint_rules.analysis.resolve import Callee, TEModule, Unresolved
from lint_rules.analysis.symbols import ModuleSymbols, Scope, is_none, span
from lint_rules.analysis.together import _OWN_SCOPES, Reads, combine
from lint_rules.findings import Edit, Finding, Fix, Position, ast_lines
from lint_rules.settings import Settings
from lint_rules.slotted import replace
from lint_rules.te import FLAG

_WRAP_IN_PARENS = (ast.Lambda, ast.IfExp, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Starred)
_EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)
_MAPPING_STORES = frozenset({"update", "setdefault"})


def has_effects(value: ast.expr) -> bool:
    """Whether evaluating ``value`` may do more than read (a call, ``await``, ``yield``, ``:=``).

    A fix that replaces (or, with a guard, skips) such a value would skip that effect. The body
    of a lambda is not evaluated by the value itself.
    """
    todo: list[ast.AST] = [value]
    while todo:
        node = todo.pop()
        if isinstance(node, _EFFECTS):
            return True
        if isinstance(node, ast.Lambda):
            todo.extend(node.args.defaults)
            todo.extend(d for d in node.args.kw_defaults if d is not None)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def _is_parameter(value: ast.expr, scope: Scope | None) -> bool:
    """``value`` passes on a parameter of an enclosing function, as is or as one of its
    alternatives (``flag if flag is not None else self.flag``, ``flag or False``): a flag the
    caller gives, which ``None`` would drop, so the fix is unsafe. A parameter only tested
    (``step == 0``) is not passed on."""
    if scope is None:
        return False
    if isinstance(value, ast.Name):
        owner = scope.lookup(value.id)
        return owner is not None and value.id in owner.params and value.id not in owner.bindings
    if isinstance(value, ast.IfExp):
        return _is_parameter(value.body, scope) or _is_parameter(value.orelse, scope)
    if isinstance(value, ast.BoolOp):
        return any(_is_parameter(part, scope) for part in value.values)
    if isinstance(value, ast.NamedExpr):
        return _is_parameter(value.value, scope)
    return False


def _fallback_of_parameter(value: ast.expr, scope: Scope | None) -> ast.expr | None:
    """In ``p if p is not None else v`` (either way round), where ``p`` is a parameter passed
    on, the branch ``v`` that is not (None when there is no such shape, or it is ``None``)."""
    if not isinstance(value, ast.IfExp):
        return None
    for kept, other in ((value.body, value.orelse), (value.orelse, value.body)):
        if (
            isinstance(kept, ast.Name)
            and _is_parameter(kept, scope)
            and not is_none(other)
            and not _is_parameter(other, scope)
        ):
            return other
    return None


def _kept_when_set(value: ast.expr) -> str | None:
    """``p`` in ``p if p is not None else v`` or ``v if p is None else p``: what the value is
    once its fallback ``v`` is None."""
    assert isinstance(value, ast.IfExp)
    test = value.test
    if not (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and is_none(test.comparators[0])
    ):
        return None
    name = test.left.id
    kept = value.body if isinstance(test.ops[0], ast.IsNot) else value.orelse
    if isinstance(test.ops[0], (ast.Is, ast.IsNot)) and getattr(kept, "id", None) == name:
        return name
    return None


def _only_splatted_once(name: str, scope: Scope | None) -> bool:
    """``name`` is a local mapping that is only filled and splatted into one call."""
    owner = scope.lookup(name) if scope is not None else None
    if owner is None or owner.node is None or isinstance(owner.node, ast.Lambda):
        return False
    kwarg = owner.node.args.kwarg
    if name in owner.params and not (kwarg is not None and kwarg.arg == name):
        return False  # the caller's mapping (a `**kwargs` parameter is a fresh local dict)
    splats = 0
    todo: list[tuple[ast.AST, ast.AST | None]] = [(owner.node, None)]
    while todo:
        node, parent = todo.pop()
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            if isinstance(parent, ast.keyword) and parent.arg is None:
                splats += 1
            elif not (
                (isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store))
                or (isinstance(parent, ast.Attribute) and parent.attr in _MAPPING_STORES)
            ):
                return False  # read, passed on, returned...: the edit would reach further
        todo.extend((child, node) for child in ast.iter_child_nodes(node))
    return splats == 1


class NoFixes:
    """What the rules use when no face asked for fixes: every fix is None, nothing is built."""

    def value_fix(self, *args: object, **kwargs: object) -> Fix | None:
        return None

    def positional_fix(self, *args: object, **kwargs: object) -> Fix | None:
        return None

    def none_fix(self, *args: object, **kwargs: object) -> Fix | None:
        return None

    def mapping_fix(self, *args: object, **kwargs: object) -> Fix | None:
        return None

    def combine(self, findings: list[Finding]) -> list[Finding]:
        return findings


class FixBuilder:
    """Build the edits that make a flag ``None`` (or guarded) in one file."""

    def __init__(
        self,
        symbols: ModuleSymbols,
        settings: Settings,
        source: str | None,
        classes: Classes | None = None,
        tree: ast.Module | None = None,
        lines: list[str] | None = None,
    ) -> None:
        self.symbols = symbols
        self.settings = settings
        self.source = source
        self.source_lines = lines
        """The source's lines as ``ast`` numbers them, when the caller has split them."""
        self.classes = classes
        self.tree = tree
        self._stored: list[tuple[str, ast.ClassDef | None]] | None = None
        self.reads: Reads = {}
        """Each None fix's replaced span, with the reads of locals it drops and the function
        that owns each (``_note_read``): what ``combine`` folds once the findings are known."""
        self.guard_missing: str | None = None
        """A file of the run that is ``guard-import``'s module and never spells the guard's
        name (``Project.guard_missing``): the import the guard strategy adds would fail."""

    def value_fix(
        self,
        value: ast.expr,
        scope: Scope | None,
        repeated: str | None,
        callee: Callee,
        prefix: str = "",
        judgement: Judgement | None = None,
    ) -> Fix | None:
        """Rewrite ``value`` to None or guarded; ``prefix`` (``is_first_microbatch=``) turns a
        positional argument into the keyword form. ``judgement``: the value's lifecycle verdict
        (a flag kept under FP8 only gets a note: ``None`` gives up the weight cache there).

        The value's own parentheses on its line (``=(i == 0)``) go with it: ``None``, not
        ``(None)``; the guard goes inside them instead of adding a second pair.
        """
        if any(isinstance(node, ast.NamedExpr) for node in ast.walk(value)):
            return None  # `(f := x)`, also nested: any rewrite would change what `f` is bound to
        if isinstance(callee, Unresolved) and callee.graphed:
            return None  # a graphed callable needs a bool: `None` would break the call
        fallback = _fallback_of_parameter(value, scope) if not repeated else None
        replacement, changed = "None", value
        if fallback is not None and self.settings.fix_strategy == "none":
            # `p if p is not None else self.flag`: the caller's `p` is kept, the fallback is
            # None; `p if p is not None else None` is `p`
            kept = _kept_when_set(value)
            changed = fallback  # what the fix changes: the caller's `p` stays as it is
            if kept is not None:
                replacement = kept
            else:
                value, prefix = fallback, ""
        start, end = span(value)
        own = self._paren_span(value)
        outer_start, outer_end = own if isinstance(own, tuple) else (start, end)
        safe = (
            isinstance(callee, TEModule)
            and not has_effects(changed)
            and not _is_parameter(changed, scope)
        )
        applicability = "safe" if safe else "unsafe"
        note = None
        if judgement is not None and judgement.condition:
            note = (
                f"None gives up FP8 weight caching where `{judgement.condition}` re-arms the "
                "flag; `--fix-strategy guard` keeps it"
            )
        if judgement is not None and judgement.provisional:
            applicability = "unsafe"  # another file of the project may re-arm it
            note = "re-arming in other files is not seen here: check the project first"
        folded = self._fold_local(changed, scope)
        if folded is None:  # the local would stay, unused (F841), or read dynamically
            applicability = "unsafe"
            note = note or (
                f"leaves `{getattr(changed, 'id', '')}` assigned and never used: delete it"
            )
            folded = ()
        none = Fix(
            (Edit(outer_start, outer_end, f"{prefix}{replacement}"), *folded),
            applicability=applicability,
            note=note,
        )
        self._note_read(changed, scope, (outer_start, outer_end))
        if repeated or self.settings.fix_strategy == "none":
            return none
        guard = self._guard_expression(scope)
        if self.guard_missing is not None:  # its import would fail
            name = self.settings.guard_import.rsplit(".", 1)[-1]
            guard = f"`{self.guard_missing}` (in the run) defines no `{name}`"
        if isinstance(guard, str):
            return replace(none, note=f"guard strategy fell back to None: {guard}")
        none = replace(none, edits=none.edits[:1])  # the guard keeps the local in use
        call, import_name = guard
        tail = f" if {call} else None"
        if isinstance(own, tuple) and not isinstance(value, _WRAP_IN_PARENS):
            edits: tuple[Edit, ...] = (Edit(end, end, tail),)  # `(v)`: `(v if GUARD else None)`
            if prefix:
                edits = (Edit(outer_start, outer_start, prefix), *edits)
        else:
            wrap = not isinstance(own, tuple) and isinstance(value, _WRAP_IN_PARENS)
            opening, closing = ("((", ")") if wrap else ("(", "")
            edits = (
                Edit(outer_start, outer_start, f"{prefix}{opening}"),
                Edit(outer_end, outer_end, f"{closing}{tail})"),
            )
        return Fix(edits, guard_import=import_name, applicability=applicability)

    def mapping_fix(
        self,
        value: ast.expr,
        scope: Scope | None,
        callee: Callee,
        mapping: ast.expr,
        judgement: Judgement | None = None,
    ) -> Fix | None:
        """The fix of a value stored in a mapping: unsafe unless the mapping is an inline dict
        or a local one that goes into this call only (else the edit changes other calls too)."""
        fix = self.value_fix(value, scope, None, callee, judgement=judgement)
        inline = isinstance(mapping, ast.Dict)
        local = isinstance(mapping, ast.Name) and _only_splatted_once(mapping.id, scope)
        if fix is not None and not (inline or local):
            return replace(fix, applicability="unsafe")
        return fix

    def positional_fix(
        self,
        call: ast.Call,
        index: int,
        scope: Scope | None,
        repeated: str | None,
        callee: Callee,
        judgement: Judgement | None = None,
    ) -> Fix | None:
        """Keyword form where no positional argument follows, else the value in place."""
        arg = call.args[index]
        if index + 1 < len(call.args) or self._paren_span(arg) == "unsure":
            # parentheses across lines: the value in place is always valid
            return self.value_fix(arg, scope, repeated, callee, judgement=judgement)
        return self.value_fix(arg, scope, repeated, callee, f"{FLAG}=", judgement)

    def _fold_local(self, value: ast.expr, scope: Scope | None) -> tuple[Edit, ...] | None:
        """The edits that delete a local read only here (``analysis.fold``); None when it
        cannot be deleted and the fix would leave it unused."""
        if self.source is None:
            return ()
        if self.source_lines is None:
            self.source_lines = ast_lines(self.source)
        return fold_local(value, scope, self.source_lines)

    def none_fix(self, value: ast.expr, callee: Callee, scope: Scope | None = None) -> Fix | None:
        """TEM005's fix: None whatever the strategy (``scope`` tells a forwarded parameter)."""
        fix = self.value_fix(value, None, "shared", callee)
        if fix is not None:
            self._note_read(value, scope, (fix.edits[0].start, fix.edits[0].end))
        if fix is not None and _is_parameter(value, scope):
            return replace(fix, applicability="unsafe")
        return fix

    def _note_read(
        self, value: ast.expr, scope: Scope | None, where: tuple[Position, Position]
    ) -> None:
        """Remember the reads of locals that the None fix replacing ``where`` drops with
        ``value`` (``self.flag if ok else None``: ``ok``), each with the function that owns the
        local (``value``'s or one around it). A value with a scope of its own (a lambda, a
        comprehension) is not looked into."""
        if scope is None:
            return
        if isinstance(value, ast.Name):
            names = [value]
        else:
            nodes = list(ast.walk(value))
            if any(isinstance(node, _OWN_SCOPES) for node in nodes):
                return
            names = [n for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        found = []
        for name in names:
            owner = scope.lookup(name.id)
            if owner is not None and isinstance(
                owner.node, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                found.append((name, owner))
        if found:
            self.reads[where] = tuple(found)

    def combine(self, findings: list[Finding]) -> list[Finding]:
        """One shared fix for the fixes that together replace every read of a local, its
        assignment deleted with them (``together.combine``)."""
        if not self.reads or self.source is None:
            return findings
        if self.source_lines is None:
            self.source_lines = ast_lines(self.source)
        return combine(findings, self.reads, self.source_lines)

    def _paren_span(self, node: ast.expr) -> tuple[Position, Position] | str | None:
        """The extent of ``node`` with its own parentheses (``f(x, (a == b))``), if any.

        ``ast`` ranges exclude such parentheses, so a keyword inserted at the node's start would
        land inside them. Only parentheses on the node's own lines are seen; without the source
        there are none. "unsure" when they may span lines.
        """
        if self.source is None:
            return None
        if self.source_lines is None:
            self.source_lines = ast_lines(self.source)
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
        root, config = self._config_root(), self.settings.guard_config
        if (
            root
            and (scope is None or scope.lookup(root) is None)
            and root not in self.symbols.alias_choices
        ):
            # `def f(this, x)`: `self.config` is `this.config` there; any other root that is
            # not in scope is never the receiver (`get_args()` must not become `self()`)
            receiver = _receiver(scope) if root == "self" else None
            if receiver is None:
                return f"`{root}` is not in scope"
            stripped = config.strip()
            root, config = receiver, receiver + stripped[stripped.index(root) + len(root) :]
        unset = self._unset_attribute(root, config, scope)
        if unset:
            return unset
        dotted_name = self.settings.guard_import
        name = dotted_name.rsplit(".", 1)[-1]
        owner = scope.lookup(name) if scope is not None else None
        if owner is not None and not any(
            b.how == "import" and b.qualname == dotted_name for b in owner.bindings.get(name, [])
        ):
            return f"a local `{name}` would shadow the guard"
        # The fixer adds the import unless the name is bound when the module runs (an import
        # under `if TYPE_CHECKING:` or inside a function is not): fixing.add_guard_import.
        needs_import = None if name in self.symbols.functions else dotted_name
        return f"{name}({config})", needs_import

    def _unset_attribute(self, root: str, config: str, scope: Scope | None) -> str | None:
        """Why ``CONFIG`` (``self.config``) would raise AttributeError in this method, or None.

        Only when the answer is known: ``root`` is the method's ``self``, every class of its
        lineage is in the file (or TE's or torch's, which have no ``config``, or ``object``),
        none has a decorator or a ``__getattr__``, none defines or declares the attribute, and
        nothing stores it on this lineage's ``self`` or on an instance from outside
        (``x.config = ...``, ``setattr``, ``add_module``/``register_*``, ``__dict__``).
        """
        attr = _config_attribute(config, root)
        owner = scope.lookup(root) if scope is not None and attr else None
        if owner is None or owner.cls is None or owner.self_name != root or not self.classes:
            return None
        classes = self.classes
        outside = classes.outside_bases(owner.cls)
        assert attr is not None
        if any(not _lacks(kind, attr) for kind in outside):
            return None
        for cls in classes.lineage(owner.cls):
            info = self.symbols.class_info(cls)
            if cls.decorator_list or any(name in info.methods for name in _DYNAMIC):
                return None
            if any(
                attr in known for known in (info.methods, info.class_attributes, info.annotations)
            ):
                return None
        lineage = classes.lineage(owner.cls)
        if any(
            name in (attr, "*") and (cls is None or any(cls is c for c in lineage))
            for name, cls in self._stores()
        ):
            return None  # stored by the lineage's methods, or on an instance from outside
        return f"`{owner.cls.name}` never sets `{root}.{attr}`"

    def _stores(self) -> list[tuple[str, ast.ClassDef | None]]:
        """Every attribute the file stores (``"*"``: one it cannot name), each with the class
        whose ``self`` it is stored on (None: on anything else)."""
        if self._stored is None:
            on_self: dict[int, ast.ClassDef] = {}
            for cls in ast.walk(self.tree) if self.tree is not None else ():
                if not isinstance(cls, ast.ClassDef):
                    continue
                for method in cls.body:
                    if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        args = method.args.posonlyargs + method.args.args
                        for node in ast.walk(method) if args else ():
                            if isinstance(node, ast.Name) and node.id == args[0].arg:
                                on_self[id(node)] = cls
            stored: list[tuple[str, ast.ClassDef | None]] = []
            for node in ast.walk(self.tree) if self.tree is not None else ():
                if isinstance(node, ast.Attribute) and (
                    not isinstance(node.ctx, ast.Load) or node.attr == "__dict__"
                ):
                    name = node.attr if node.attr != "__dict__" else "*"
                    stored.append((name, on_self.get(id(node.value))))
                elif isinstance(node, ast.Call):
                    store = _stored_by_call(node)
                    if store is not None:
                        target, key = store
                        value = key.value if isinstance(key, ast.Constant) else "*"
                        owner = on_self.get(id(target)) if target is not None else None
                        stored.append((str(value), owner))
            self._stored = stored
        return self._stored


def _receiver(scope: Scope | None) -> str | None:
    """The receiver of the method around ``scope`` (``this`` in ``def f(this, x)``), where the
    name still means it at ``scope``; None in a function, static method or classmethod."""
    method = scope
    while method is not None and method.cls is None:
        method = method.parent
    receiver = method.self_name if method is not None else None
    if receiver is None or scope is None or scope.lookup(receiver) is not method:
        return None
    return receiver


def _lacks(kind: Kind, attr: str) -> bool:
    """A base from outside the file that is known not to set ``attr``: ``object``, or a TE or
    torch class and ``attr`` is one neither sets (``config``)."""
    if isinstance(kind, QualName):
        if kind.name == "object":
            return True
        return kind.name.startswith("torch.") and attr in _TE_MODULES_LACK
    return isinstance(kind, TEClass) and attr in _TE_MODULES_LACK


def _stored_by_call(call: ast.Call) -> tuple[ast.expr | None, ast.expr | None] | None:
    """(the object, the attribute name) of ``setattr(obj, name, v)`` or
    ``obj.add_module(name, m)`` (``register_module``/``register_buffer``/``register_parameter``),
    else None."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr":
        args = call.args
        return (args[0] if args else None), (args[1] if len(args) > 1 else None)
    if isinstance(func, ast.Attribute) and func.attr in _REGISTERS:
        name = call.args[0] if call.args else None
        name = name or next((k.value for k in call.keywords if k.arg == "name"), None)
        return func.value, name
    return None


_REGISTERS = frozenset({"add_module", "register_module", "register_buffer", "register_parameter"})
_DYNAMIC = ("__getattr__", "__getattribute__")
_TE_MODULES_LACK = frozenset({"config"})
"""Attributes no TE module sets (read off transformer-engine 1.13 and 2.20 ``pytorch``)."""


def _config_attribute(config: str, root: str) -> str | None:
    """The attribute ``guard-config`` reads off ``root``: ``config`` in ``self.config.fp8``."""
    try:
        node: ast.AST = ast.parse(config.strip(), mode="eval").body
    except SyntaxError:
        return None
    while True:
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == root:
                return node.attr
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None
