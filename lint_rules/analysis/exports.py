"""What a file of a CLI run exports to the others (``project``): plain data, light to import,
so that the result cache reads it back without loading the analysis."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from lint_rules.slotted import NamedTuple

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)


class Export(NamedTuple):
    """A module-level name of a project file that is a TE subclass, a TE module factory, or a
    function that passes its parameter on to TE as the flag (a forwarder, ``forwarders``).

    Plain data (a tuple), so that it crosses to worker processes and into the result cache.
    """

    kind: str
    """``"class"`` (a TE subclass), ``"factory"`` (a function that returns a TE module) or
    ``"forwarder"``."""
    label: str
    """The class messages name (for a factory, its product's class if defined in the project;
    for a forwarder, where it passes the flag, as messages name a callee)."""
    cls: str
    """The TE class whose ``forward`` runs ("" when only the layout is known)."""
    index: int | None  # type: ignore[assignment]  # (shadows tuple.index on purpose)
    """The flag's positional index read off a project ``forward`` (else the TE class's); a
    forwarder's parameter's position."""
    rejects: bool
    """A project ``forward`` that takes no flag."""
    takes: int | None
    """A project ``forward`` that takes the flag keyword-only: its positional arguments."""
    te_base: str = ""
    """A class: the TE module class it derives from."""
    forward: bool = False
    """A class: it (or a project ancestor) defines ``forward``."""
    stateful: str = ""
    """A class: the attribute its methods pass to TE as the flag (a stateful TE wrapper)."""
    param: str = ""
    """A forwarder: the parameter it passes on to TE as the flag."""


def matched(names: Iterable[str], keys: list[str]) -> list[str]:
    """The index keys (``keys``, sorted) that ``names`` reach: a name itself, or every key
    under it when it is a module (``import pkg.layers as L`` reaches ``pkg.layers.X``)."""
    found: set[str] = set()
    count = len(keys)
    for name in names:
        at = bisect_left(keys, name)
        if at < count and keys[at] == name:
            found.add(name)
            at += 1
        if at < count:  # (the keys under it follow, sorted: most names have none)
            under = name + "."
            while at < count and keys[at].startswith(under):
                found.add(keys[at])
                at += 1
    return sorted(found)
