"""A run over several files: TE subclasses and factories resolve across the files of the run.

Every file that passes the prefilter is analysed once as usual, with an empty index
(``analysis.Project``); its analysis says what it exports (module-level TE subclasses and
factories of TE modules) and which project names it looked up. The exports make the run's
index, ``module.name -> Export``, under each name the file's module goes by: its package
path (folders holding ``__init__.py``) and its path below each directory the run was given
(with and without that directory's own name, for namespace packages). A file whose names reach
an index entry is analysed again with the index, and so on while exports change (a subclass
of a subclass two files away): in a real project one more pass over a few files. The files
that export go again first, those that read no entry another of them exports before the others
(``runindex.upstream_first``), so that a chain of re-exports is followed once. Files that
fail the prefilter are never parsed, so a class defined only there is not in the index. A
package's ``__init__.py`` that fails the prefilter can only pass on what the index holds
(``from .layers import MyLinear``): it is parsed only once the index holds something and a
name a file looked up goes through its package (``needed``), and so on along a chain of
re-exports; the others are done unread, as every file the prefilter rules out.

Results depend on the index only through the entries a file's names reach: ``used`` is their
digest, stored with the file's cached result and compared before the result is served.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence

from lint_rules.analysis.exports import matched
from lint_rules.analysis.filework import (
    ELSEWHERE,
    Work,
    check_file,
    rejudge_file,
    rejudge_kept,
)
from lint_rules.analysis.gather import gather_run
from lint_rules.analysis.plan import Plan
from lint_rules.analysis.records import Job, Outcome
from lint_rules.analysis.runfacts import RunFacts, lifecycle_digest
from lint_rules.slotted import TYPE_CHECKING  # not `typing`'s: it is not imported at run time

if TYPE_CHECKING:
    from typing import Any

    from lint_rules.analysis.project import Project

try:  # the module behind hashlib.blake2b, without loading OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules.analysis.runindex import (
    Index,
    Modules,
    build_index,
    needed,
    reaches,
    run_facts,
    upstream_first,
    used_digest,
)

MAX_ROUNDS = 8
"""Passes after the first; each follows a chain of subclasses one file further."""

SETTLE_MAX = 4 * MAX_ROUNDS
"""Passes over exporting files only (the upstream ones of a chain first) before the rest."""

KEPT_MAX = 64
"""First-pass analyses kept at most, to be judged again once the run's lifecycle facts are
known (``rejudge_file``); a file past them is analysed again in full."""

REJUDGE = True
"""Off (a test), every file whose verdicts read the run's facts is analysed again in full."""

Parse = Callable[[Work, Job, Sequence[tuple["Any", ...]], int], Iterator[Outcome]]
"""``parse(work, job, items, workers)``: each item's outcome, in order (a face's pool)."""


def in_process(
    work: Work, job: Job, items: Sequence[tuple[Any, ...]], workers: int
) -> Iterator[Outcome]:
    """The parse of a face without a pool: each item in turn, in this process."""
    for item in items:
        yield work(job, item[0], item[1], None, *item[2:])


def _let_go(view: Project | None) -> None:
    """Close the analysis a run kept for ``view`` (if any): it is not judged again."""
    if view is not None and view.kept is not None:
        view.kept.close()
        view.kept = None


