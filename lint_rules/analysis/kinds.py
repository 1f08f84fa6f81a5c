"""The values resolution works with: ``Kind`` for any expression, ``Callee`` for a call's function.

``Callee`` is the small typed answer the rules and fix building get: a TE module (of a known
class or not), a TE callable that rejects the flag, not TE, or unresolved (with why).

``Kind`` is one small class per family, each with only the fields its family has: TE's own
(``TEClass``, ``TEInstance``, ``TEUnbound``), the file's own (``LocalClass``,
``LocalInstance``, ``LocalSelf``, ``LocalSuper``, ``LocalMethod``, ``LocalFunction``), another
file's of the run (``ProjectClass``, ``ProjectFunction``), opaque ones (``QualName``,
``NonTE``, ``Unknown``, ``Pending``), and ``Reject``, ``Forwarder``, ``Container``,
``Graphed``. Code dispatches on the class (``isinstance``), never on a string tag.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.slotted import Frozen

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from typing import Union

    from lint_rules.analysis.provenance import Origin
    from lint_rules.analysis.symbols import Scope

# --------------------------------------------------------------------------------------------
# The typed answer for a callee


class TEModule(Frozen):
    """A TE module's forward.

    ``cls`` is the TE class ("" when it cannot be told which one); ``shift`` moves the flag's
    positional index (1 for the unbound ``Linear.forward(module, ...)``, more through a
    checkpoint wrapper); ``via`` names the wrapper the module is called through, if any.
    """

    __slots__ = ("cls", "shift", "via", "index", "takes", "name")
    cls: str
    shift: int
    via: str
    index: int | None
    """The flag's positional index read off an in-file subclass's own ``forward`` (else the
    class's ``te.FLAG_POSITION``, when ``cls`` is known)."""
    takes: int | None
    """When an in-file ``forward`` takes the flag keyword-only and has no ``*args``: how many
    positional arguments it takes (one more is a TypeError)."""
    name: str
    """The in-file subclass called, if any: messages name it rather than its TE base."""

    def __init__(
        self,
        cls: str = "",
        shift: int = 0,
        via: str = "",
        index: int | None = None,
        takes: int | None = None,
        name: str = "",
    ) -> None:
        self._fill(locals())


class TERejects(Frozen):
    """A TE callable that does not accept the flag (TypeError): ``name`` says which."""

    __slots__ = ("name",)
    name: str

    def __init__(
        self,
        name: str,
    ) -> None:
        self._fill(locals())


class NotTE(Frozen):
    """Not a TE module call (a function, a local class, a builtin, a graphed callable...)."""

    __slots__ = ("why",)
    why: str

    def __init__(
        self,
        why: str = "",
    ) -> None:
        self._fill(locals())


class Unresolved(Frozen):
    """The tool cannot tell what is called: it may be a TE module. ``why`` says what stopped it."""

    __slots__ = ("why", "via", "graphed", "origin")
    why: str
    via: str
    graphed: bool
    """Its holder is named for CUDA graphs (``self.cuda_graphs[l][mb]``): it may be a
    ``make_graphed_callables`` callable, which needs a bool flag, so it is never rewritten."""
    origin: Origin | None
    """Where it comes from when an import says (``provenance.Foreign``, ``LookAlike``):
    not TE by evidence either way, so quiet unless ``unresolved = "report"``."""

    def __init__(
        self,
        why: str = "not resolved",
        via: str = "",
        graphed: bool = False,
        origin: Origin | None = None,
    ) -> None:
        self._fill(locals())


if TYPE_CHECKING:
    Callee = Union[TEModule, TERejects, NotTE, Unresolved]
else:  # the alias is the type checker's: at run time, its classes
    Callee = (TEModule, TERejects, NotTE, Unresolved)


# --------------------------------------------------------------------------------------------
# The working value of an expression: small typed families
#
# Values, never changed once made. Plain classes with slots, not frozen dataclasses:
# resolution makes tens of thousands of them per thousand files, and a frozen dataclass costs
# seven times as much to build. Two values are equal when they are of one class and agree on
# the fields ``_key`` names (the AST nodes, scopes and provenance they carry are not compared).


class Kind:
    """The resolved meaning of an expression, as far as the flag is concerned: one of the
    families below (``TEKind``, ``LocalKind``, ``ProjectKind``, ``OpaqueKind``, ``Reject``,
    ``Forwarder``, ``Container``, ``Graphed``). Consumers tell them apart with ``isinstance``."""

    __slots__ = ()

    def _key(self) -> tuple[object, ...]:
        return ()

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Kind):
            return NotImplemented
        return other.__class__ is self.__class__ and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        slots = [n for cls in reversed(type(self).__mro__) for n in getattr(cls, "__slots__", ())]
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in slots)
        return f"{type(self).__name__}({shown})"


