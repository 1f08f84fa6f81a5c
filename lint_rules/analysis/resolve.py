"""What an expression, and above all a callee, IS as far as the flag is concerned.

Resolution stays inside the file: imports (with their ``try``/``if`` alternatives and ``*``),
aliases, parameters' annotations (quoted or not), ``self`` attributes, containers and their
constant indices, ``super()``, in-file classes (``classes``), what in-file functions and
methods return, and wrappers that forward their arguments (checkpoint, ``functools.partial``,
``torch.compile``). ``Kind`` is the working value; ``callee`` gives the typed ``Callee``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import warnings
from collections.abc import Callable

from lint_rules.analysis.classes import Classes
from lint_rules.analysis.kinds import (
    NOT_TE,
    PENDING,
    UNKNOWN,
    Callee,
    Container,
    Forwarder,
    Graphed,
    Kind,
    LocalClass,
    LocalFunction,
    LocalInstance,
    LocalMethod,
    LocalSelf,
    LocalSuper,
    NonTE,
    NotTE,
    Pending,
    ProjectClass,
    ProjectFunction,
    ProjectKind,
    QualName,
    Reject,
    TEClass,
    TEInstance,
    TEModule,
    TERejects,
    TEUnbound,
    Unknown,
    Unresolved,
    container,
    join,
    te_instance,
    unknown,
)
from lint_rules.analysis.library import library_call, torch_class
from lint_rules.analysis.nodes import iter_nodes
from lint_rules.analysis.project import Project
from lint_rules.analysis.provenance import origin_of
from lint_rules.analysis.symbols import (
    ModuleSymbols,
    Scope,
    constant_str,
    dotted,
    statements,
)
from lint_rules.te import (
    FORWARDERS,
    TAKES_FLAG_SINCE,
    TE_CHECKPOINT_LEGACY_ARGS,
    TE_ROOT,
    TEFacts,
    facts_for,
    te_class_of,
    te_rejecting_name,
    te_taking_name,
)

_BUILTIN_NAMES = frozenset(dir(builtins))
RETURNS_SELF = frozenset(
    {"cuda", "cpu", "xpu", "ipu", "mtia", "to", "to_empty", "type", "float", "double", "half"}
    | {"bfloat16", "train", "eval", "requires_grad_", "share_memory", "apply"}
)
"""``torch.nn.Module`` methods documented to return the module itself (``Returns: self``)."""
_MODULE_VALUES = (TEInstance, LocalInstance, Container, LocalSelf, Graphed, NonTE)
_AS_CALLED = (TEInstance, TEUnbound, Reject, Unknown, Graphed, Forwarder)
"""What a callee's value is as the callee: the call runs it."""
_INSTANTIATED = (TEClass, Reject, LocalClass, Pending, ProjectClass)
"""Calling these gives what ``Resolver.instance_of`` says."""
_STAR_KINDS = (TEClass, Reject, Forwarder, ProjectKind)
"""What a name from ``from m import *`` is taken to be (anything else: not known)."""
MAPPING_STORES = frozenset({"update", "setdefault"})
_VIEWS = frozenset({"values", "items"})
"""``ModuleDict`` (or dict) views: their items are what the mapping holds."""
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NO_CYCLE = 1 << 30


def te_taking(qual: str) -> bool:
    """A TE class whose instances take the flag in some releases without it touching a
    gradient (``DotProductAttention`` in 1.9-1.13, which holds no weights)."""
    return qual.startswith(TE_ROOT + ".") and qual.rsplit(".", 1)[-1] in TAKES_FLAG_SINCE