def run_crossfile(
    work: Work,
    job: Job,
    plan: Plan,
    workers: int,
    roots: Sequence[str],
    on_parsed: Callable[[], None] | None = None,
    parse: Parse = in_process,
    only: Iterable[int] | None = None,
    settled: dict[str, Any] | None = None,
) -> Iterator[Outcome]:
    """Every file's outcome, in order (``work``: the command's; for ``fix``, every file is
        analysed first, then fixed with the settled index). A file whose names reach no module of
        the run cannot depend on the index: its outcome is given as soon as those before it are;
        the others once the index has settled. ``parse``: the face's way to analyse many files
    (a process pool). ``only``: for ``fix``, the places of the files to fix (the others are
    read for their facts only and given as their first pass left them). ``settled``: filled,
    once the index has settled, with ``view``: a function from a path and its settings to the
    ``analysis.Project`` a text at that path is judged with (stdin: a buffer not on disk)."""
    if not plan.passed:  # nothing to analyse: no index to build, no `__init__.py` to read
        yield from _nothing_passed(plan, roots, on_parsed, settled)
        return
    from lint_rules.analysis import builds

    modules = Modules(roots)
    layout = {p: modules.names(plan.files[p]) for p, _ in (*plan.passed, *plan.deferred)}
    module_names = {place: names for place, (names, _) in layout.items()}
    every = {name for names in module_names.values() for name in names}
    ordered = sorted(every)
    settings = dict(plan.passed)
    # The files analysed: those that pass the prefilter, and the packages' `__init__.py`
    # that a name they look up goes through (`needed`).
    active = [place for place, _ in plan.passed]
    checking = work is check_file
    check = job if checking else Job(disable_noqa=job.disable_noqa, mode="check")
    outcomes: list[Outcome | None] = list(plan.done)
    _own_packages(plan, outcomes, layout, job)

    def project(place: int, index: Index) -> Project:
        from lint_rules.analysis.project import Project  # a run served whole never needs it

        path = plan.files[place]
        view = Project(layout[place][1], index, facts.without(path) if facts else None)
        if settings[place].fix_strategy == "guard":
            view.guard_missing = guard_missing(settings[place].guard_import)
        return view

    missing: dict[str, str | None] = {}

    def guard_missing(guard: str) -> str | None:
        """The file of the run that is the guard's module, if its bytes never spell the
        guard's name (then no import of it can succeed)."""
        if guard not in missing:
            module, _, name = guard.rpartition(".")
            found = [p for p, names in module_names.items() if module in names]
            path = plan.files[found[0]] if len(found) == 1 else None
            missing[guard] = None
            if path is not None:
                from lint_rules.fileio import SourceError, read_regular

                try:  # never a FIFO (it could block) or a device
                    spelled = name.encode() in read_regular(path)
                except SourceError:
                    spelled = True
                missing[guard] = None if spelled else os.path.normpath(path)
        return missing[guard]

    def analyse(places: list[int], index: Index, first: bool = False) -> Iterator[None]:
        for place in places:  # analysed again in full: a kept first analysis is stale
            _let_go(kept.pop(place, None))
        projects = [project(p, index) for p in places]
        for view in projects:  # a first analysis made in this process can be kept
            view.keep = first and REJUDGE
        items = [(plan.files[p], settings[p], view) for p, view in zip(places, projects)]
        for place, view, outcome in zip(places, projects, parse(check_file, check, items, workers)):
            outcomes[place] = outcome
            if view.kept is not None:
                if len(kept) < KEPT_MAX and outcome.error is None:
                    kept[place] = view
                else:
                    _let_go(view)
            if first and on_parsed is not None:
                on_parsed()
            yield

    kept: dict[int, Project] = {}
    """First analyses whose verdicts read the run's facts, to be judged again with them."""

    def rejudged(places: list[int]) -> None:
        elsewhere = []  # kept by a worker: judged again there (``filework.rejudge_kept``)
        for place in places:
            view = kept.pop(place)
            assert facts is not None
            if view.kept is ELSEWHERE:
                elsewhere.append(place)
                continue
            view.lifecycle = facts.without(plan.files[place])
            outcomes[place] = rejudge_file(check, plan.files[place], settings[place], None, view)
            if view.kept is not None:  # it asked the run a question: judged once more
                kept[place] = view
        views = [project(p, index) for p in elsewhere]
        items = [(plan.files[p], settings[p], view) for p, view in zip(elsewhere, views)]
        for place, view, outcome in zip(
            elsewhere, views, parse(rejudge_kept, check, items, workers)
        ):
            outcomes[place] = outcome
            if view.kept is not None:  # kept by the worker again
                kept[place] = view

    def final(place: int) -> bool:
        """Whether the outcome at ``place`` is known and cannot depend on the index."""
        outcome = outcomes[place]
        if outcome is None or outcome.error is not None or place not in settings:
            return outcome is not None
        known = finals.get(place)
        found = outcome.project
        if known is None:
            known = finals[place] = found is not None and (
                not found.used
                and not found.keys
                and found.package == layout[place][1]
                and not any(reaches(name, every, ordered) for name in found.names)
            )
        return known

    finals: dict[int, bool] = {}

    def stale(place: int, index: Index, keys: list[str], changed: list[str] | None) -> bool:
        """Whether the file's outcome read entries of the index or facts of the run that
        changed (``changed``: the keys whose entries changed since the last look, when the
        file was up to date then with the same outcome: only those are looked up)."""
        outcome = outcomes[place]
        assert outcome is not None
        if outcome.error is not None:
            return False  # not parsed: nothing it could use
        found = outcome.project
        if changed is not None and found is not None and current.get(place) is outcome:
            if matched(found.names, changed) and index_stale(place, index, keys):
                del current[place]
                return True
        elif index_stale(place, index, keys):
            return True
        current[place] = outcome
        assert found is not None
        life = (
            lifecycle_digest(found.keys, facts.without(outcome.path))
            if facts and found.keys
            else ""
        )
        return found.life != life

    def index_stale(place: int, index: Index, keys: list[str]) -> bool:
        """Whether what the file read from the index changed (not only the run's facts)."""
        outcome = outcomes[place]
        assert outcome is not None
        found = outcome.project
        if found is None:
            return True
        used = used_digest(found.names, index, keys)
        return found.used != used or found.package != layout[place][1]

    # The first pass reads the exports of the files found in the cache: in an incremental run
    # a changed file that uses them is then analysed once, not twice.
    given = 0
    index: Index = {}
    facts: RunFacts | None = None  # the first pass shares them: known after it
    # The files that import TE go first: they define the TE subclasses and factories the
    # others use, which then see them in their first analysis instead of a second one.
    todo = [p for p in active if outcomes[p] is None]
    waves = [
        [p for p in todo if p in plan.te_importers],
        [p for p in todo if p not in plan.te_importers],
    ]
    waves = [wave for wave in waves if wave]
    for wave in waves:
        index = build_index(outcomes, module_names)
        for _ in analyse(wave, index, first=True):
            while checking and given < len(outcomes) and final(given):
                yield outcomes[given]  # type: ignore[misc]
                given += 1
    waiting = dict(plan.deferred)
    texts: dict[int, str] = {}

    def text_of(place: int) -> str:
        if place not in texts:
            from lint_rules.fileio import SourceError, read_source

            try:
                texts[place] = read_source(plan.files[place]).text
            except SourceError:
                texts[place] = "*"  # read again by the analysis, which reports it
        return texts[place]

    def answer_questions() -> None:
        """Answer what the verdicts asked of the run's files (``builds``), once each."""
        assert facts is not None
        asked = {key for place in active for key in facts.unanswered(_keys(outcomes[place]))}
        base = _run_digest(plan) if asked else None
        for key in sorted(asked):
            facts.answers[key] = _answer(key, answers, plan.cache, base)

    answers = builds.Answers(plan.files, job.gates, plan.raws)  # reads nothing until asked

    index = {}
    facts = run_facts(outcomes, active)
    gather_run(facts, outcomes, active, plan.files, job.gates, plan.raws)  # of unread files
    rounds = settling = 0
    current: dict[int, Outcome] = {}
    """The outcomes up to date with the index of the last look (``looked``), by place."""
    looked: Index | None = None
    while True:
        index = build_index(outcomes, module_names)
        through = needed(
            waiting, module_names, [outcomes[p] for p in active], index, text_of, job.gates
        )
        if through:  # the `__init__.py` that the names looked up so far go through
            for place in through:
                settings[place] = waiting.pop(place)
            active.extend(through)
            for _ in analyse(through, index):
                if on_parsed is not None:
                    on_parsed()
            continue
        answer_questions()
        keys = sorted(index)
        changed = None if looked is None else _changed(looked, index)
        again = [place for place in active if stale(place, index, keys, changed)]
        looked = index
        judge = [p for p in again if p in kept and not index_stale(p, index, keys)]
        if judge:  # only the run's facts changed: judge the kept analyses again
            rejudged(judge)
            continue
        if not again or rounds == MAX_ROUNDS:
            break
        # The files that export go first, until what they export settles: a file that only
        # uses the index is then analysed again once, not once per link of a chain.
        exporting = [p for p in again if _exports(outcomes[p]) or _is_init(plan.files[p])]
        if exporting and len(exporting) < len(again) and settling < SETTLE_MAX:
            settling += 1
            inits = {p for p in exporting if _is_init(plan.files[p])}
            again = upstream_first(exporting, outcomes, module_names, index, inits)
        else:
            rounds += 1
        for _ in analyse(again, index):
            pass
    for view in kept.values():  # not judged again: nothing changed for them
        _let_go(view)
    kept.clear()
    for place in waiting:  # read for nothing: done as a file the prefilter rules out
        outcomes[place] = plan.done[place] = Outcome(plan.files[place])
        if on_parsed is not None:
            on_parsed()
    if settled is not None:
        settled["view"] = lambda path, chosen: _view(path, chosen, modules, index, facts)
    if checking:
        yield from outcomes[given:]  # type: ignore[misc]
        return
    chosen = None if only is None else set(only)
    places = sorted(p for p in active if chosen is None or p in chosen)
    items = [(plan.files[p], settings[p], project(p, index)) for p in places]
    fixed = parse(work, job, items, workers)
    to_fix = set(places)
    for place, outcome in enumerate(plan.done):
        if place in to_fix:
            yield next(fixed)
        else:  # unread, or read for its facts only (``only``): nothing fixed
            yield outcome if outcome is not None else Outcome(plan.files[place])


