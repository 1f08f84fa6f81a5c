"""Where a callee comes from, when it is not TE by evidence: typed, one class per family.

The default reports a call only when its callee is TE (or may be, by evidence: a TE import
on the way); every other callee is quiet unless the user asks for them
(``unresolved = "report"``, docs/rules.md). What the analysis knows about such a callee is
kept as a value, so that a strict user's message says why it is not resolved:

- ``Foreign``: a class or a call result of a package that is not TE, imported from outside the
  file (``from megatron.training import get_model``);
- ``LookAlike``: a package that copies TE's API, listed in ``te.LOOKALIKES`` with the reason
  read off its source (Intel Gaudi's TE port, NVIDIA Kitchen);
- anything else is plain ``Unknown`` (the resolver's ``unknown``).

Aliases, conditional choices between imported functions and wrappers of them take the
provenance of what they alias (``resolve``); a CUDA-graphed callable is not a module at all.
"""

from __future__ import annotations

from lint_rules.slotted import Frozen
from lint_rules.te import LOOKALIKES, TE_ROOT, LookAlikeFamily

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Union


class Foreign(Frozen):
    """A value of a package that is not TE: ``qualname`` is the class or function it comes
    from (``megatron.core.foo.Runner``)."""

    __slots__ = ("qualname",)
    qualname: str

    def __init__(
        self,
        qualname: str,
    ) -> None:
        self._fill(locals())

    @property
    def package(self) -> str:
        return self.qualname.split(".", 1)[0]

    def describe(self) -> str:
        return f"from `{self.package}`, not TE"


class LookAlike(Frozen):
    """A value of a known TE look-alike package (``family`` says which, and why it is not
    treated as TE)."""

    __slots__ = ("qualname", "family")
    qualname: str
    family: LookAlikeFamily

    def __init__(
        self,
        qualname: str,
        family: LookAlikeFamily,
    ) -> None:
        self._fill(locals())

    def describe(self) -> str:
        return f"a TE look-alike: {self.family.name}"


if TYPE_CHECKING:
    Origin = Union[Foreign, LookAlike]
else:  # the alias is the type checker's: at run time, its classes
    Origin = (Foreign, LookAlike)
"""What is known of a value that is not TE by evidence but comes from an import."""


def lookalike_family(qualname: str) -> LookAlikeFamily | None:
    """The known look-alike ``qualname`` belongs to, if any (the longest package prefix)."""
    best: LookAlikeFamily | None = None
    for package, family in LOOKALIKES.items():
        inside = qualname == package or qualname.startswith(package + ".")
        if inside and (best is None or len(package) > len(best.package)):
            best = family
    return best


def origin_of(qualname: str) -> Origin | None:
    """The provenance of a dotted name imported from outside the file: None for TE (and for
    an empty name), a ``LookAlike`` for a known look-alike, else ``Foreign``."""
    if not qualname or qualname == TE_ROOT or qualname.startswith(TE_ROOT + "."):
        return None
    family = lookalike_family(qualname)
    if family is not None:
        return LookAlike(qualname, family)
    return Foreign(qualname)
