"""The index of a run over a project: module names of its files, what they export, and which
files a name looked up may reach (``analysis.run`` drives the run with them)."""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable, Collection, Mapping, Sequence

try:  # the module behind hashlib.blake2b, without loading OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules.analysis.exports import matched
from lint_rules.analysis.prefilter import ON, Gates
from lint_rules.analysis.records import Outcome
from lint_rules.slotted import TYPE_CHECKING  # not `typing`'s: it is not imported at run time

if TYPE_CHECKING:
    from typing import Any

    from lint_rules.analysis.exports import Export
    from lint_rules.analysis.runfacts import RunFacts

Index = dict[str, "Export"]


def used_digest(names: Sequence[str], index: Mapping[str, Export], keys: list[str]) -> str:
    """What ``names`` read from the index (``keys``: its keys, sorted): "" when nothing."""
    if not keys:
        return ""
    hits = matched(names, keys)
    if not hits:
        return ""
    text = repr([(key, tuple(index[key])) for key in hits])
    return blake2b(text.encode("utf-8", "backslashreplace"), digest_size=16).hexdigest()


def run_facts(outcomes: Sequence[Outcome | None], places: Sequence[int]) -> RunFacts:
    """The lifecycle facts every analysed file of the run shares."""
    from lint_rules.analysis.runfacts import RunFacts

    found = RunFacts()
    for place in places:
        outcome = outcomes[place]
        if (
            outcome is not None
            and outcome.project is not None
            and outcome.project.facts is not None
        ):
            found.add(outcome.path, outcome.project.facts)
    return found


class Modules:
    """The module names of the run's files, from their paths (``roots``: the run's paths)."""

    def __init__(self, roots: Sequence[str]) -> None:
        folders = [os.path.abspath(r) for r in roots if os.path.isdir(r)]
        if not roots or any(not os.path.isdir(r) for r in roots):
            folders.append(os.path.abspath(os.curdir))  # files named one by one (pre-commit)
        self.roots = list(dict.fromkeys(folders))
        self._packages: dict[str, bool] = {}

    def _is_package(self, folder: str) -> bool:
        known = self._packages.get(folder)
        if known is None:
            known = self._packages[folder] = os.path.isfile(os.path.join(folder, "__init__.py"))
        return known

    def names(self, path: str) -> tuple[list[str], str | None]:
        """The dotted names the file's module goes by, and its package (relative imports)."""
        full = os.path.abspath(path)
        folder, base = os.path.split(full)
        stem = base.rsplit(".", 1)[0]
        leaf = [] if stem == "__init__" else [stem]
        chain: list[str] = []
        up = folder
        while self._is_package(up) and os.path.dirname(up) != up:
            chain.insert(0, os.path.basename(up))
            up = os.path.dirname(up)
        found = [".".join(chain + leaf)] if chain or leaf else []
        package = ".".join(chain) if chain else None
        for root in self.roots:
            if not full.startswith(root + os.sep):
                continue
            rel = os.path.relpath(folder, root)
            folders = [] if rel == os.curdir else rel.split(os.sep)
            found.append(".".join(folders + leaf))
            found.append(".".join([os.path.basename(root), *folders, *leaf]))
            if package is None:  # a namespace package (PEP 420): its folders below the root
                package = ".".join([os.path.basename(root), *folders])
        unique = [n for n in dict.fromkeys(found) if all(p.isidentifier() for p in n.split("."))]
        if package is not None and not all(p.isidentifier() for p in package.split(".")):
            package = None
        return unique, package


def build_index(outcomes: list[Outcome | None], names: dict[int, list[str]]) -> Index:
    """Every file's exports under each of its module's names; a name two files export
    differently is left out (not resolved, as without an index)."""
    index: Index = {}
    clashes: set[str] = set()
    for place, modules in names.items():
        outcome = outcomes[place]
        for name, export in outcome.project.exports if outcome and outcome.project else ():
            for module in modules:
                key = f"{module}.{name}"
                if index.setdefault(key, export) != export:
                    clashes.add(key)
    for key in clashes:
        del index[key]
    return index