@functools.lru_cache(maxsize=4096)
def classify_qualname(qual: str, facts: TEFacts | None = None) -> Kind:
    """What an imported dotted name is, in the TE release of ``facts`` (newest: None)."""
    cls = te_class_of(qual)
    if cls:
        return TEClass(cls)
    if te_taking_name(qual, facts):
        return QualName(qual)  # takes the flag in this release, with no effect on
        # gradients (no weights): its instances are not modules the rules look at
    reject = te_rejecting_name(qual, facts)
    if reject:
        return Reject(reject)
    if qual in FORWARDERS:
        return Forwarder(FORWARDERS[qual], 1)
    return QualName(qual)


def _describe(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


class Resolver:
    """Resolve expressions of one file; results about classes and functions are memoised."""

    def __init__(
        self, symbols: ModuleSymbols, project: Project | None = None, facts: TEFacts | None = None
    ) -> None:
        self.symbols = symbols
        self.project = project
        """The other files of the run (``project``), or None: resolution stays in the file."""
        self.facts = facts or facts_for("")
        """TE's facts in the release the project uses (``te-version``)."""
        known = self.facts
        self.qualname_kind: Callable[[str], Kind] = lambda qual: classify_qualname(qual, known)
        """What an imported dotted name is: a TE name, an export of the run, or a qualname."""
        if project is not None:
            self.qualname_kind = lambda qual: project.kind(qual) or classify_qualname(qual, known)
        self.classes = Classes(self)
        self.resolving: set[int] = set()
        self._memo: dict[tuple[object, ...], Kind] = {}
        self._depth: dict[tuple[object, ...], int] = {}
        self._low = _NO_CYCLE

    def memoised(
        self, key: tuple[object, ...], compute: Callable[..., Kind], *args: object
    ) -> Kind:
        """``compute(*args)`` once per key (arguments, not a closure: most calls find the key).
        A key met again while it is being computed (a cycle: ``x = f(x)``, an attribute built
        from itself) is ``PENDING``, which ``join`` ignores;
        a result is kept only when every cycle it met closes at this key or below it, so a
        value computed while an outer one was pending is computed again later."""
        known = self._memo.get(key)
        if known is not None:
            return known
        depth = self._depth.get(key)
        if depth is not None:
            self._low = min(self._low, depth)
            return PENDING
        depth = len(self._depth)
        self._depth[key] = depth
        outer_low, self._low = self._low, _NO_CYCLE
        try:
            result = compute(*args)
        finally:
            del self._depth[key]
        if self._low >= depth:
            self._memo[key] = UNKNOWN if isinstance(result, Pending) else result
            self._low = outer_low
        else:
            self._low = min(outer_low, self._low)
        return result

    # -- the callee of a call ---------------------------------------------------------------

    def callee(self, call: ast.Call, scope: Scope | None) -> Callee:
        """What the function of ``call`` is (through a forwarding wrapper, what it calls)."""
        found = self._callee(call, scope)
        if isinstance(found, Unresolved) and graph_holder(call.func):
            return Unresolved(f"{found.why} (it may be a graphed callable)", found.via, True)
        return found

    def _callee(self, call: ast.Call, scope: Scope | None) -> Callee:
        kind = self.callee_kind(call.func, scope)
        if not isinstance(kind, Forwarder):
            return self._typed(kind, 0, "")
        via = _describe(call.func)
        if not call.args or isinstance(call.args[0], ast.Starred):
            return Unresolved(f"`{via}` is not given the function it calls", via)
        shift = kind.shift
        if kind.name == "te_checkpoint" and _legacy_te_checkpoint(call):
            shift += TE_CHECKPOINT_LEGACY_ARGS
        inner = self.callee_kind(call.args[0], scope)
        if isinstance(inner, Forwarder):
            return Unresolved(f"`{via}` wraps another wrapper", via)
        return self._typed(inner, shift, via)

    def _typed(self, kind: Kind, shift: int, via: str) -> Callee:
        if isinstance(kind, TEInstance):
            name = kind.node.name if kind.node is not None else ""
            if kind.rejects:
                return TERejects(name)
            return TEModule(kind.name, shift, via, kind.index, kind.takes, name)
        if isinstance(kind, TEUnbound):
            return TEModule(kind.name, shift + 1, via)
        if isinstance(kind, Reject):
            return TERejects(kind.name)
        if isinstance(kind, Unknown):
            return Unresolved(kind.why or "not resolved", via, origin=kind.origin)
        if isinstance(kind, Pending):
            return Unresolved("not resolved", via)
        if isinstance(kind, Graphed):
            return NotTE("a make_graphed_callables callable needs a bool flag")
        return NotTE()

    def callee_kind(self, func: ast.expr, scope: Scope | None) -> Kind:
        """What calling ``func`` calls: a TE module's forward, a rejecting callable, ..."""
        if isinstance(func, ast.Name) and func.id == "super":
            return NOT_TE
        if isinstance(func, ast.Attribute) and func.attr in MAPPING_STORES:
            return NOT_TE  # kw.update(is_first_microbatch=v) stores a key (TEM003's business)
        kind = self.resolve(func, scope)
        classes = self.classes
        if isinstance(kind, LocalSelf):
            if classes.defines(kind.node, "forward"):
                return NOT_TE
            return classes.self_attribute(kind.node, "forward")
        if isinstance(kind, LocalSuper):
            return classes.super_kind(kind.node)
        if isinstance(kind, _AS_CALLED):
            return kind
        if isinstance(kind, Pending):
            return UNKNOWN
        if isinstance(kind, TEClass):
            # The constructors take no such keyword (and no **kwargs): a TypeError.
            return Reject(f"{kind.name} constructor")
        # A name imported from elsewhere and called directly is a function (or constructor)
        # call; a local class's instance has its own forward, analysed where it is defined.
        return NOT_TE

    # -- names --------------------------------------------------------------------------------

    def resolve_name(self, name: str, scope: Scope | None) -> Kind:
        owner = scope.lookup(name) if scope is not None else None
        if owner is not None:
            return self.memoised(("local", name, id(owner)), self._local, name, owner)
        return self.memoised(("global", name), self._global, name)

    def _global(self, name: str) -> Kind:
        """A name no enclosing function binds: what the module binds it to."""
        symbols = self.symbols
        imported = symbols.alias_choices.get(name, ())
        te_imports = [q for q in imported if q == TE_ROOT or q.startswith(TE_ROOT + ".")]
        if te_imports:
            # `try: from transformer_engine.pytorch import Linear` / `except: class Linear`
            # (or `te = MagicMock()`): the fallback is for machines without TE, the TE
            # alternative is what runs where the flag matters.
            return join([self.qualname_kind(q) for q in te_imports])
        if name in symbols.classes:
            return LocalClass(name, symbols.classes[name])
        if name in symbols.functions:
            return LocalFunction(name, symbols.functions[name])
        if imported:
            return join([self.qualname_kind(q) for q in imported])
        if name in symbols.assigns:
            return join([self.resolve(v, None) for v in symbols.assigns[name]])
        for module in symbols.star_modules:
            kind = self.qualname_kind(f"{module}.{name}")
            if isinstance(kind, _STAR_KINDS):
                return kind
        if name in _BUILTIN_NAMES:
            return QualName(name)
        return unknown(f"`{name}` is not defined in the file")

    def _local(self, name: str, owner: Scope) -> Kind:
        if name in owner.params and name not in owner.bindings:
            if owner.self_name == name and owner.cls is not None:
                return LocalSelf(owner.cls.name, owner.cls)
            if owner.cls_name == name and owner.cls is not None:
                return LocalClass(owner.cls.name, owner.cls)
            annotation = owner.params[name]
            if annotation is not None:
                return self.instance_of(self.annotation(annotation))
            default = lambda_default(owner.node, name)
            if default is not None:  # `lambda x, b=block: b(x, ...)`: what it binds
                return self.resolve(default, owner.parent)
            return unknown(f"parameter `{name}` has no annotation")
        bindings = owner.bindings.get(name)
        if not bindings:  # bound only where the code never runs (``Scope.unbound``): a read
            return NOT_TE  # raises UnboundLocalError, nothing is called
        kinds = []
        for binding in bindings:
            definition = binding.definition
            if binding.how == "assign" and binding.value is not None:
                kinds.append(self.resolve(binding.value, owner))
            elif binding.how in ("for", "unpack") and binding.value is not None:
                kind = self.resolve(binding.value, owner)
                if binding.how == "for":
                    kind = self.element_of(kind)
                kinds.append(self._unpacked(kind, binding.path))
            elif binding.how == "def" and definition is not None:
                kinds.append(LocalFunction(name, definition, owner))
            elif binding.how == "class" and isinstance(definition, ast.ClassDef):
                kinds.append(LocalClass(definition.name, definition))
            elif binding.how == "import":
                kinds.append(self.qualname_kind(binding.qualname))
            else:
                kinds.append(unknown(f"`{name}` is bound by a statement that is not followed"))
        return join(kinds)

    def _unpacked(self, kind: Kind, path: tuple[int, ...] | None) -> Kind:
        """The part of ``kind`` that a name at ``path`` in a tuple target receives."""
        if path is None:
            return unknown("a starred target")
        for index in path:
            if isinstance(kind, Container) and kind.items is not None and index < len(kind.items):
                kind = kind.items[index]
            else:
                kind = self.element_of(kind)
        return kind

    def annotation(self, node: ast.expr) -> Kind:
        """What an annotation names; a quoted one (``"te.Linear"``) like an unquoted one."""
        text = constant_str(node)
        if text is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    node = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                return unknown("the quoted annotation does not parse")
        optional = ("Optional", "typing.Optional")
        if isinstance(node, ast.Subscript) and dotted(node.value) in optional:
            node = node.slice
        return self.resolve(node, None)

    # -- expressions --------------------------------------------------------------------------

    def resolve(self, node: ast.expr, scope: Scope | None) -> Kind:
        """What ``node`` evaluates to: a TE class, a TE instance, a container of them..."""
        key = id(node)
        if key in self.resolving:
            self._low = min(self._low, 0)  # a cycle through an expression: keep nothing open
            return PENDING
        self.resolving.add(key)
        try:
            return self._resolve(node, scope)
        finally:
            self.resolving.discard(key)

    def _resolve(self, node: ast.expr, scope: Scope | None) -> Kind:
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id, scope)
        if isinstance(node, ast.Attribute):
            head = node.value
            while type(head) is ast.Attribute:
                head = head.value  # type: ignore[attr-defined]
            if type(head) is ast.Name and (scope is None or scope.lookup(head.id) is None):
                # `te.pytorch.Linear` on a module-level name means the same wherever it is
                # spelled: resolved once per file.
                spelled = dotted(node)
                assert spelled is not None
                return self.memoised(("chain", spelled), self._chain, node, spelled)
            return self.attribute_of(self.resolve(node.value, scope), node.attr)
        if isinstance(node, ast.Subscript):
            return self.element_of(self.resolve(node.value, scope), node.slice)
        if isinstance(node, ast.Call):
            return self.call_result(node, scope)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return container([self.resolve(e, scope) for e in node.elts], items=False)
            return container([self.resolve(e, scope) for e in node.elts])
        if isinstance(node, ast.Dict):
            return container([self.resolve(v, scope) for v in node.values], items=False)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return Container(self.resolve(node.elt, scope))
        if isinstance(node, ast.DictComp):
            return Container(self.resolve(node.value, scope))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
            return join([self.resolve(node.left, scope), self.resolve(node.right, scope)])
        if isinstance(node, ast.IfExp):
            return join([self.resolve(node.body, scope), self.resolve(node.orelse, scope)])
        if isinstance(node, (ast.Constant, ast.Lambda, ast.JoinedStr, ast.Compare)):
            return NOT_TE
        if isinstance(node, ast.NamedExpr):
            return self.resolve(node.value, scope)
        if isinstance(node, ast.BoolOp):  # `fn or default_fn`: one of the operands
            return join([self.resolve(value, scope) for value in node.values])
        return unknown(f"`{type(node).__name__}` expressions are not followed")

    def _chain(self, node: ast.Attribute, spelled: str) -> Kind:
        """``a.b.c`` where ``a`` is a module-level name (or none at all)."""
        head, _, rest = spelled.partition(".")
        choices = self.symbols.alias_choices.get(head, ())
        if len(choices) > 1:
            return join([self.qualname_kind(f"{q}.{rest}") for q in choices])
        return self.attribute_of(self.resolve(node.value, None), node.attr)

    def element_of(self, kind: Kind, index: ast.expr | None = None) -> Kind:
        """An item of ``kind`` (``index``: the subscript, when a constant picks one item)."""
        if isinstance(kind, Container):
            if kind.items is not None and isinstance(index, ast.Constant):
                position = index.value
                if isinstance(position, int) and -len(kind.items) <= position < len(kind.items):
                    return kind.items[position]
            if kind.element is not None:
                return kind.element
            return unknown("nothing is known to be stored in the container")
        if isinstance(kind, (Graphed, Pending)):  # make_graphed_callables: a tuple for a tuple
            return kind
        return unknown("an item of a value that is not resolved")

    def instance_of(self, kind: Kind) -> Kind:
        if isinstance(kind, TEClass):
            return te_instance(kind.name)
        if isinstance(kind, (Reject, Pending)):
            return kind
        if isinstance(kind, LocalClass):
            return self.classes.instance(kind.node)
        if isinstance(kind, QualName):
            if torch_class(kind.name) or te_taking(kind.name):
                return NOT_TE
            origin = origin_of(kind.name)
            if origin is not None:
                return Unknown(f"an instance of `{kind.name}`", origin)
        if isinstance(kind, ProjectClass):
            return self.project.instance(kind.name)  # type: ignore[union-attr]
        return unknown("an instance of a class that is not resolved")

    def attribute_of(self, base: Kind, attr: str) -> Kind:
        classes = self.classes
        if isinstance(base, QualName):
            return self.qualname_kind(f"{base.name}.{attr}")
        if isinstance(base, ProjectClass):
            return self.project.class_attribute(base.name, attr)  # type: ignore[union-attr]
        if isinstance(base, (LocalSelf, LocalInstance)):
            return classes.self_attribute(base.node, attr)
        if isinstance(base, TEInstance):
            return base if attr == "forward" else UNKNOWN
        if isinstance(base, TEClass):
            return TEUnbound(base.name) if attr == "forward" else UNKNOWN
        if isinstance(base, LocalClass):
            return classes.class_attribute(base.node, attr)
        if isinstance(base, LocalSuper):
            return classes.super_kind(base.node) if attr == "forward" else UNKNOWN
        if isinstance(base, (Reject, Pending, Unknown)):
            return base
        return unknown(f"attribute `{attr}` of a value that is not resolved")

    # -- calls --------------------------------------------------------------------------------

    def call_result(self, call: ast.Call, scope: Scope | None) -> Kind:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "super" and scope is not None:
            cls = scope.enclosing_class()
            if cls is not None:
                return LocalSuper(cls.name, cls)
            return unknown("`super()` outside a class")
        if isinstance(func, ast.Name) and func.id == "getattr" and len(call.args) >= 2:
            name = constant_str(call.args[1])
            if name is not None:
                return self.attribute_of(self.resolve(call.args[0], scope), name)
            return unknown("`getattr` with a name that is not a constant")
        if isinstance(func, ast.Attribute) and func.attr in _VIEWS and not call.args:
            base = self.resolve(func.value, scope)  # `self.layers.values()`, `.items()`
            if isinstance(base, Container) and base.element is not None:
                if func.attr == "values":
                    return Container(base.element)
                return Container(container([NOT_TE, base.element]))
        if isinstance(func, ast.Attribute) and func.attr in RETURNS_SELF:
            base = self.resolve(func.value, scope)
            if isinstance(base, _MODULE_VALUES):
                return base  # `te.Linear(...).cuda()`, `.to(device)`, `.eval()`: the module
        kind = self.resolve(func, scope)
        if isinstance(kind, _INSTANTIATED):
            return self.instance_of(kind)
        if isinstance(kind, ProjectFunction):
            return self.project.instance(kind.name)  # type: ignore[union-attr]
        if isinstance(kind, LocalMethod):
            return self.returns(kind.node, None, kind.owner)
        if isinstance(kind, LocalFunction) and isinstance(kind.node, _FUNCTIONS):
            return self.returns(kind.node, kind.scope, None)
        if isinstance(kind, QualName):
            return library_call(self, kind.name, call, scope)
        if isinstance(kind, Forwarder) and kind.name == "partial" and call.args:
            inner = self.resolve(call.args[0], scope)
            if isinstance(inner, TEInstance) and len(call.args) > 1:
                return te_instance("")  # bound positional arguments move the flag
            return inner
        return unknown(f"the result of `{dotted(func) or 'a call'}`")

    def returns(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        parent: Scope | None,
        owner: ast.ClassDef | None,
        generator: bool | None = None,
    ) -> Kind:
        """What calling an in-file function or method returns (a factory's product), worked
        out once per function. ``generator=False``: the caller knows it holds no ``yield``."""

        def compute() -> Kind:
            if isinstance(function, ast.AsyncFunctionDef) or (
                generator is not False
                and self.symbols.may_yield(function)  # (its text spells `yield`)
                and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in iter_nodes(function))
            ):
                return unknown(f"`{function.name}` is a generator or a coroutine")
            scope = self.symbols.scope(function, parent, owner)
            values = [s.value for s in statements(function.body) if isinstance(s, ast.Return)]
            kinds = [self.resolve(v, scope) if v is not None else NOT_TE for v in values]
            return join(kinds) if kinds else NOT_TE

        return self.memoised(("returns", id(function)), compute)


