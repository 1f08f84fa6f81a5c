"""A run over several files where no file passed the prefilter (``Plan.passed`` is empty).

Then there is no index to build and no ``__init__.py`` to read: every file is done as the first
pass left it, the deferred packages' ``__init__.py`` done unread, as every file the prefilter
rules out. This module gives those outcomes without importing the run's machinery
(``analysis.run``: the index, the lifecycle facts, ``ast``), which such a run never uses: on a
tree that never spells the flag nor TE's package name (transformers, torch), that is every run.
"""

from __future__ import annotations

from lint_rules.analysis.records import Outcome

TYPE_CHECKING = False  # `typing` is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from lint_rules.analysis.plan import Plan


def done_unread(plan: Plan, on_parsed: Callable[[], None] | None) -> None:
    """Mark the deferred ``__init__.py`` of ``plan`` done unread (``on_parsed`` counts each)."""
    done, files = plan.done, plan.files
    for place, _ in plan.deferred:
        done[place] = Outcome.unread(files[place])
        if on_parsed is not None:
            on_parsed()


def outcomes(plan: Plan) -> Iterator[Outcome]:
    """Every file's outcome, in order, once nothing is left to read."""
    for outcome, path in zip(plan.done, plan.files):
        yield outcome if outcome is not None else Outcome.unread(path)


def nothing_passed(plan: Plan, on_parsed: Callable[[], None] | None = None) -> Iterator[Outcome]:
    """``analysis.run.run_crossfile`` of a plan where nothing passed, for a face that needs no
    view of the run afterwards (``settled``)."""
    done_unread(plan, on_parsed)
    yield from outcomes(plan)
