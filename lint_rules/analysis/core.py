"""One file's analysis: the pieces (symbols, resolver, tracker, fixes), the walk, the findings."""

from __future__ import annotations

import ast
import functools
import unicodedata
from collections.abc import Callable, Iterable

from lint_rules.analysis import checks
from lint_rules.analysis.facts import collect
from lint_rules.analysis.fixes import FixBuilder, NoFixes
from lint_rules.analysis.forwarders import Forwarders
from lint_rules.analysis.gradient import Gradients
from lint_rules.analysis.lifecycle import Lifecycle
from lint_rules.analysis.prefilter import ON, Gates
from lint_rules.analysis.project import Project
from lint_rules.analysis.resolve import Resolver
from lint_rules.analysis.runfacts import RunFacts
from lint_rules.analysis.sites import FlagCall, flag_call
from lint_rules.analysis.stateful import StateFlags
from lint_rules.analysis.symbols import ModuleSymbols, Scope
from lint_rules.analysis.tracking import Tracker
from lint_rules.analysis.walk import (
    MODULE_CONTEXT,
    Context,
    Walker,
    loop_bound_names,
    loop_runs_backward,
)
from lint_rules.findings import Finding, ast_lines
from lint_rules.settings import Settings
from lint_rules.slotted import replace
from lint_rules.te import facts_for


