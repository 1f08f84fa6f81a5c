"""Cross-file resolution: what the other files of a run export, for one file's analysis.

When the CLI checks several files, each file's analysis gets a ``Project``: its module's
package (for relative imports) and the run's index, ``qualname -> Export``, of the TE
subclasses and the factories of TE modules that the other files define at module level. An
imported name found in the index resolves as the in-file class or function would: an instance
is a TE module of the class's layout (its own ``forward``'s, or its TE base's), named after the
class, ``X.forward`` is the unbound forward of its TE base, a subclass of it is a TE subclass.
Anything else imported stays what it is without an index (a base defined outside the file, a
value not resolved).

The analysis fills the ``Project`` in turn: what this file exports (``exports``, computed by
the same ``Classes`` and ``Resolver`` as every in-file answer) and the project names its
resolution looked up (``names``), so that the CLI knows when a file must be analysed again
(an answer it used changed) and what its cached result depends on (``used``). Without a
``Project`` (flake8, one file, stdin) nothing here runs.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from lint_rules.analysis.exports import Export, matched
from lint_rules.analysis.facts import EMPTY, FileFacts
from lint_rules.analysis.kinds import (
    NOT_TE,
    UNKNOWN,
    Kind,
    ProjectClass,
    ProjectFunction,
    ProjectKind,
    TEInstance,
    TEUnbound,
)
from lint_rules.analysis.nodes import statements
from lint_rules.analysis.runfacts import RunFacts
from lint_rules.te import TE_ROOT

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.core import Analysis
    from lint_rules.analysis.resolve import Resolver
    from lint_rules.analysis.stateful import StateFlags
    from lint_rules.analysis.symbols import ModuleSymbols


"""The ``Kind`` tags of an imported export (``name``: its absolute qualname)."""


def absolute(qual: str, package: str | None) -> str | None:
    """``..layers.X`` imported in a module of package ``package`` (``a.b``): ``a.layers.X``."""
    if not qual.startswith("."):
        return qual
    rest = qual.lstrip(".")
    level = len(qual) - len(rest)
    if package is None:
        return None
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):
        return None  # above the top-level package: an ImportError
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, rest]) if rest else ".".join(base)


class Project:
    """One file's view of the run (``package``, ``index``) and what its analysis found."""

    def __init__(
        self,
        package: str | None,
        index: Mapping[str, Export],
        lifecycle: RunFacts | None = None,
    ) -> None:
        self.package = package
        self.index = index
        self.lifecycle = lifecycle if lifecycle is not None else RunFacts()
        """The lifecycle facts of the other files of the run (empty in its first pass)."""
        self.facts: FileFacts = EMPTY
        """What this file shares with the others: writes and calls of state (``facts``)."""
        self.keys: tuple[str, ...] = ()
        """What its verdicts read from the run (``lifecycle_digest``)."""
        self.exports: dict[str, Export] = {}
        """Module-level names of this file that are TE subclasses or factories."""
        self.names: set[str] = set()
        """Absolute qualnames outside TE that the file imports at module level (when it does
        not import TE) or that its resolution looked up."""
        self._labels: dict[str, ast.ClassDef] = {}
        self.keep = False
        """Set by the run for a file's first pass: keep its analysis if its verdicts read
        the run's lifecycle facts (``kept``), to judge it again once they are known."""
        self.kept: Analysis | None = None
        self.source: object = None
        """The file as the run read it, with ``kept`` (``fileio.Source``)."""
        self.guard_missing: str | None = None
        """A file of the run that is ``guard-import``'s module and never spells the guard's
        name: a guard fix that imports it is unsafe (``FixBuilder.guard_missing``)."""

    def start(self, symbols: ModuleSymbols) -> bool:
        """For a file that does not import TE: note its module-level imports, and say whether
        a positional flag may reach a TE module (it imports something the index holds). A file
        that imports TE resolves every call that may pass a positional flag, so its lookups
        say what it uses; in another file such calls are resolved only when an import reaches
        the index."""
        imported = [*symbols.star_modules]
        for choices in symbols.alias_choices.values():
            imported.extend(choices)
        names = {a for a in (absolute(q, self.package) for q in imported) if a is not None}
        names = {n for n in names if not _is_te(n)}
        self.names.update(names)
        return bool(self.index) and bool(matched(names, sorted(self.index)))

    def kind(self, qual: str) -> ProjectKind | None:
        """An imported qualname's meaning when the index holds it (else None)."""
        name = absolute(qual, self.package)
        if name is None or _is_te(name):
            return None
        self.names.add(name)
        export = self.index.get(name)
        if export is None or export.kind == "forwarder":
            return None
        return ProjectFunction(name) if export.kind == "factory" else ProjectClass(name)

    def forwarder(self, qual: str) -> Export | None:
        """An imported function of another file that passes its parameter on to TE as the
        flag (``forwarders``), when the index holds it as one."""
        name = absolute(qual, self.package)
        if name is None or _is_te(name):
            return None
        self.names.add(name)
        export = self.index.get(name)
        return export if export is not None and export.kind == "forwarder" else None

    def label_node(self, qual: str, label: str) -> ast.ClassDef | None:
        """A stand-in class node that names a project class in messages (one per class, so
        that ``join`` tells two classes apart as it does in-file classes)."""
        if not label:
            return None
        node = self._labels.get(qual)
        if node is None:
            node = ast.ClassDef(name=label, bases=[], keywords=[], body=[], decorator_list=[])
            self._labels[qual] = node
        return node

    def instance(self, qual: str, node: ast.ClassDef | None = None) -> TEInstance:
        """An instance of a project class (a factory's product): the TE module it is, named
        after ``node`` (an in-file subclass) or else the project class."""
        export = self.index[qual]
        if node is None:
            node = self.label_node(qual, export.label)
        return TEInstance(export.cls, node, export.index, export.rejects, export.takes)

    def stateful(self, node: ast.ClassDef) -> str:
        """For a stand-in class node (``label_node``): the attribute the project class passes
        to TE as the flag, when it is a stateful TE wrapper (else "")."""
        for qual, label in self._labels.items():
            if label is node:
                return self.index[qual].stateful
        return ""

    def te_base(self, qual: str) -> str:
        return self.index[qual].te_base

    def defines_forward(self, qual: str) -> bool:
        return self.index[qual].forward

    def class_attribute(self, qual: str, attr: str) -> Kind:
        """``X.attr`` on a project class, as ``Classes.class_attribute`` answers in-file."""
        export = self.index[qual]
        if export.kind == "factory":
            return UNKNOWN
        if attr == "forward":
            return NOT_TE if export.forward else TEUnbound(export.te_base)
        return UNKNOWN

    def collect(self, resolver: Resolver, flags: StateFlags | None = None) -> None:
        """What this file exports: module-level TE subclasses, factories of TE modules (a
        function whose text never spells ``yield`` is told no generator without walking it:
        ``ModuleSymbols.may_yield``), and names it imports from the index (a package's
        ``__init__`` re-exporting them). ``flags``: the file's ``StateFlags`` (a TE subclass
        that passes its own attribute as the flag is exported as stateful)."""
        symbols = resolver.symbols
        classes = resolver.classes
        for name, node in symbols.classes.items():
            te = classes.te_base(node)
            if te:
                forward = classes.defines(node, "forward")
                value = classes.te_forward(te, classes.lineage(node), node)  # its instance
                export = _export("class", value, name, te, forward)
                flag = flags.of(symbols, node) if flags is not None else None
                if flag is not None:
                    export = export._replace(stateful=flag.attr)
                self.exports[name] = export
        for name, function in symbols.functions.items():
            if not _may_return_module(function):
                continue
            kind = resolver.returns(function, None, None)
            if isinstance(kind, TEInstance):
                label = kind.node.name if kind.node is not None else ""
                self.exports[name] = _export("factory", kind, label)
        for name, choices in symbols.alias_choices.items():
            target = absolute(choices[0], self.package) if len(choices) == 1 else None
            if target is not None and target in self.index and name not in self.exports:
                self.exports[name] = self.index[target]
        for module in symbols.star_modules:  # `from .layers import *`: its public names
            target = absolute(module, self.package)
            if target is None:
                continue
            prefix = target + "."
            for key in matched([target], sorted(self.index)):
                name = key[len(prefix) :]
                if "." not in name and not name.startswith("_") and name not in self.exports:
                    self.exports[name] = self.index[key]


def _export(
    kind: str, value: TEInstance, label: str, te: str = "", forward: bool = False
) -> Export:
    return Export(kind, label, value.name, value.index, value.rejects, value.takes, te, forward)


_MAY_BE_MODULE = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Call,
    ast.IfExp,
    ast.NamedExpr,
    ast.BinOp,
)
"""The expressions ``Resolver.resolve`` can find a TE module in (a literal, a container, a
comparison... is never one)."""


def _may_return_module(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a module-level function has a ``return`` whose value may be a TE module."""
    return any(
        type(stmt) is ast.Return and isinstance(stmt.value, _MAY_BE_MODULE)  # type: ignore[attr-defined]
        for stmt in statements(function.body)
    )


def _is_te(name: str) -> bool:
    return name == TE_ROOT or name.startswith(TE_ROOT + ".")