# -- TE's own: a module class, one of its instances, its unbound ``forward`` ------------------


class TEKind(Kind):
    """A TE module class, instance or unbound ``forward``; ``name`` is the TE class ("" when
    it cannot be told which one)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple[object, ...]:
        return (self.name,)


class TEClass(TEKind):
    """A TE module class (``te.Linear``): calling it builds an instance."""

    __slots__ = ()


class TEUnbound(TEKind):
    """``TEClass.forward``: called with the module as its first argument."""

    __slots__ = ()


class TEInstance(TEKind):
    """A TE module (or an instance of a TE subclass: of the file, ``node``, or of another file
    of the run, a stand-in ``node`` named after it)."""

    __slots__ = ("node", "index", "rejects", "takes")

    def __init__(
        self,
        name: str,
        node: ast.ClassDef | None = None,
        index: int | None = None,
        rejects: bool = False,
        takes: int | None = None,
    ) -> None:
        self.name = name
        self.node = node
        """The subclass whose instance this is (not compared)."""
        self.index = index
        """When its ``forward`` is defined in the file: the flag's positional index in that
        signature (None: keyword only, or not a parameter)."""
        self.rejects = rejects
        """When its ``forward`` is defined in the file: it takes no flag."""
        self.takes = takes
        """When its ``forward`` is defined in the file and takes the flag keyword-only,
        without ``*args``: how many positional arguments it takes."""

    def _key(self) -> tuple[object, ...]:
        return (self.name, self.index, self.rejects, self.takes)


# -- TE callables that are not modules ------------------------------------------------------


class Reject(Kind):
    """A TE callable that does not accept the flag (a TypeError); ``name`` says which."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple[object, ...]:
        return (self.name,)


class Graphed(Kind):
    """A ``make_graphed_callables`` callable (or a container of them): it needs a bool flag."""

    __slots__ = ()


class Forwarder(Kind):
    """A wrapper that calls its first argument (checkpoint, ``functools.partial``...); ``shift``
    is the index of the first argument it passes on (after the function)."""

    __slots__ = ("name", "shift")

    def __init__(self, name: str, shift: int) -> None:
        self.name = name
        self.shift = shift

    def _key(self) -> tuple[object, ...]:
        return (self.name, self.shift)


class Container(Kind):
    """A container: ``element`` is what any item is (None: nothing known), ``items`` each item,
    in order, when known (not compared)."""

    __slots__ = ("element", "items")

    def __init__(self, element: Kind | None, items: tuple[Kind, ...] | None = None) -> None:
        self.element = element
        self.items = items

    def _key(self) -> tuple[object, ...]:
        return (self.element,)


# -- the file's own classes, methods and functions ------------------------------------------


class LocalKind(Kind):
    """Something defined in the file; ``name`` is its name."""

    __slots__ = ("name",)
    name: str

    def _key(self) -> tuple[object, ...]:
        return (self.name,)


class _OfClass(LocalKind):
    __slots__ = ("node",)

    def __init__(self, name: str, node: ast.ClassDef) -> None:
        self.name = name
        self.node = node
        """The in-file class (not compared)."""


class LocalClass(_OfClass):
    """An in-file class (``node``)."""

    __slots__ = ()


class LocalInstance(_OfClass):
    """An instance of an in-file class that is not a TE module."""

    __slots__ = ()


class LocalSelf(_OfClass):
    """``self`` in a method of ``node``."""

    __slots__ = ()


class LocalSuper(_OfClass):
    """``super()`` in a method of ``node``."""

    __slots__ = ()


class LocalMethod(LocalKind):
    """A method (``node``) of the in-file class ``owner``."""

    __slots__ = ("node", "owner")

    def __init__(
        self, name: str, node: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef
    ) -> None:
        self.name = name
        self.node = node
        self.owner = owner


class LocalFunction(LocalKind):
    """An in-file function (``node``); ``scope``: for a nested one, where it is defined."""

    __slots__ = ("node", "scope")

    def __init__(self, name: str, node: ast.AST, scope: Scope | None = None) -> None:
        self.name = name
        self.node = node
        self.scope = scope