def reaches(name: str, modules: set[str], ordered: list[str]) -> bool:
    """Whether a name a file looked up may be a module of the run or in one (``ordered``:
    ``modules`` sorted): ``pkg``, ``pkg.layers`` or ``pkg.layers.X`` for ``pkg/layers.py``."""
    parts = name.split(".")
    if any(".".join(parts[:end]) in modules for end in range(1, len(parts) + 1)):
        return True
    at = bisect_left(ordered, name + ".")
    return at < len(ordered) and ordered[at].startswith(name + ".")


def needed(
    waiting: Mapping[int, Any],
    module_names: Mapping[int, list[str]],
    outcomes: Sequence[Outcome | None],
    index: Mapping[str, Export],
    text_of: Callable[[int], str],
    gates: Gates = ON,
) -> list[int]:
    """The places in ``waiting`` (``__init__.py`` that fail the prefilter, ``text_of`` their
    text) whose entries a name looked up by ``outcomes`` may read, in order. An
    ``__init__.py`` that fails the prefilter only passes on what the index holds, under a
    name its text spells (or through ``import *``); it is read for a name looked up in its
    package (``pkg.MyLinear``: its text spells ``MyLinear``) and, for a name that is a
    package above it (``import pkg`` reaches ``pkg.sub.MyLinear``, ``matched``), when its text
    spells a name the index holds. None while the index is empty or nothing waits."""
    if not index or not waiting:
        return []
    held = {key.rpartition(".")[2] for key in index}
    parents: dict[str, set[str]] = {}
    whole: set[str] = set()
    for outcome in outcomes:
        for name in outcome.project.names if outcome and outcome.project else ():
            parent, _, last = name.rpartition(".")
            parents.setdefault(parent, set()).add(last)
            whole.add(name)

    def reads(place: int) -> bool:
        spelt: set[str] = set()
        for module in module_names[place]:
            spelt.update(parents.get(module, ()))
            parts = module.split(".")
            if any(".".join(parts[:end]) in whole for end in range(1, len(parts) + 1)):
                spelt.update(held)
        if not spelt:
            return False
        text = text_of(place)
        return gates.spells_any(text, ("*", *spelt))

    return sorted(p for p in waiting if reads(p))


def upstream_first(
    places: Sequence[int],
    outcomes: Sequence[Outcome | None],
    module_names: Mapping[int, list[str]],
    index: Mapping[str, Export],
    packages: Collection[int] = (),
) -> list[int]:
    """The places of ``places`` (files to analyse again) whose names read no index entry that
    another of them exports (``packages``: those that are a package's ``__init__.py``, which
    may export any name directly in its package), in order: analysed first, their new
    exports reach the others before those are analysed again, once instead of once per link
    of a chain. Every place when each reads another (a cycle)."""
    owners: dict[str, set[int]] = {}
    inside: dict[str, set[int]] = {}  # a package's module name -> its `__init__.py`
    for place in places:
        outcome = outcomes[place]
        for name, _ in outcome.project.exports if outcome and outcome.project else ():
            for module in module_names[place]:
                key = f"{module}.{name}"
                if key in index:
                    owners.setdefault(key, set()).add(place)
        if place in packages:
            for module in module_names[place]:
                inside.setdefault(module, set()).add(place)
    if not owners and not inside:
        return list(places)
    keys = sorted(owners)
    ready = []
    for place in places:
        outcome = outcomes[place]
        names = outcome.project.names if outcome and outcome.project else ()
        waits = {owner for key in matched(names, keys) for owner in owners[key]}
        for name in names:
            waits.update(inside.get(name, ()))
            waits.update(inside.get(name.rpartition(".")[0], ()))
        waits.discard(place)
        if not waits:
            ready.append(place)
    return ready or list(places)
