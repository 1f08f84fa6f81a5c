"""The facts of the files a run did not analyse: those that never spell the flag, but call a
function that re-arms it (a recipe calling ``prepare_for_grad_accumulation()``) or write the
state a verdict reads.

The byte prefilter leaves such a file unparsed: it cannot hold a finding. Its facts can still
decide a verdict, so once the run knows which states its verdicts read (their keys) and which
functions re-arm them, every other file of the run whose text spells one of those names is
parsed and its statements on those lines shared (a call or a write must spell the name it
calls or writes: a sound text gate, ``prefilter.hit_lines``). One round: the callers of the
callers are not looked for in files that spell neither (a function nothing in the files seen
calls is an entry point a framework calls every step, ``steps``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence

from lint_rules.analysis import prefilter
from lint_rules.analysis.facts import collect, with_path
from lint_rules.analysis.runfacts import RunFacts, last_name, re_arms
from lint_rules.te import FLAG

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.records import Outcome

MAX_FILES = 64
"""A name spelled in more files than this is not followed there (a generic name such as
``reset``: the cost of parsing them all would buy little)."""


def wanted_names(run: RunFacts, keys: Iterable[str]) -> set[str]:
    """The names whose writes and calls decide the verdicts that read ``keys``: the states
    themselves and the functions that re-arm them."""
    names: set[str] = set()
    for key in keys:
        if key.startswith(("attr:", "global:")):
            names.add(key.split(":", 1)[1])
            names.update(last_name(w.function) for w in run.writes(key) if re_arms(w))
        elif key.startswith(("fn:", "get:")):  # a re-arming function, a getter
            names.add(key.split(":", 1)[1])
    # A name that spells the flag is spelled only in files the run analysed already.
    return {n for n in names if n.isidentifier() and FLAG not in n}


def gather(
    run: RunFacts,
    keys: Iterable[str],
    paths: Sequence[str],
    read: Callable[[str], str | None],
    raw: Callable[[str], bytes | None],
    gates: prefilter.Gates = prefilter.ON,
) -> list[str]:
    """Add to ``run`` the facts of the files of ``paths`` (not analysed by the run) that spell
    a wanted name (``wanted_names``); ``raw(path)``: its bytes, searched first (None when it
    cannot be read); ``read(path)``: its text. Returns the paths whose facts were added."""
    names = sorted(wanted_names(run, keys))
    if not names or not paths:
        return []
    spelled: dict[str, list[str]] = {}
    hits: dict[str, int] = dict.fromkeys(names, 0)
    for path in paths:
        data = raw(path)
        found = gates.spelled_in(data, names) if data is not None else []
        if found:
            spelled[path] = found
            for name in found:
                hits[name] += 1
    added: list[str] = []
    for path, found in spelled.items():
        words = [n for n in found if hits[n] <= MAX_FILES]
        text = read(path) if words else None
        if text is None:
            continue
        try:
            tree = ast.parse(text, path)
        except (SyntaxError, ValueError):
            continue
        facts = collect(tree, gates.lines_of(text, words), text, gates)
        if facts.writes or facts.calls:
            run.add(path, with_path(facts, path))
            added.append(path)
    return added


def gather_run(
    run: RunFacts,
    outcomes: Sequence[Outcome | None],
    active: Iterable[int],
    files: Sequence[str],
    gates: prefilter.Gates = prefilter.ON,
    raws: dict[str, bytes] | None = None,
) -> None:
    """``gather`` for a CLI run: the keys the verdicts of its analysed files with findings read
    (``outcomes[p]`` for ``p`` in ``active``), the files it did not analyse. A file without a
    finding has every value maintained: more re-arms or callers cannot change that (a path
    that runs every step is the best one, ``steps.best``)."""
    places = set(active)
    keys = {
        k
        for p in places
        if (outcome := outcomes[p]) is not None and outcome.findings and outcome.project
        for k in outcome.project.keys
    }
    if not keys:
        return
    rest = [path for place, path in enumerate(files) if place not in places]

    def read(path: str) -> str | None:
        from lint_rules.fileio import SourceError, read_source

        try:
            return read_source(path).text
        except SourceError:
            return None

    def raw(path: str) -> bytes | None:
        if raws is not None and path in raws:
            return raws[path]
        from lint_rules.fileio import SourceError, read_regular

        try:  # never a FIFO (it could block) or a device
            return read_regular(path)
        except SourceError:
            return None

    gather(run, keys, rest, read, raw, gates)
