"""What a test on the path to a re-arm says about *when* it runs, as a small typed answer.

A test is one of: a condition on the run (its configuration, a switch, a rank: the re-arm is
``conditional``), the step's own first-microbatch test (``FIRST``: the re-arm runs on the first
microbatch of every step), the first pass of the loop that changes the weights (``ONCE``: once
per process), or control flow every step takes the same way (``PER_STEP``: no condition).

Locals are read through: ``fp8 = self.config.fp8`` then ``if fp8 is not None:`` is the
condition ``self.config.fp8 is not None``. Existence tests on an object (``hasattr(m, ...)``)
are per-step filters; on the configuration (``isinstance(self.config.fp8_recipe, ...)``,
``hasattr(config, "fp8")``) they are conditions of the run. ``self.training`` is the module's
mode; ``config.training`` is configuration. ``n % k == 0`` (and ``not (n % k)``, ``n % k < 1``,
``n % k <= 0``) is the first of every ``k`` only when ``n`` is a counter (something the file
steps with ``+=`` only in training, or the index of a loop around); ``config.pp_size % 2 ==
0`` is configuration.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Mapping

from lint_rules.analysis.nodes import dotted

MODE_ATTRIBUTES = frozenset({"training"})
"""State that torch itself keeps every phase (``module.train()``/``eval()``)."""

CONDITION_CHARS = 240
"""A condition longer than this is shortened ("..."): megatron-core 0.19.2's re-arm condition
(four tests, 150 characters) is kept whole."""

_EXISTENCE = frozenset({"hasattr", "isinstance", "callable", "issubclass"})
_CONFIG_WORDS = ("config", "cfg", "args", "opt", "setting", "hparam", "recipe", "fp8", "fp4")
_STEP_WORDS = ("microbatch", "micro_batch", "batch", "step", "iter", "mb")


class When(enum.Enum):
    PER_STEP = "per-step"
    FIRST = "first"
    ONCE = "once"
    RUN = "run"


class Reading:
    """What a function's tests can be read through: its locals bound once (``name -> value``),
    its constant-only flags, the names of the loops around (``loop name -> kind``: ``step``,
    ``micro`` or ``loop``) and the file's counters (names and attributes stepped by ``+=``)."""

    __slots__ = ("locals", "flags", "loops", "counters")

    def __init__(
        self,
        locals_: Callable[[], Mapping[str, ast.expr]],
        flags: Callable[[], frozenset[str]],
        loops: Callable[[str], str | None],
        counters: Callable[[], frozenset[str]],
    ) -> None:
        self.locals = locals_
        self.flags = flags
        self.loops = loops
        self.counters = counters


_NOTHING: frozenset[str] = frozenset()
PLAIN = Reading(dict, lambda: _NOTHING, lambda _name: None, lambda: _NOTHING)
"""A reading with nothing to read through (a test seen alone)."""


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def spells_first(name: str) -> bool:
    """A name for the step's first microbatch (``is_first_microbatch``, ``first_step``), not a
    pipeline stage or a rank (``is_pipeline_first_stage``)."""
    lowered = name.lower()
    if "first" not in lowered or "stage" in lowered or "rank" in lowered:
        return False
    return any(word in lowered for word in _STEP_WORDS)


def _configish(node: ast.AST, reading: Reading, depth: int = 0) -> bool:
    """Whether an object is configuration (an attribute chain, or a name that spells it)."""
    if isinstance(node, ast.Attribute):
        return True
    if isinstance(node, ast.Subscript):
        return _configish(node.value, reading, depth)
    if isinstance(node, ast.Call):
        return _name(node.func) in ("getattr", "get")
    if isinstance(node, ast.Name):
        lowered = node.id.lower()
        if any(word in lowered for word in _CONFIG_WORDS):
            return True
        bound = reading.locals().get(node.id) if depth < 4 else None
        return bound is not None and _configish(bound, reading, depth + 1)
    return False


def counter_first(test: ast.expr, reading: Reading) -> bool:
    """``n % k == 0``, ``0 == n % k``, ``not (n % k)``, ``n % k < 1``, ``n % k <= 0`` with ``n``
    a counter: true on the first of every ``k``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        mod = test.operand
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
            op = {ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}.get(type(op), op)
        if not (isinstance(right, ast.Constant) and right.value in (0, 1)):
            return False
        bound = right.value
        if not (
            (isinstance(op, (ast.Eq, ast.LtE)) and bound == 0)
            or (isinstance(op, ast.Lt) and bound == 1)
        ):
            return False
        mod = left
    else:
        return False
    if not (isinstance(mod, ast.BinOp) and isinstance(mod.op, ast.Mod)):
        return False
    counted = _name(mod.left)
    if isinstance(mod.left, ast.Name) and reading.loops(counted) is not None:
        return True  # `step % accum == 0` over the loop's own index
    return bool(counted) and counted in reading.counters()


def is_counter_compare(test: ast.expr) -> bool:
    """Any comparison that takes a remainder (``x % k == 0``): first-of-k in form."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
        return isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod)
    if isinstance(test, ast.Compare):
        parts = [test.left, *test.comparators]
        return any(isinstance(p, ast.BinOp) and isinstance(p.op, ast.Mod) for p in parts)
    return False