def _run_digest(plan: Plan) -> Any:
    """Every file of the run by path and bytes, digested; None when the bytes of a file are
    unknown (it could not be read) or the run keeps no index."""
    digests = plan.digests
    if plan.cache is None or len(digests) != len(plan.files) or None in digests:
        return None
    text = repr(list(zip(plan.files, digests)))
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20)


def _answer(key: str, answers: Any, cache: Any, base: Any) -> Any:
    """The run's answer to a question (``builds``), kept in the project index under the
    question and every file of the run (``base``: ``_run_digest``): a run over unchanged
    files reads it instead of reading the files again."""
    if base is None or cache is None:
        return answers.answer(key)
    digest = base.copy()
    digest.update(b"\0" + key.encode("utf-8", "surrogatepass"))
    name = digest.hexdigest()
    known, found = cache.answer_of(name)
    if not known:
        found = answers.answer(key)
        cache.keep_answer(name, found)
    return found


def _nothing_passed(
    plan: Plan,
    roots: Sequence[str],
    on_parsed: Callable[[], None] | None,
    settled: dict[str, Any] | None,
) -> Iterator[Outcome]:
    """``run_crossfile`` where no file passed the prefilter: what the whole run gives then
    (the deferred ``__init__.py`` done unread, an empty index, no facts), without it
    (``analysis.unread``, which a face that needs no ``settled`` view calls directly)."""
    from lint_rules.analysis.unread import done_unread, outcomes

    done_unread(plan, on_parsed)
    if settled is not None:
        facts = run_facts(plan.done, [])
        settled["view"] = lambda path, chosen: _view(path, chosen, Modules(roots), {}, facts)
    yield from outcomes(plan)


