"""The values resolution works with: ``Kind`` for any expression, ``Callee`` for a call's function.

``Callee`` is the small typed answer the rules and fix building get: a TE module (of a known
class or not), a TE callable that rejects the flag, not TE, or unresolved (with why).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from lint_rules.analysis.provenance import Origin
    from lint_rules.analysis.symbols import Scope

# --------------------------------------------------------------------------------------------
# The typed answer for a callee


@dataclass(frozen=True)
class TEModule:
    """A TE module's forward.

    ``cls`` is the TE class ("" when it cannot be told which one); ``shift`` moves the flag's
    positional index (1 for the unbound ``Linear.forward(module, ...)``, more through a
    checkpoint wrapper); ``via`` names the wrapper the module is called through, if any.
    """

    cls: str = ""
    shift: int = 0
    via: str = ""
    index: int | None = None
    """The flag's positional index read off an in-file subclass's own ``forward`` (else the
    class's ``te.FLAG_POSITION``, when ``cls`` is known)."""
    takes: int | None = None
    """When an in-file ``forward`` takes the flag keyword-only and has no ``*args``: how many
    positional arguments it takes (one more is a TypeError)."""
    name: str = ""
    """The in-file subclass called, if any: messages name it rather than its TE base."""


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
    """The tool cannot tell what is called: it may be a TE module. ``why`` says what stopped it."""

    why: str = "not resolved"
    via: str = ""
    graphed: bool = False
    """Its holder is named for CUDA graphs (``self.cuda_graphs[l][mb]``): it may be a
    ``make_graphed_callables`` callable, which needs a bool flag, so it is never rewritten."""
    origin: Origin | None = None
    """Where it comes from when an import says (``provenance.Foreign``, ``LookAlike``):
    not TE by evidence either way, so quiet unless ``unresolved = "report"``."""


Callee = Union[TEModule, TERejects, NotTE, Unresolved]


# --------------------------------------------------------------------------------------------
# The working value of an expression


class Tag(enum.Enum):
    """What a ``Kind`` is (its ``tag``); the values are the names the docs use."""

    TE_CLASS = "te_class"
    TE_INSTANCE = "te_instance"
    UNBOUND = "unbound"
    REJECT = "reject"
    GRAPHED = "graphed"
    FORWARDER = "forwarder"
    CONTAINER = "container"
    CLASS = "class"
    LOCAL_INSTANCE = "local_instance"
    SELF = "self"
    SUPER = "super"
    METHOD = "method"
    FUNCTION = "function"
    PROJECT_CLASS = "project_class"
    PROJECT_FUNCTION = "project_function"
    QUALNAME = "qualname"
    NOT_TE = "not_te"
    UNKNOWN = "unknown"
    PENDING = "pending"


class Kind:
    """The resolved meaning of an expression, as far as the flag is concerned.

    ``tag`` is one of: ``te_class``, ``te_instance``, ``unbound`` (``TEClass.forward``),
    ``reject``, ``graphed``, ``forwarder`` (calls its first argument), ``container`` (``element``
    holds what it contains, ``items`` each item when known), ``class`` / ``local_instance`` /
    ``self`` / ``super`` (an in-file class, ``node``), ``method`` and ``function`` (in-file,
    ``node`` the definition), ``project_class`` / ``project_function`` (a TE subclass or a TE
    module factory of another file of the run, ``name`` its qualname: ``project``),
    ``qualname`` (a dotted name outside TE), ``not_te``, ``unknown`` (``name`` says why) and
    ``pending`` (a value being resolved: a cycle, ignored by ``join``).

    A value, never changed once made. A plain class with slots, not a frozen dataclass:
    resolution makes tens of thousands of them per thousand files, and a frozen dataclass
    costs seven times as much to build.
    """

    __slots__ = (
        "tag",
        "name",
        "element",
        "node",
        "items",
        "owner",
        "scope",
        "shift",
        "index",
        "rejects",
        "takes",
        "origin",
    )

    def __init__(
        self,
        tag: Tag,
        name: str = "",
        element: Kind | None = None,
        node: ast.AST | None = None,
        items: tuple[Kind, ...] | None = None,
        owner: ast.ClassDef | None = None,
        scope: Scope | None = None,
        shift: int = 0,
        index: int | None = None,
        rejects: bool = False,
        takes: int | None = None,
        origin: Origin | None = None,
    ) -> None:
        self.tag = tag
        self.name = name
        self.element = element
        self.node = node
        """The in-file class, method or function (not compared)."""
        self.items = items
        """For a container: each item, in order, when known (not compared)."""
        self.owner = owner
        """For a method: its class (not compared)."""
        self.scope = scope
        """For a nested function: the scope it is defined in (not compared)."""
        self.shift = shift
        """For a forwarder: the index of the first argument it passes on (after the function)."""
        self.index = index
        """For a TE instance whose ``forward`` is defined in the file: the flag's positional
        index in that signature (None: keyword only, or not a parameter)."""
        self.rejects = rejects
        """For a TE instance whose ``forward`` is defined in the file: it takes no flag."""
        self.origin = origin
        """For an unknown value: where it comes from, when an import says
        (``provenance.Foreign`` or ``provenance.LookAlike``; not compared)."""
        self.takes = takes
        """For a TE instance whose ``forward`` is defined in the file and takes the flag
        keyword-only, without ``*args``: how many positional arguments it takes."""

    def _key(self) -> tuple[object, ...]:
        return (self.tag, self.name, self.element, self.shift, self.index, self.rejects, self.takes)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Kind:
            return NotImplemented
        return self is other or self._key() == other._key()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"Kind({shown})"


NOT_TE = Kind(Tag.NOT_TE)
UNKNOWN = Kind(Tag.UNKNOWN)
PENDING = Kind(Tag.PENDING)
GRAPHED = Kind(Tag.GRAPHED)

_NON_TE_VALUES = frozenset({Tag.LOCAL_INSTANCE, Tag.METHOD, Tag.FUNCTION, Tag.NOT_TE})


def _outside_te(kind: Kind) -> bool:
    """A dotted name imported from a package that is not TE."""
    return kind.tag is Tag.QUALNAME and not kind.name.startswith("transformer_engine")


def te_instance(cls: str) -> Kind:
    return Kind(Tag.TE_INSTANCE, cls)


def unknown(why: str) -> Kind:
    return Kind(Tag.UNKNOWN, why)


def container(elements: Sequence[Kind], items: bool = True) -> Kind:
    """A container holding ``elements`` (its items, in order, when ``items``)."""
    element = join(elements) if elements else None
    return Kind(Tag.CONTAINER, element=element, items=tuple(elements) if items else None)


def join(kinds: Sequence[Kind]) -> Kind:
    """Merge the kinds of several alternatives: anything that may be TE stays TE.

    A plain non-TE alternative (the ``None`` placeholder of ``x = None ... x = te.Linear()``)
    does not hide the others; a pending one (a cycle) contributes nothing.
    """
    if len(kinds) == 1 and kinds[0].tag is not Tag.PENDING:
        return kinds[0]
    kinds = [k for k in kinds if k.tag is not Tag.PENDING]
    if not kinds:
        return PENDING
    live = [k for k in kinds if k != NOT_TE] or kinds
    first = live[0]
    if all(k == first for k in live):
        return first
    te = [k for k in live if k.tag is Tag.TE_INSTANCE]
    if te:
        # Keep the class only when every alternative is that class: TEM002 reads the flag's
        # position from it.
        if len(te) == len(live) and len({(k.name, k.index, k.rejects, k.takes) for k in te}) == 1:
            if all(k.node is te[0].node for k in te):
                return te[0]
            # Two in-file subclasses with one layout: the layout holds, not one class's name.
            return Kind(Tag.TE_INSTANCE, te[0].name, index=te[0].index, takes=te[0].takes)
        return Kind(Tag.TE_INSTANCE, "")
    for tag in (Tag.TE_CLASS, Tag.UNBOUND, Tag.REJECT):
        for k in live:
            if k.tag is tag:
                return k
    if all(k.tag is Tag.CONTAINER for k in live):
        elements = [k.element for k in live if k.element is not None]
        return Kind(Tag.CONTAINER, element=join(elements) if elements else None)
    if all(k.tag in _NON_TE_VALUES for k in live):
        return NOT_TE  # in-file classes' instances, methods, functions: none is TE
    if all(k.tag in _NON_TE_VALUES or _outside_te(k) for k in live):
        # A choice between imported functions (or them and in-file ones): none is TE.
        return NOT_TE
    origins = [k for k in live if k.tag is Tag.UNKNOWN and k.origin is not None]
    if origins and all(k.tag in _NON_TE_VALUES or _outside_te(k) or k.origin for k in live):
        return origins[0]  # foreign values (and non-TE ones): where the first comes from
    for k in live:
        if k.tag is Tag.CONTAINER:
            return k
    return UNKNOWN
