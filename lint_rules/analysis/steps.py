"""When a re-arm runs: every path from the training step to it, classified.

A re-arm keeps the flag only if it runs **every step, before the flag is read**. From the
re-arm's own place in its function, then each call of that function (matched to the function
it calls: ``self.m()`` in a related class, ``obj.m()`` on an object that may be one, ``f()`` for
a function, or torch calling a function handed to ``apply``/a hook), up to the training step,
each path is one of:

- ``step``: every step (under the step's first-microbatch test, in the loop that changes the
  weights, an optimizer step hook, a ``zero_grad`` override, or a function nothing in the files
  seen calls: an entry point a framework calls);
- ``conditional``: under a condition on the run, at the re-arm or at any call on the way;
- ``once``: once per run (``__init__``, set-up, module level, before the training loop, the
  first pass of the loop that changes the weights);
- ``resume``: only when a checkpoint is loaded (``load_state_dict``);
- ``eval``: only in code that runs without gradients;
- ``forward``: before every forward or microbatch (a forward pre-hook, a forward, a microbatch
  loop): ``True`` then overwrites every microbatch;
- ``uncalled``: nothing in the files seen calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from lint_rules.analysis.facts import CallFact, Write
from lint_rules.findings import Evidence
from lint_rules.slotted import NamedTuple

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Union

if TYPE_CHECKING:
    Site = Union[Write, CallFact]
else:  # the alias is the type checker's: at run time, its classes
    Site = (Write, CallFact)

ONCE_NAMES = frozenset(
    {"__init__", "__post_init__", "setup", "set_up", "build", "configure", "configure_model"}
    | {"on_fit_start", "on_train_start", "init_weights", "reset_parameters", "_init_weights"}
)
RESUME_NAMES = frozenset(
    {"load_state_dict", "_load_from_state_dict", "load_checkpoint", "on_load_checkpoint"}
    | {"resume", "resume_from_checkpoint", "restore", "load_sharded_state_dict"}
)
STEP_NAMES = frozenset({"zero_grad", "on_train_batch_start", "on_before_zero_grad"})
BAD = ("once", "resume", "eval", "forward")
DEPTH = 6


class Reach(NamedTuple):
    kind: str
    """``step``, ``conditional``, ``once``, ``resume``, ``eval``, ``forward`` or ``uncalled``."""
    evidence: tuple[Evidence, ...] = ()
    condition: str = ""


def last(function: str) -> str:
    return function.rsplit(".", 1)[-1]


def runs_as_forward(name: str) -> bool:
    return name == "__call__" or name.lstrip("_").startswith("forward")


def _where(site: Site) -> tuple[int, int, str | None]:
    return site.line, site.col, site.path


class Steps:
    """The reaches of re-arms, given the calls of a function by its last name (``calls``) and
    the run's classes (``bases``: a class's bases by name)."""

    def __init__(
        self,
        calls: Callable[[str], Iterable[CallFact]],
        bases: Callable[[str], Iterable[str]],
        classes: Mapping[str, object] | None = None,
    ) -> None:
        self._calls = calls
        self._bases = bases
        self._known = classes
        self._ancestors: dict[str, frozenset[str]] = {}

    # -- classes -------------------------------------------------------------------------

    def ancestors(self, name: str) -> frozenset[str]:
        found = self._ancestors.get(name)
        if found is None:
            self._ancestors[name] = frozenset()  # a cycle stops here
            seen: set[str] = set()
            todo = list(self._bases(name))
            while todo and len(seen) < 200:
                base = todo.pop()
                if base not in seen:
                    seen.add(base)
                    todo.extend(self._bases(base))
            found = self._ancestors[name] = frozenset(seen)
        return found

    def related(self, a: str, b: str) -> bool:
        """Whether an instance of one may be an instance of the other (same class, or one
        derives from the other)."""
        return a == b or b in self.ancestors(a) or a in self.ancestors(b)

    def _class_of(self, function: str) -> str:
        """The class ``function`` is a method of ("" for a function)."""
        parts = function.split(".")
        if len(parts) < 2:
            return ""
        if self._known is None:
            return parts[-2] if parts[-2][:1].isupper() else ""
        return parts[-2] if parts[-2] in self._known else ""

    def matches(self, call: CallFact, function: str) -> bool:
        """Whether ``call`` (by name) may call ``function`` (qualified)."""
        receiver = call.receiver
        if receiver.startswith("hook:"):
            return True
        owner = self._class_of(function)
        if owner:
            if receiver.startswith(("self:", "obj:")):
                return self.related(receiver.split(":", 1)[1], owner)
            return receiver in ("obj", "")
        return receiver in ("name", "module", "")

    def callers(self, function: str, passing_false: bool = True) -> list[CallFact]:
        """The calls that may call ``function`` (``passing_false``: also those passing False
        first, which re-arm nothing where the re-arm writes its argument)."""
        name = last(function)
        return [
            c
            for c in self._calls(name)
            if c.function != function
            and self.matches(c, function)
            and (passing_false or c.arg != "false")
        ]

    # -- paths ---------------------------------------------------------------------------

    def reach(self, write: Write) -> list[Reach]:
        """Every path's class for a re-arm (``value``: ``true`` overwrites on every forward)."""
        return self._site(write, write.value == "true", 0, frozenset())

    def _site(self, site: Site, overwrites: bool, depth: int, seen: frozenset[str]) -> list[Reach]:
        line, col, path = _where(site)
        name = site.function or "module level"
        if site.evaluation:
            text = f"`{name}` runs without gradients: its forwards use the flag up, no step does"
            return [Reach("eval", (Evidence(text, line, col, path),))]
        if site.conditions:
            condition = " and ".join(site.conditions)
            found = self._site(site._replace(conditions=()), overwrites, depth, seen)
            return [
                r._replace(kind="conditional", condition=r.condition or condition)
                if r.kind in ("step", "conditional")
                else r
                for r in found
            ]
        receiver = getattr(site, "receiver", "")
        if receiver == "hook:forward":
            text = f"`{getattr(site, 'name', name)}` is a module hook: it runs on every forward"
            kind = "forward" if overwrites and site.first != "first" else "step"
            return [Reach(kind, (Evidence(text, line, col, path),))]
        if receiver == "hook:step":
            return [Reach("step")]
        if receiver == "hook:resume":
            text = "it runs only when a state dict is loaded (a resumed run)"
            return [Reach("resume", (Evidence(text, line, col, path),))]
        place = site.first
        if place in ("first", "step"):
            return [Reach("step")]
        if place == "once":
            text = f"in `{name}`, on the first pass of the loop that changes the weights: once"
            return [Reach("once", (Evidence(text, line, col, path),))]
        if place == "before":
            text = f"in `{name}`, before the loop that changes the weights: once per run"
            return [Reach("once", (Evidence(text, line, col, path),))]
        if place == "micro":
            if not overwrites:
                return [Reach("step")]
            text = f"in `{name}`, inside the microbatch loop: True on every microbatch"
            return [Reach("forward", (Evidence(text, line, col, path),))]
        return self._function(site.function, site, overwrites, depth, seen)

    def _function(
        self, function: str, site: Site, overwrites: bool, depth: int, seen: frozenset[str]
    ) -> list[Reach]:
        line, col, path = _where(site)
        if not function:
            text = "it runs at module level: once per run"
            return [Reach("once", (Evidence(text, line, col, path),))]
        name = last(function)
        if name in ONCE_NAMES:
            text = f"`{function}` runs once per run, when it is built or set up"
            return [Reach("once", (Evidence(text, line, col, path),))]
        if name in RESUME_NAMES:
            text = f"`{function}` runs only when a checkpoint is loaded (a resumed run)"
            return [Reach("resume", (Evidence(text, line, col, path),))]
        if name in STEP_NAMES:
            return [Reach("step")]
        if runs_as_forward(name):
            if not overwrites:
                return [Reach("step")]
            text = f"`{function}` runs on every forward: True overwrites every microbatch"
            return [Reach("forward", (Evidence(text, line, col, path),))]
        if function in seen or depth >= DEPTH:
            return [Reach("step")]
        param = depth == 0 and isinstance(site, Write) and site.value.startswith("param:")
        callers = self.callers(function, not param)
        if not callers:
            if depth == 0:
                return [Reach("uncalled", (Evidence(f"nothing in the files seen calls `{name}`"),))]
            return [Reach("step")]  # an entry point: what calls it is not in the files seen
        found: list[Reach] = []
        for call in callers:
            verb = "is handed to torch" if call.receiver.startswith("hook:") else "is called"
            hop = Evidence(
                f"`{name}` {verb} from `{call.function or 'module level'}`"
                + (f" only if `{' and '.join(call.conditions)}`" if call.conditions else ""),
                call.line,
                call.col,
                call.path,
            )
            for reach in self._site(call, overwrites, depth + 1, seen | {function}):
                found.append(reach._replace(evidence=(hop, *reach.evidence)))
            if any(r.kind == "step" for r in found):
                break
        return found


def best(reaches: list[Reach]) -> Reach | None:
    """The path that decides: every step first, then conditional, then the stale ones."""
    for kind in ("step", "conditional", *BAD, "uncalled"):
        for reach in reaches:
            if reach.kind == kind:
                return reach
    return None