def _first_index(test: ast.expr) -> str:
    """The ``i`` of ``i == 0``, ``i < 1``, ``i <= 0``, ``not i`` (a plain name), else ""."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand.id if isinstance(test.operand, ast.Name) else ""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return ""
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
        op = {ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}.get(type(op), op)
    if not (isinstance(left, ast.Name) and isinstance(right, ast.Constant)):
        return ""
    if isinstance(right.value, bool) or not isinstance(right.value, int):
        return ""
    first = (isinstance(op, (ast.Eq, ast.LtE)) and right.value == 0) or (
        isinstance(op, ast.Lt) and right.value == 1
    )
    return left.id if first else ""


def _countdown(test: ast.expr) -> str:
    """The ``n`` of ``n == 0``, ``n <= 0``, ``n < 1``, ``not n`` (a name or an attribute)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _name(test.operand)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return ""
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
        op = {ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}.get(type(op), op)
    if not (isinstance(left, (ast.Name, ast.Attribute)) and isinstance(right, ast.Constant)):
        return ""
    if isinstance(right.value, bool) or not isinstance(right.value, int):
        return ""
    first = (isinstance(op, (ast.Eq, ast.LtE)) and right.value == 0) or (
        isinstance(op, ast.Lt) and right.value == 1
    )
    return _name(left) if first else ""


def classify(test: ast.expr, reading: Reading = PLAIN) -> When:
    """What a test says about when its true branch runs (see the module's docstring)."""
    if isinstance(test, ast.BoolOp):
        kinds = [classify(v, reading) for v in test.values]
        for kind in (When.RUN, When.ONCE, When.FIRST):
            if kind in kinds:
                return kind
        return When.PER_STEP
    index = _first_index(test)
    if index:
        loop = reading.loops(index)
        if loop is not None:
            return When.ONCE if loop == "step" else When.FIRST
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        if is_counter_compare(test):
            return When.FIRST if counter_first(test, reading) else When.RUN
        return classify(test.operand, reading)
    if isinstance(test, ast.Call):
        name = _name(test.func)
        if name == "is_grad_enabled":
            return When.PER_STEP
        if name in _EXISTENCE:
            subject = test.args[0] if test.args else None
            return (
                When.RUN if subject is not None and _configish(subject, reading) else When.PER_STEP
            )
        return When.RUN
    countdown = _countdown(test)
    if countdown and f"refill:{countdown}" in reading.counters():
        return When.FIRST  # a countdown that refills itself: the first of every k
    if isinstance(test, ast.Compare):
        if is_counter_compare(test):
            return When.FIRST if counter_first(test, reading) else When.RUN
        if (
            isinstance(test.left, ast.Name)
            and all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops)
            and all(isinstance(c, ast.Constant) and c.value is None for c in test.comparators)
        ):
            bound = reading.locals().get(test.left.id)
            if bound is not None and _configish(bound, reading):
                return When.RUN  # `fp8 = self.config.fp8` ... `if fp8 is not None:`
            return When.PER_STEP
        return When.RUN
    if isinstance(test, ast.Attribute):
        if test.attr in MODE_ATTRIBUTES:
            plain = isinstance(test.value, ast.Name) and not _configish(test.value, reading)
            return When.PER_STEP if plain else When.RUN
        return When.FIRST if spells_first(test.attr) else When.RUN
    if isinstance(test, ast.Name):
        if spells_first(test.id):
            return When.FIRST
        if test.id in reading.flags():
            return When.PER_STEP
        bound = reading.locals().get(test.id)
        if bound is not None and not isinstance(bound, ast.Constant):
            return classify(bound, reading)
        return When.RUN
    return When.RUN


def condition_text(
    test: ast.expr, outcome: bool, reading: Reading = PLAIN, kind: When | None = None
) -> str | None:
    """The run condition a branch adds, as the user wrote it (``not (...)`` on the else side,
    a local read through: ``fp8 is not None (fp8 = self.config.fp8)``); None when the test is
    no condition on the run (``classify``)."""
    if isinstance(test, ast.Constant):  # `if True:`: no condition; its `else` never runs
        return None if bool(test.value) is outcome else "False"
    if (kind or classify(test, reading)) is not When.RUN:
        return None
    text = spelled(test)
    bound = reading.locals()
    through = (
        [
            f"{n.id} = {spelled(v)}"
            for n in ast.walk(test)
            if type(n) is ast.Name and n.id in bound
            for v in (bound[n.id],)
            if not isinstance(v, ast.Constant)
        ]
        if bound
        else []
    )
    if through:
        text += f" ({'; '.join(dict.fromkeys(through))})"
    if len(text) > CONDITION_CHARS:
        text = text[: CONDITION_CHARS - 3] + "..."
    return text if outcome else f"not ({text})"


def spelled(node: ast.expr) -> str:
    """``ast.unparse(node)`` on one line (its runs of white space made one space), spelled
    directly where it is a dotted name, ``not`` one, or one compared with ``is (not) None``
    (the most common tests; ``ast.unparse`` builds a visitor for each)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = dotted(node.operand)
        if operand is not None:
            return f"not {operand}"
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        right = node.comparators[0]
        if isinstance(right, ast.Constant) and right.value is None:
            op = type(node.ops[0])
            left = dotted(node.left) if op is ast.Is or op is ast.IsNot else None
            if left is not None:
                return f"{left} is not None" if op is ast.IsNot else f"{left} is None"
    else:
        name = dotted(node)
        if name is not None:
            return name
    return " ".join(ast.unparse(node).split())
