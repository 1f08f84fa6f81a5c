"""The first pass of a run over files: read each one, apply the core's byte prefilter
(``analysis.mentions_flag``) and the result cache; what remains must be parsed (``Plan``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lint_rules.analysis.records import Job, Outcome, content_digest
from lint_rules.settings import Settings


@dataclass
class Plan:
    """The first pass: each file either done (an Outcome) or to parse (None)."""

    files: list[str]
    done: list[Outcome | None]
    to_parse: list[tuple[str, Settings]]
    bytes_to_parse: int
    passed: list[tuple[int, Settings]] = field(default_factory=list)
    """Every file that passed the prefilter (parsed now or found in the cache): its place."""
    deferred: list[tuple[int, Settings]] = field(default_factory=list)
    """Packages' ``__init__.py`` that fail the prefilter but import, and share no lifecycle
    fact (a run over several files): read for the index only if a file of the run imports
    from them (``cli.crossfile``)."""
    te_importers: set[int] = field(default_factory=set)
    """The places of the files to parse whose text imports TE (``cli.crossfile`` analyses
    them first)."""
    started: Any = None
    """The machine's CPU time when the first pass began (``default_cpus``)."""


def plan_files(
    job: Job,
    files: Sequence[str],
    settings_of: Callable[[str], Settings],
    cache: Any = None,
    on_done: Callable[[], None] | None = None,
    crossfile: bool = False,
    started: Any = None,
) -> Plan:
    """Read every file, apply the prefilter and the cache; what remains must be parsed.

    ``on_done`` is called for each file finished here (the progress bar counts it). A cached
    result that used the index of a run over several files serves only such a run
    (``crossfile``), which checks that the index still answers the same (``cli.crossfile``)."""
    if not files:  # nothing to read: neither the prefilter nor the reader is imported
        return Plan([], [], [], 0, started=started)
    from lint_rules.analysis import mentions_flag
    from lint_rules.analysis.prefilter import imports_te, mentions_state
    from lint_rules.fileio import SourceError, read_source

    done: list[Outcome | None] = []
    to_parse: list[tuple[str, Settings]] = []
    passed: list[tuple[int, Settings]] = []
    deferred: list[tuple[int, Settings]] = []
    te_importers: set[int] = set()
    size = 0
    for path in files:
        outcome = None
        try:
            source = read_source(path)
        except SourceError as error:
            outcome = Outcome(path, error=error.reason)
        else:
            text = source.text
            relevant = mentions_flag(text)
            if not relevant and not (crossfile and _may_reexport(path, text)):
                outcome = Outcome(path, new_text=source.text if job.mode == "stdout" else None)
            else:
                settings = settings_of(path)
                if cache is not None and (job.mode == "check" or crossfile):
                    digest = content_digest(settings, job.disable_noqa, source.raw)
                    outcome = cache.get(digest, path)
                    # a file judged alone is served only a result judged alone, a file of a
                    # project only one judged with its project
                    if outcome is not None and outcome.error is None and outcome.indexed != crossfile:
                        outcome = None
                if outcome is None and not relevant and not mentions_state(text):
                    deferred.append((len(done), settings))
                else:
                    passed.append((len(done), settings))
                if outcome is None and relevant:
                    to_parse.append((path, settings))
                    size += len(source.raw)
                    if crossfile and imports_te(text):
                        te_importers.add(len(done))
        done.append(outcome)
        if outcome is not None and on_done is not None:
            on_done()
    return Plan(list(files), done, to_parse, size, passed, deferred, te_importers, started)


def _may_reexport(path: str, text: str) -> bool:
    """A package's ``__init__.py`` that imports: in a run over several files it is analysed
    too, so that what it re-exports from the run's modules (``from .layers import MyLinear``)
    resolves where it is imported from the package."""
    return os.path.basename(path) == "__init__.py" and "import" in text