# -- another file of the run (``project``) --------------------------------------------------


class ProjectKind(Kind):
    """A TE subclass or a TE module factory of another file of the run: ``name`` its
    qualname."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple[object, ...]:
        return (self.name,)


class ProjectClass(ProjectKind):
    __slots__ = ()


class ProjectFunction(ProjectKind):
    __slots__ = ()


# -- nothing the flag cares about, or not known ---------------------------------------------


class OpaqueKind(Kind):
    """A value the flag's rules do not look into: a dotted name outside TE, not TE, unknown,
    or being resolved."""

    __slots__ = ()


class QualName(OpaqueKind):
    """A dotted name outside TE (``torch.nn.Linear``, a builtin): ``name``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple[object, ...]:
        return (self.name,)


class NonTE(OpaqueKind):
    """Known not to be TE (a constant, a lambda, a torch module...)."""

    __slots__ = ()


class Unknown(OpaqueKind):
    """Not resolved: ``why`` says what stopped it; ``origin``, where it comes from when an
    import says (``provenance.Foreign`` or ``provenance.LookAlike``; not compared)."""

    __slots__ = ("why", "origin")

    def __init__(self, why: str = "", origin: Origin | None = None) -> None:
        self.why = why
        self.origin = origin

    def _key(self) -> tuple[object, ...]:
        return (self.why,)


class Pending(OpaqueKind):
    """A value being resolved (a cycle): ``join`` ignores it."""

    __slots__ = ()


NOT_TE = NonTE()
UNKNOWN = Unknown()
PENDING = Pending()
GRAPHED = Graphed()

_NON_TE_VALUES = (LocalInstance, LocalMethod, LocalFunction, NonTE)


def _outside_te(kind: Kind) -> bool:
    """A dotted name imported from a package that is not TE."""
    return isinstance(kind, QualName) and not kind.name.startswith("transformer_engine")


def te_instance(cls: str) -> TEInstance:
    return TEInstance(cls)


def unknown(why: str) -> Unknown:
    return Unknown(why)


def container(elements: Sequence[Kind], items: bool = True) -> Container:
    """A container holding ``elements`` (its items, in order, when ``items``)."""
    element = join(elements) if elements else None
    return Container(element, tuple(elements) if items else None)


def join(kinds: Sequence[Kind]) -> Kind:
    """Merge the kinds of several alternatives: anything that may be TE stays TE.

    A plain non-TE alternative (the ``None`` placeholder of ``x = None ... x = te.Linear()``)
    does not hide the others; a pending one (a cycle) contributes nothing.
    """
    if len(kinds) == 1 and not isinstance(kinds[0], Pending):
        return kinds[0]
    kinds = [k for k in kinds if not isinstance(k, Pending)]
    if not kinds:
        return PENDING
    live = [k for k in kinds if k != NOT_TE] or kinds
    first = live[0]
    if all(k == first for k in live):
        return first
    te = [k for k in live if isinstance(k, TEInstance)]
    if te:
        # Keep the class only when every alternative is that class: TEM002 reads the flag's
        # position from it.
        if len(te) == len(live) and len({(k.name, k.index, k.rejects, k.takes) for k in te}) == 1:
            if all(k.node is te[0].node for k in te):
                return te[0]
            # Two in-file subclasses with one layout: the layout holds, not one class's name.
            return TEInstance(te[0].name, index=te[0].index, takes=te[0].takes)
        return TEInstance("")
    for family in (TEClass, TEUnbound, Reject):
        for k in live:
            if isinstance(k, family):
                return k
    containers = [k for k in live if isinstance(k, Container)]
    if len(containers) == len(live):
        elements = [k.element for k in containers if k.element is not None]
        return Container(join(elements) if elements else None)
    if all(isinstance(k, _NON_TE_VALUES) for k in live):
        return NOT_TE  # in-file classes' instances, methods, functions: none is TE
    if all(isinstance(k, _NON_TE_VALUES) or _outside_te(k) for k in live):
        # A choice between imported functions (or them and in-file ones): none is TE.
        return NOT_TE
    origins = [k for k in live if isinstance(k, Unknown) and k.origin is not None]
    if origins and all(
        isinstance(k, _NON_TE_VALUES) or _outside_te(k) or (isinstance(k, Unknown) and k.origin)
        for k in live
    ):
        return origins[0]  # foreign values (and non-TE ones): where the first comes from
    if containers:
        return containers[0]
    return UNKNOWN