class Analysis:
    """Run every rule over one module tree; ``fixes`` builds edits (faces that apply them)."""

    def __init__(
        self,
        tree: ast.Module,
        settings: Settings,
        source: str | None,
        fixes: bool = True,
        project: Project | None = None,
        gates: Gates = ON,
    ) -> None:
        self.tree = tree
        self.gates = gates
        """The text-level shortcuts (``prefilter``): every piece asks this object."""
        self.source = source
        self.settings = settings
        self._lines: list[str] | None = None
        # A positional flag is looked for only where a TE module of known class can be
        # resolved (the prefilter's test); a file with other than ASCII text may spell a
        # name with characters that normalise to it, so there any mention of TE counts.
        self._texts: list[tuple[str, Callable[[], list[str]] | None]] = []
        """The text searched for what can hold a finding, with its lines; for other than ASCII
        text also as Python reads identifiers (NFKC: ``ｉs_first_microbatch`` is the flag)."""
        if source is not None:
            self._texts.append((source, None))  # its lines: self.lines() (no bound method kept)
            if not source.isascii():
                read = unicodedata.normalize("NFKC", source)
                if read != source:  # (NFKC keeps every line break: the same line numbers)
                    self._texts.append((read, functools.partial(ast_lines, read)))
        self.mentions_te = source is None or any(gates.te_file(text) for text, _ in self._texts)
        self.project = project
        self._symbols: ModuleSymbols | None = None
        if project is not None and not self.mentions_te:
            # It may import a TE subclass or factory of another file of the run (``project``):
            # then a positional flag is looked for as in a file that imports TE.
            self._symbols = ModuleSymbols(tree, source, settings.import_helpers, gates)
            self.mentions_te = project.start(self._symbols)
        self._fixes = fixes
        self._pending = True
        """No call has been looked at yet: symbols, resolver, tracker and fixes not made."""
        self.findings: list[Finding] = []
        self.rules: list[checks.Rule] = []
        """One object per code (``checks.RULES``), made with the other pieces."""
        self.marks: list[int] | None = None
        """The lines that can hold a call a rule looks at (``prefilter.interesting_lines``);
        None without a source or with the gates off (every line may)."""
        self._loops: dict[int, tuple[set[str], bool]] = {}
        self.state_flags = StateFlags()
        self._sites: list[FlagCall] = []
        """Every call the rules were handed, in the walk's order (``rejudge`` hands them on
        again)."""
        """Where the file's classes pass their own attribute to TE as the flag (TEM005)."""

    def _prepare(self) -> None:
        """What the rules ask: the file's symbols, resolution, tracking and fix building."""
        self._pending = False
        helpers = self.settings.import_helpers
        self.symbols = self._symbols or ModuleSymbols(self.tree, self.source, helpers, self.gates)
        self.resolver = Resolver(self.symbols, self.project, facts_for(self.settings.te_version))
        settings = self.settings
        guards = tuple(dict.fromkeys((*settings.guard_functions, settings.guard_import)))
        self.gradients = Gradients(self.resolver, self.tree)
        self.tracker = Tracker(self.symbols, guards, settings.tracked_functions)
        run = self.project.lifecycle if self.project is not None else None
        self.lifecycle = Lifecycle(self.tree, run, self.source, self.gates)
        self.forwarders = Forwarders()
        self.rules = [rule(self) for rule in checks.RULES]
        self.fixes = self._fix_builder()

    def _fix_builder(self) -> FixBuilder | NoFixes:
        if not self._fixes:
            return NoFixes()
        classes = self.resolver.classes
        fixes = FixBuilder(
            self.symbols, self.settings, self.source, classes, self.tree, self._lines
        )
        fixes.guard_missing = self.project.guard_missing if self.project is not None else None
        previous = getattr(self, "fixes", None)
        if isinstance(previous, FixBuilder):  # `rejudge`: TEM005's fixes stand, with their reads
            fixes.reads.update(previous.reads)
        return fixes

    def run(self) -> list[Finding]:
        marks = None
        if self.source is not None:
            te, gates = self.mentions_te, self.gates
            found = [gates.interesting_lines(t, ls or self.lines, te) for t, ls in self._texts]
            if None not in found:
                marks = _merged(found)  # type: ignore[arg-type]
                self.marks = marks
                if not marks:
                    return self.findings  # no line can hold a call a rule looks at
        positional = self.gates.positional(self.mentions_te)
        walker = Walker(self._on_call, marks, positional)
        walker.walk_body(self.tree.body, MODULE_CONTEXT)
        return self._finish()

    def rejudge(self, run: RunFacts) -> list[Finding]:
        """The findings again, now that the run's lifecycle facts are ``run`` (a first pass
        judged with none): the calls the walk found are handed to new rules, with a new
        lifecycle and new fixes. Nothing is walked or resolved again: what the walk and the
        resolver found does not depend on the lifecycle facts, and neither does TEM005."""
        if self._pending:
            return self.findings
        self.lifecycle = Lifecycle(self.tree, run, self.source, self.gates)
        if self.project is not None:
            self.project.lifecycle = run
        # TEM005 judges no value: its findings stand as they are (the stateful-wrapper check
        # walks every method of the file's modules, for nothing).
        self.findings = [f for f in self.findings if f.code == checks.SharedModule.code]
        self.forwarders = Forwarders()
        self.rules = [rule(self) for rule in checks.RULES if rule is not checks.SharedModule]
        self.fixes = self._fix_builder()
        for site in self._sites:
            for rule in self.rules:
                rule.visit(site)
        findings = self._finish()
        if self.project is not None:
            self.project.keys = tuple(sorted(self.lifecycle.keys))
        return findings

    def _finish(self) -> list[Finding]:
        if not self._pending:
            by_code = {rule.code: rule for rule in self.rules}
            self.forwarders.finish(
                self,
                lambda f: by_code["TEM001" if f.keyword is not None else "TEM002"].forwarded(f),
            )
            for rule in self.rules:
                rule.finish()
        self._share_fixes()
        if not self._pending:
            self.findings = self.fixes.combine(self.findings)
        self.findings.sort(key=lambda f: f.sort_key)
        return self.findings

    def export(self) -> None:
        """Tell the run (``project``) what this file exports, once its findings are known:
        its TE subclasses and factories, and the lifecycle facts it shares (``facts``)."""
        project = self.project
        if project is not None:
            if self._pending:
                self._prepare()
            project.collect(self.resolver, self.state_flags)
            for name, export in self.forwarders.exports(self.symbols.functions).items():
                project.exports.setdefault(name, export)  # a forwarder of the file, by name
            lines = self.gates.state_lines(self.source) if self.source is not None else None
            project.facts = collect(self.tree, lines, self.source, self.gates)
            project.keys = tuple(sorted(self.lifecycle.keys))

    def close(self) -> None:
        """Break the reference cycles (the resolver and its ``Classes``, the rules and this),
        so that the tree and everything resolved from it are freed as soon as the findings
        are returned, not when the cyclic collector next runs."""
        resolver = getattr(self, "resolver", None)  # not made when nothing was looked at
        if resolver is not None:
            resolver.classes = None
        self.rules = []  # each rule knows this analysis

    def lines(self) -> list[str]:
        """The source's lines as ``ast`` numbers them (from 1), split once."""
        if self._lines is None:
            self._lines = ast_lines(self.source or "")
        return self._lines

    @property
    def pending(self) -> bool:
        """No call has been looked at: nothing was resolved, and no rule was made."""
        return self._pending

    def _on_call(self, call: ast.Call, ctx: Context) -> None:
        if self._pending:
            self._prepare()  # the first call the walk finds: only now is anything resolved
        site = flag_call(self, call, ctx)
        if site is not None:
            self._sites.append(site)
            self.state_flags.note(site)
            for rule in self.rules:
                rule.visit(site)

    def scope_of(self, ctx: Context) -> Scope | None:
        """The (lazily built) scope of the function the walk is in, chained to its parents."""
        if ctx.scope is None:
            return None
        node, outer, method_class = ctx.scope
        cached = self.symbols.cached_scope(node)
        if cached is not None:
            return cached
        parent = self.scope_of(outer) if outer is not None else None
        return self.symbols.scope(node, parent, method_class)

    def loop_facts(self, loop: ast.AST) -> tuple[set[str], bool]:
        """The names a loop binds and whether it runs backward, computed once per loop."""
        facts = self._loops.get(id(loop))
        if facts is None:
            facts = self._loops[id(loop)] = (loop_bound_names(loop), loop_runs_backward(loop))
        return facts

    def _share_fixes(self) -> None:
        """A value that TEM005 reports gets TEM005's fix (None) under every code.

        A guard does not make a module called twice safe, and one value must have one fix.
        """
        shared = {(f.line, f.col): f.fix for f in self.findings if f.code == "TEM005"}
        if shared:
            self.findings = [
                replace(f, fix=shared[(f.line, f.col)])
                if f.code != "TEM005" and (f.line, f.col) in shared
                else f
                for f in self.findings
            ]


def _merged(numbers: Iterable[list[int]]) -> list[int]:
    """Ascending line numbers from several ascending lists, each once."""
    lists = list(numbers)
    if len(lists) == 1:
        return lists[0]
    return sorted(set().union(*lists))
