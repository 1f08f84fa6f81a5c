"""The lifecycle facts of a run's files, shared: every write of a state and every call of a
function that may re-arm it, by key and by name (``facts`` gathers them per file), and what
the run found out about its classes (``answers``, from ``builds``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lint_rules.analysis.builds import PREFIX
from lint_rules.analysis.facts import EMPTY, CallFact, FileFacts, Write
from lint_rules.findings import Evidence


def last_name(function: str) -> str:
    return function.rsplit(".", 1)[-1]


def re_arms(write: Write) -> bool:
    """A write that can set the flag again after ``__init__``: True, an argument, a fresh value."""
    if not write.function or last_name(write.function) == "__init__":
        return False
    return write.value in ("true", "zero", "derived") or write.value.startswith("param:")


class RunFacts:
    """The facts of the files of a run, by state key and by called name. ``skip``: a file
    whose facts are left out (a file's own facts are read from its tree)."""

    def __init__(self, files: Iterable[tuple[str, FileFacts]] = ()) -> None:
        self._writes: dict[str, list[Write]] = {}
        self._calls: dict[str, list[CallFact]] = {}
        self._getters: list[tuple[str, str, str]] = []
        self.classes: dict[str, set[str]] = {}
        """The run's classes by name, with the last names of their bases."""
        self.paths: set[str] = set()
        self.skip: str | None = None
        self.answers: dict[str, tuple[Evidence, ...] | None] = {}
        """The run's answers to the questions verdicts ask of it (``builds``), by key."""
        for path, facts in files:
            self.add(path, facts)

    def add(self, path: str, facts: FileFacts) -> None:
        if facts == EMPTY:
            return
        self.paths.add(path)
        for write in facts.writes:
            self._writes.setdefault(write.key, []).append(write._replace(path=path))
        for call in facts.calls:
            self._calls.setdefault(call.name, []).append(call._replace(path=path))
        self._getters.extend((name, key, path) for name, key in facts.getters)
        for name, bases in facts.classes:
            self.classes.setdefault(name, set()).update(bases)

    def writes(self, key: str) -> list[Write]:
        return [w for w in self._writes.get(key, ()) if w.path != self.skip]

    def calls(self, name: str) -> list[CallFact]:
        return [c for c in self._calls.get(name, ()) if c.path != self.skip]

    @property
    def getters(self) -> list[tuple[str, str]]:
        return [(name, key) for name, key, path in self._getters if path != self.skip]

    def unanswered(self, keys: Iterable[str]) -> list[str]:
        """The questions among a file's ``keys`` (``builds``) the run has not answered yet."""
        return [key for key in keys if key.startswith(PREFIX) and key not in self.answers]

    def without(self, path: str) -> RunFacts:
        """The same facts less those of ``path`` (a view: nothing is copied)."""
        if path not in self.paths:
            return self
        view = RunFacts()
        view._writes, view._calls, view._getters = self._writes, self._calls, self._getters
        view.classes = self.classes
        view.paths, view.skip, view.answers = self.paths, path, self.answers
        return view


def lifecycle_digest(keys: Sequence[str], run: RunFacts) -> str:
    """What verdicts reading ``keys`` (state keys, and ``fn:<name>`` for the file's own
    re-arming functions) see of the run: "" when nothing. Two runs with the same digest give
    the same verdicts, so a file's result is reused only when this is unchanged."""
    if not keys:
        return ""
    writes = sorted(w for k in keys if not k.startswith("fn:") for w in run.writes(k))
    names = {k[3:] for k in keys if k.startswith("fn:")}
    names.update(last_name(w.function) for w in writes if re_arms(w))  # only their callers count
    found = [c for n in sorted(names) for c in run.calls(n)]
    for _ in range(2):  # the callers of the callers, which decide when a re-arm runs (steps)
        more = {last_name(c.function) for c in found if c.function} - names
        names |= more
        found.extend(c for n in sorted(more) for c in run.calls(n))
    calls = sorted(found)
    answers = [(k, run.answers[k]) for k in keys if k.startswith(PREFIX) and run.answers.get(k)]
    if not (writes or calls or run.getters or answers):
        return ""
    owners = sorted({w.target[5:] for w in writes if w.target.startswith("self:")})
    classes = [(n, sorted(run.classes.get(n, ()))) for n in owners]
    text = repr((writes, calls, sorted(run.getters), answers, classes))
    try:  # the module behind hashlib.blake2b, without loading OpenSSL (a few ms)
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - other Pythons
        from hashlib import blake2b

    return blake2b(text.encode("utf-8", "backslashreplace"), digest_size=16).hexdigest()
