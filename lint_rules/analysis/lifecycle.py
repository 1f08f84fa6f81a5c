"""Is the flag maintained? The verdict on a value that reaches a TE module, from its whole life.

At each call TE needs one answer: is this the first microbatch since the weights last changed?
A value is *maintained* when it gives that answer in every run (uninterrupted or resumed, with
FP8 or without), or when the code around the call drives the sequence itself. ``Lifecycle``
follows a value to its sources (``Source``), and a state source (an attribute or a global) to
its writes and re-arms in the files seen (``facts``), and returns a ``Judgement``: the verdict
and the evidence a user reads to see why. Only values the syntactic tracker (``tracking``) does
not already clear are judged.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable, Sequence

from lint_rules.analysis import builds, prefilter
from lint_rules.analysis.counters import file_classes
from lint_rules.analysis.facts import (
    MODE_ATTRIBUTES,
    CallFact,
    FileFacts,
    collect,
)
from lint_rules.analysis.lifenotes import (
    called_by_forward,
    describe,
    first_of_each,
    is_mode,
    returned_state,
    unknown_note,
)
from lint_rules.analysis.nodes import is_none, target_names
from lint_rules.analysis.runfacts import RunFacts
from lint_rules.analysis.runfacts import last_name as _last
from lint_rules.analysis.runfacts import re_arms as _re_arms
from lint_rules.analysis.steps import BAD, Reach, Steps, best, runs_as_forward
from lint_rules.analysis.walk import loop_runs_backward, loop_steps_optimizer
from lint_rules.findings import Evidence, ast_lines
from lint_rules.slotted import NamedTuple

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.scopes import Scope
    from lint_rules.analysis.walk import Context


class Verdict(enum.Enum):
    """The verdicts, worst last (a value with several sources takes its worst)."""

    MAINTAINED = "maintained"
    UNVERIFIED = "unverified"
    CONDITIONAL = "conditional"
    STALE = "stale"


RANK = {v: n for n, v in enumerate(Verdict)}


class Judgement(NamedTuple):
    verdict: Verdict
    evidence: tuple[Evidence, ...]
    condition: str | None = None
    """For ``CONDITIONAL``: the condition the re-arm runs under, as written."""
    provisional: bool = False
    """The verdict rests on files this run does not see (one file checked alone, a state a
    project's other files may re-arm): its fix is unsafe."""


MAINTAINED = Judgement(Verdict.MAINTAINED, ())


class Source(NamedTuple):
    """Where a value comes from: a verdict already known, or a state to judge (``key``)."""

    judgement: Judgement | None
    key: str = ""
    node: ast.AST | None = None


def _line(node: ast.AST | None) -> int:
    return getattr(node, "lineno", 0) if node is not None else 0


def worst(judgements: Iterable[Judgement]) -> Judgement:
    found = MAINTAINED
    evidence: list[Evidence] = []
    judged = list(judgements)
    for judgement in judged:
        if RANK[judgement.verdict] > RANK[found.verdict]:
            found = judgement
        if judgement.verdict is not Verdict.MAINTAINED:
            evidence.extend(e for e in judgement.evidence if e not in evidence)
    if found.verdict is Verdict.MAINTAINED:
        return MAINTAINED
    provisional = any(j.provisional for j in judged if j.verdict is not Verdict.MAINTAINED)
    return Judgement(found.verdict, tuple(evidence[:8]), found.condition, provisional)


class Lifecycle:
    """The verdicts of one file's values. ``run``: the facts of the other files of a CLI run
    (None for a face that sees one file: flake8, the libcst runner, one path, stdin)."""

    def __init__(
        self,
        tree: ast.Module,
        run: RunFacts | None,
        source: str | None = None,
        gates: prefilter.Gates = prefilter.ON,
    ) -> None:
        self.tree = tree
        self.run = run
        self.gates = gates
        self._source = source
        """To read only the statements whose lines spell a name; None: every statement."""
        self._split: list[str] | None = None
        self._own: dict[str, FileFacts] = {}
        self._module_code: dict[int, bool] = {}
        self._classes: dict[str, tuple[str, ...]] | None = None
        self._class = ""
        self._self = ""
        """The class of the call being judged, and its method's first parameter."""
        self.keys: set[str] = set()
        """The state keys this file's verdicts read from the run, and ``fn:<name>`` for the
        functions of this file that re-arm them (their callers may be in other files)."""

    def own(self, word: str) -> FileFacts:
        """This file's facts about ``word`` (a state's name, a function's): those of the
        statements whose lines spell it (a write of ``x.word``, a call of ``word(...)`` and a
        function returning ``word`` always do), or of every statement with the gates off."""
        found = self._own.get(word)
        if found is None:
            lines = None
            if word.startswith("<lambda:"):  # a lambda handed to torch: its own line
                lines = [int(word[8:-1])]
            elif self._source is not None:
                lines = self.gates.lines_naming(self._lines, (word,), self._source)
            found = self._own[word] = collect(self.tree, lines, self._source, self.gates)
        return found

    def _lines(self) -> list[str]:
        """The source's lines as ``ast`` numbers them, split once."""
        if self._split is None:
            self._split = ast_lines(self._source or "")
        return self._split

    # -- sources -------------------------------------------------------------------------

    def judge(self, value: ast.expr, scope: Scope | None, ctx: Context) -> Judgement:
        """The verdict on ``value`` passed as the flag at a call in ``ctx``."""
        cls = ctx.scope[2] if ctx.scope is not None else None
        self._class = cls.name if cls is not None else ""
        args = ctx.scope[0].args if cls is not None and ctx.scope is not None else None
        self._self = args.args[0].arg if args is not None and args.args else ""
        return worst(self._judge(s) for s in self.sources(value, scope, ctx, 0, scope))

    def sources(
        self,
        value: ast.expr,
        scope: Scope | None,
        ctx: Context,
        depth: int,
        where: Scope | None,
    ) -> list[Source]:
        if depth > 12:
            return [self._unknown(value, "too deep to follow")]
        if is_none(value):
            return [Source(MAINTAINED)]
        if isinstance(value, ast.Constant):
            return [self._constant(value, ctx, where)]
        if isinstance(value, ast.IfExp):
            return [
                *self.sources(value.body, scope, ctx, depth + 1, where),
                *self.sources(value.orelse, scope, ctx, depth + 1, where),
            ]
        if isinstance(value, ast.BoolOp):
            # `flag and self.training`: the mode only masks the flag, True comes from the flag
            masks = isinstance(value.op, ast.And)
            return [
                s
                for v in value.values
                if not (masks and is_mode(v))
                for s in self.sources(v, scope, ctx, depth + 1, where)
            ]
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
            return self.sources(value.operand, scope, ctx, depth + 1, where)
        if isinstance(value, ast.NamedExpr):
            return self.sources(value.value, scope, ctx, depth + 1, where)
        if isinstance(value, ast.Compare):
            return [self._compare(value, scope, ctx, where)]
        if isinstance(value, ast.Attribute):
            if value.attr in MODE_ATTRIBUTES:
                return [self._mode(value, ctx, where)]
            return [Source(None, f"attr:{value.attr}", value)]
        if isinstance(value, ast.Name):
            return self._name(value, scope, ctx, depth, where)
        if isinstance(value, ast.Call):
            return [self._call(value, ctx)]
        return [self._unknown(value, f"`{_text(value)}` is not followed")]

    def _name(
        self, value: ast.Name, scope: Scope | None, ctx: Context, depth: int, where: Scope | None
    ) -> list[Source]:
        owner = scope.lookup(value.id) if scope is not None else None
        if owner is None:
            return [Source(None, f"global:{value.id}", value)]
        bindings = owner.bindings.get(value.id, [])
        if value.id in owner.params and not bindings:
            return [Source(MAINTAINED)]  # a parameter passed on: its callers decide
        once = self._set_once(value, bindings, ctx) if where is scope else None
        if once is not None:
            return [once]
        found: list[Source] = []
        for binding in bindings:
            if binding.how == "assign" and binding.value is not None:
                found.extend(self.sources(binding.value, owner, ctx, depth + 1, owner))
            elif binding.how == "for" and self.drives(ctx, owner):
                found.append(Source(MAINTAINED))  # a loop of the driver sets it
            else:
                found.append(self._unknown(value, f"`{value.id}` is bound in a way not followed"))
        return found or [self._unknown(value, f"`{value.id}` has no value seen")]

    def _mode(self, value: ast.Attribute, ctx: Context, where: Scope | None) -> Source:
        """``is_first_microbatch=self.training`` in a module's forward: True on every training
        microbatch (each overwrites ``main_grad``); code that drives TE decides itself."""
        if self.drives(ctx, where):
            return Source(MAINTAINED)
        message = (
            f"`{_text(value)}` is True on every training microbatch: each overwrites "
            "`main_grad`, and the FP8 weight cache is rebuilt every time"
        )
        return Source(
            Judgement(Verdict.STALE, (Evidence(message, value.lineno, value.col_offset),))
        )

    def _set_once(self, value: ast.Name, bindings: Sequence[object], ctx: Context) -> Source | None:
        """``first = True`` before the loop that changes the weights, ``first = False`` inside
        it and never True again there: True on the first step of the process only (steps 2 on
        reuse the step-1 FP8 weights; a resumed run passes True again)."""
        values = [getattr(b, "value", None) for b in bindings]
        if not values or not all(
            getattr(b, "how", "") == "assign" and isinstance(v, ast.Constant)
            for b, v in zip(bindings, values)
        ):
            return None
        loop = next(
            (
                loop
                for loop in reversed(ctx.loops)
                if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
                and loop_steps_optimizer(loop)
            ),
            None,
        )
        if loop is None:
            return None
        start, end = loop.lineno, loop.end_lineno or loop.lineno
        inside = [v for v in values if start <= v.lineno <= end]  # type: ignore[union-attr]
        before = [v for v in values if v.lineno < start]  # type: ignore[union-attr]
        if not (
            any(v.value is True for v in before)  # type: ignore[union-attr]
            and any(v.value is False for v in inside)  # type: ignore[union-attr]
            and not any(v.value is True for v in inside)  # type: ignore[union-attr]
        ):
            return None
        message = (
            f"`{value.id}` is set True before the loop that changes the weights (line {start}) "
            "and cleared inside it: True on the first step of the process only; later steps "
            "pass False after the weights changed"
        )
        return Source(
            Judgement(Verdict.STALE, (Evidence(message, value.lineno, value.col_offset),))
        )

    def _constant(self, value: ast.Constant, ctx: Context, where: Scope | None) -> Source:
        if self.drives(ctx, where):
            return Source(MAINTAINED)  # a test, benchmark or script drives the sequence
        what = (
            "overwrites `main_grad` on every microbatch"
            if value.value is True
            else "never refreshes the FP8 weight cache"
        )
        message = f"the constant `{value.value!r}` in a module's forward {what}"
        return Source(
            Judgement(Verdict.STALE, (Evidence(message, value.lineno, value.col_offset),))
        )

    def _compare(
        self, value: ast.Compare, scope: Scope | None, ctx: Context, where: Scope | None
    ) -> Source:
        left = value.left
        if (
            len(value.ops) == 1
            and isinstance(value.ops[0], ast.Eq)
            and isinstance(left, ast.BinOp)
            and isinstance(left.op, ast.Mod)
        ):
            return Source(MAINTAINED)  # a counter modulo the microbatches: every step's first
        index = first_value_name(value)
        if isinstance(index, ast.Name):
            loop = _loop_of(index.id, ctx) if where is scope else None
            if loop is not None:
                if loop_steps_optimizer(loop):
                    message = (
                        f"`{_text(value)}` over the loop that changes the weights (line "
                        f"{getattr(loop, 'lineno', 0)}) is True once per process: later steps "
                        "pass False after the weights changed, and a resumed run passes True "
                        "again"
                    )
                    return Source(
                        Judgement(
                            Verdict.STALE, (Evidence(message, value.lineno, value.col_offset),)
                        )
                    )
                if loop_runs_backward(loop) or self.drives(ctx, where):
                    return Source(MAINTAINED)
                message = f"`{_text(value)}` is True on the first pass of a loop inside forward"
                return Source(
                    Judgement(Verdict.STALE, (Evidence(message, value.lineno, value.col_offset),))
                )
        if isinstance(index, ast.Attribute):
            return Source(None, f"attr:{index.attr}", index)  # `self.current_microbatch == 0`
        return self._unknown(value, f"`{_text(value)}` is not followed")

    def _call(self, value: ast.Call, ctx: Context | None = None) -> Source:
        func = value.func
        if (
            ctx is not None
            and ctx.scope is not None
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == self._self
            and not value.args
        ):
            returned = returned_state(ctx.scope[2], func.attr)
            if returned is not None:  # `self._is_first_microbatch()`: `return self.flag`
                return Source(None, f"attr:{returned.attr}", returned)
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        for getter, key in self._getters(name):
            if getter == name:
                return Source(None, key, value)
        if name:  # a getter of another file of the run: judged again once the run is known
            self.keys.add(f"get:{name}")
        return self._unknown(value, f"`{_text(value.func)}()` returns it; its body is not followed")

    def _getters(self, name: str) -> Iterable[tuple[str, str]]:
        yield from self.own(name).getters
        if self.run is not None:
            yield from self.run.getters

    def _unknown(self, node: ast.AST, why: str) -> Source:
        return Source(
            Judgement(
                Verdict.UNVERIFIED, (Evidence(why, _line(node), getattr(node, "col_offset", 0)),)
            )
        )

    # -- driver code -------------------------------------------------------------------

    def drives(self, ctx: Context, where: Scope | None) -> bool:
        """Whether the code around the call drives TE itself (a test, a benchmark, a script):
        the outermost function around it is not a module's forward, nor a method its forward
        calls. A closure inside a forward is module code; a module class defined inside a test
        function is the test's own (the test drives its forward)."""
        scope, outermost = ctx.scope, None
        while scope is not None:
            outermost = scope
            outer = scope[1]
            scope = outer.scope if outer is not None else None
        return outermost is None or not self._is_module_code(outermost[0], outermost[2])

    def _is_module_code(self, node: ast.AST, cls: ast.ClassDef | None) -> bool:
        known = self._module_code.get(id(node))
        if known is not None:
            return known
        name = getattr(node, "name", "")
        result = runs_as_forward(name)
        if not result and cls is not None and name:
            result = called_by_forward(cls, name)
        self._module_code[id(node)] = result
        return result

    # -- state ---------------------------------------------------------------------------

    def _judge(self, source: Source) -> Judgement:
        if source.judgement is not None:
            return source.judgement
        return self.state(source.key, source.node)

    def state(self, key: str, node: ast.AST | None) -> Judgement:
        """The verdict on a state (``attr:name`` or ``global:name``) from its writes that can
        reach this object, and when each re-arm runs (``steps``)."""
        self.keys.add(key)
        spelled = key.split(":", 1)[1]
        writes = [w for w in self.own(spelled).writes if w.key == key]
        self.keys.update(f"fn:{_last(w.function)}" for w in writes if _re_arms(w))
        if self.run is not None:
            writes.extend(self.run.writes(key))
        source = Evidence(f"the flag is `{spelled}`", _line(node), getattr(node, "col_offset", 0))
        # One file checked alone, and a state a run over the project would share: a re-arm in
        # another file may keep it. The evidence says so first, and the fix is unsafe.
        alone = self.run is None and shared(spelled)
        head = [source, _ALONE] if alone else [source]
        if not writes:
            steps = [*head, Evidence(f"nothing in the files seen writes `{spelled}`")]
            return Judgement(Verdict.UNVERIFIED, tuple(steps), provisional=alone)
        stepper = self._stepper()
        on_self = bool(self._class) and (
            isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == self._self
        )
        unknown = [w for w in writes if w.target.startswith("unknown:") and _re_arms(w)]
        writes = [
            w
            for w in writes
            if not w.target.startswith(("unknown:", "ctx"))
            and not (
                on_self
                and w.target.startswith(("self:", "obj:"))
                and not stepper.related(w.target.split(":", 1)[1], self._class)
            )
        ]
        own_class = self._class
        # the call's own class first: its set-up and clear are the ones that matter
        writes.sort(key=lambda w: _last(w.function.rsplit(".", 1)[0]) != own_class)
        rearms = [w for w in writes if _re_arms(w)]
        steps = list(head)
        steps.extend(describe(w) for w in first_of_each(writes))
        judged = [(w, best(stepper.reach(w))) for w in rearms]
        if any(r is not None and r.kind == "step" for _, r in judged):
            return MAINTAINED
        conditional = [(w, r) for w, r in judged if r is not None and r.kind == "conditional"]
        if conditional and self._built_where_re_armed(key, node, [r for _, r in conditional]):
            return MAINTAINED
        if conditional:
            write, reach = conditional[0]
            steps.append(describe(write, reach.condition if write.conditions else ""))
            steps.extend(reach.evidence)
            return Judgement(Verdict.CONDITIONAL, tuple(steps[:8]), reach.condition, alone)
        steps.extend(unknown_note(w) for w in unknown[:1])
        for kinds, verdict in ((BAD, Verdict.STALE), (("uncalled",), Verdict.UNVERIFIED)):
            found = [(w, r) for w, r in judged if r is not None and r.kind in kinds]
            if found:
                write, reach = found[0]
                steps.append(describe(write, " and ".join(write.conditions)))
                steps.extend(reach.evidence)
                return Judgement(verdict, tuple(steps[:8]), provisional=alone)
        steps.append(Evidence(f"nothing in the files seen re-arms `{spelled}`"))
        return Judgement(Verdict.STALE, tuple(steps[:8]), provisional=alone)

    def _stepper(self) -> Steps:
        """When the re-arms run (``steps``), from this file's and the run's calls and classes."""
        # made for each state judged, never kept: its callbacks hold this lifecycle
        own = self._classes if self._classes is not None else file_classes(self.tree)
        self._classes = own
        run = self.run

        def calls(name: str) -> list[CallFact]:
            found = [c for c in self.own(name).calls if c.name == name]
            if run is not None:
                found.extend(run.calls(name))
            return found

        def bases(name: str) -> set[str]:
            found = set(own.get(name, ()))
            if run is not None:
                found.update(run.classes.get(name, ()))
            return found

        known = dict(own) if run is None else {**run.classes, **own}
        return Steps(calls, bases, known)

    def _built_where_re_armed(self, key: str, node: ast.AST | None, live: Sequence[Reach]) -> bool:
        """``self.<flag>`` of a class the run builds only where a re-arm's condition holds
        (``builds``): asked as a key of this file's verdicts, answered by a run over several
        files (``RunFacts.answers``)."""
        if self.run is None or not self._class or not key.startswith("attr:"):
            return False
        if not (isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == self._self):
            return False
        for reach in live:
            asked = builds.question(self._class, tuple(reach.condition.split(" and ")))
            self.keys.add(asked)
            if self.run.answers.get(asked):
                return True
        return False


def shared(name: str) -> bool:
    """Whether a run over several files shares the writes of a state of this name
    (``prefilter.STATE_WORDS``): only then can it see a re-arm that one file cannot."""
    lowered = name.lower()
    return any(word in lowered for word in prefilter.STATE_WORDS)


_ALONE = Evidence(
    "re-arming in other files is not seen here; `te-microbatch-lint check .` sees the project"
)


def _text(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def first_value_name(value: ast.expr) -> ast.expr | None:
    """The ``i`` of ``i == 0``, ``0 == i``, ``i < 1``, ``i <= 0`` or ``not i`` (a name or an
    attribute)."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return value.operand if isinstance(value.operand, (ast.Name, ast.Attribute)) else None
    if not (isinstance(value, ast.Compare) and len(value.ops) == 1):
        return None
    left, op, right = value.left, value.ops[0], value.comparators[0]
    if isinstance(left, ast.Constant) and not isinstance(right, ast.Constant):
        left, right = right, left
        op = {ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}.get(type(op), op)
    if not (isinstance(left, (ast.Name, ast.Attribute)) and isinstance(right, ast.Constant)):
        return None
    bound = right.value
    if isinstance(bound, bool) or not isinstance(bound, int):
        return None
    if (isinstance(op, (ast.Eq, ast.LtE)) and bound == 0) or (
        isinstance(op, ast.Lt) and bound == 1
    ):
        return left
    return None


def _loop_of(name: str, ctx: Context) -> ast.AST | None:
    for loop in reversed(ctx.loops):
        if isinstance(loop, (ast.For, ast.AsyncFor)) and name in {
            n.id for n in target_names(loop.target)
        }:
            return loop
    return None