def _view(
    path: str, settings: Any, modules: Modules, index: Index, facts: RunFacts | None
) -> Project:
    """The project a text at ``path`` is judged with: the run's index and the lifecycle facts
    of its other files (those of the file on disk left out)."""
    from lint_rules.analysis.project import Project

    return Project(modules.names(path)[1], index, facts.without(path) if facts else None)


def _changed(before: Index, after: Index) -> list[str]:
    """The keys whose entries differ between two indexes (added, gone or changed), sorted."""
    keys = {key for key, entry in after.items() if before.get(key) != entry}
    keys.update(key for key in before if key not in after)
    return sorted(keys)


def _keys(outcome: Outcome | None) -> tuple[str, ...]:
    return outcome.project.keys if outcome is not None and outcome.project else ()


def _exports(outcome: Outcome | None) -> bool:
    return bool(outcome is not None and outcome.project and outcome.project.exports)


def _is_init(path: str) -> bool:
    return os.path.basename(path) == "__init__.py"


def _own_packages(
    plan: Plan, outcomes: list[Outcome | None], layout: dict[int, Any], job: Job
) -> None:
    """A file served the result of the same bytes judged in another package (two
    ``__init__.py`` alike) gets the one the index keeps for its own package, when there is one
    (``store.ResultCache.variant``); else it is analysed again, and that result kept beside."""
    if plan.cache is None:
        return
    from lint_rules.analysis.records import keyed_digest

    for place, settings in plan.passed:
        outcome, digest = outcomes[place], plan.digests[place]
        if outcome is None or outcome.project is None or not digest:
            continue
        package = layout[place][1]
        if outcome.project.package == package:
            continue
        key = keyed_digest(digest, settings, job.disable_noqa)
        found = plan.cache.variant(key, plan.files[place], package)
        if found is not None and found.project is not None and found.project.package == package:
            outcomes[place] = plan.done[place] = found