def graph_holder(func: ast.expr) -> bool:
    """Whether a callee is spelled as held for CUDA graphs: a name or attribute on its path
    says ``graph`` (``self.cuda_graphs[l][mb]``, ``graphed_layers[i]``, ``graph_fn``)."""
    node: ast.expr = func
    while True:
        if isinstance(node, ast.Name):
            return "graph" in node.id.lower()
        if isinstance(node, ast.Attribute):
            if "graph" in node.attr.lower():
                return True
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return False


def lambda_default(function: ast.AST | None, name: str) -> ast.expr | None:
    """The default of a lambda's parameter ``name`` (``lambda x, b=block: ...``): what the
    idiom binds, evaluated where the lambda is written; None for a ``def`` (callers may pass
    another value) and for a parameter without one."""
    if not isinstance(function, ast.Lambda):
        return None
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
        if arg.arg == name:
            return default
    for kwarg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if kwarg.arg == name:
            return kw_default
    return None


def _legacy_te_checkpoint(call: ast.Call) -> bool:
    """``checkpoint(fn, distribute_saved_activations, get_rng_state_tracker, tp_group, ...)``.

    TE tells the legacy form by the second argument being a bool; statically, a bool constant
    or a name that says so.
    """
    if len(call.args) <= 1 + TE_CHECKPOINT_LEGACY_ARGS:
        return False
    second = call.args[1]
    if isinstance(second, ast.Constant):
        return isinstance(second.value, bool)
    spelled = dotted(second) or ""
    return spelled.rsplit(".", 1)[-1] == "distribute_saved_activations"
