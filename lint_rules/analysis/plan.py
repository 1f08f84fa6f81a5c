"""The first pass of a run over files: read each one, apply the core's byte prefilter
(``prefilter.Gates.mentions_flag``) and the result cache; what remains must be parsed (``Plan``).

Neither ``dataclasses`` nor ``typing`` is imported here (``Plan`` is a slotted record, ``Known``
a ``collections.namedtuple``): a run where no file passes the prefilter needs neither."""

from __future__ import annotations

import os
from collections import namedtuple

from lint_rules.analysis.records import Job, Outcome, bytes_digest, keyed_digest
from lint_rules.settings import Settings
from lint_rules.slotted import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from lint_rules.analysis.prefilter import Gates

Known = namedtuple("Known", ("flag", "reexport", "state", "te", "digest", "size"))
Known.__doc__ = """What the first pass learns of a file's bytes (the project index keeps it by
the file's stat, so that an unchanged file is not read again): the prefilter's answers
(``prefilter``: ``flag``, ``reexport``, ``state``, ``te``, bools), the digest of its bytes
(``digest``: "" in a run without the index, nothing reads it) and their ``size``. ``state``
(some line spells a state word) is asked only of a file that may re-export and fails the
prefilter: it decides whether the run reads that file for its facts (``Plan.deferred``). False
for any other: nothing reads it there, and searching every file's bytes lowered was a tenth of
a cold run on megatron-core."""


class Plan(Record):
    """The first pass: each file either done (an Outcome) or to parse (None)."""

    __slots__ = (
        "files",
        "done",
        "to_parse",
        "bytes_to_parse",
        "passed",
        "deferred",
        "te_importers",
        "started",
        "digests",
        "cache",
        "raws",
    )

    files: list[str]
    done: list[Outcome | None]
    to_parse: list[tuple[str, Settings]]
    bytes_to_parse: int
    passed: list[tuple[int, Settings]]
    """Every file that passed the prefilter (parsed now or found in the cache): its place."""
    deferred: list[tuple[int, Settings]]
    """Packages' ``__init__.py`` that fail the prefilter but import, and share no lifecycle
    fact (a run over several files): read for the index only if a file of the run imports
    from them (``analysis.run``)."""
    te_importers: set[int]
    """The places of the files to parse whose text imports TE (``analysis.run`` analyses
    them first)."""
    started: Any
    """The machine's CPU time when the first pass began (``default_cpus``)."""
    digests: list[str | None]
    """The digest of each file's bytes (``Known.digest``), None where it was not read."""
    cache: Any
    """The project index the plan read (``store.ResultCache``), for what the run keeps."""
    raws: dict[str, bytes]
    """The bytes the first pass of a run over several files read, by path, from the first
    file that passed on (``RAW_BYTES`` at most in all): what the run later asks of its files
    (``builds``, ``gather``) reads them here, not from the disk again. A run where nothing
    passes asks nothing, and keeps nothing."""

    def __init__(
        self,
        files: list[str],
        done: list[Outcome | None],
        to_parse: list[tuple[str, Settings]],
        bytes_to_parse: int,
        passed: list[tuple[int, Settings]] | None = None,
        deferred: list[tuple[int, Settings]] | None = None,
        te_importers: set[int] | None = None,
        started: Any = None,
        digests: list[str | None] | None = None,
        cache: Any = None,
        raws: dict[str, bytes] | None = None,
    ) -> None:
        self._fill(
            {
                "files": files,
                "done": done,
                "to_parse": to_parse,
                "bytes_to_parse": bytes_to_parse,
                "passed": [] if passed is None else passed,
                "deferred": [] if deferred is None else deferred,
                "te_importers": set() if te_importers is None else te_importers,
                "started": started,
                "digests": [] if digests is None else digests,
                "cache": cache,
                "raws": {} if raws is None else raws,
            }
        )


RAW_BYTES = 64 << 20
_INIT = "__init__.py"


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
    (``crossfile``), which checks that the index still answers the same (``analysis.run``)."""
    if not files:  # nothing to read: neither the prefilter nor the reader is imported
        return Plan([], [], [], 0, started=started)
    import gc

    collecting = gc.isenabled()
    gc.disable()  # the pass makes no cycle: no collection to run over every object so far
    try:
        return _plan(job, files, settings_of, cache, on_done, crossfile, started)
    finally:
        if collecting:
            gc.enable()


def _plan(
    job: Job,
    files: Sequence[str],
    settings_of: Callable[[str], Settings],
    cache: Any,
    on_done: Callable[[], None] | None,
    crossfile: bool,
    started: Any,
) -> Plan:
    from lint_rules.analysis.skim import skim

    done: list[Outcome | None] = []
    to_parse: list[tuple[str, Settings]] = []
    passed: list[tuple[int, Settings]] = []
    deferred: list[tuple[int, Settings]] = []
    te_importers: set[int] = set()
    digests: list[str | None] = []
    raws: dict[str, bytes] = {}
    room = RAW_BYTES  # what ``raws`` may still take (a run over several files only)
    # Kept from the first file that passes on (``Plan.raws``): a run that analyses nothing
    # asks nothing of its files, and keeping every file's bytes costs a page fault per 4 KB.
    keeping = False
    size = 0
    gates = job.gates
    indexed = cache is not None and gates.caches and (job.mode == "check" or crossfile)
    for path in files:
        outcome = None
        raw: bytes | None = None
        new_text = None
        known = cache.known(path) if indexed and job.mode != "stdout" else None
        if known is None:
            # A file the prefilter rules out is known from its bytes (``analysis.skim``): the
            # Known the usual reading would give. The digest only serves the index.
            skimmed = skim(path, gates) if job.mode != "stdout" else None
            identity: tuple[int, int, int, int] | None
            if skimmed is not None:
                raw, identity = skimmed
                reexport = _may_reexport(path, raw, gates)
                if not indexed and not (crossfile and reexport):
                    # Done, with nothing to remember: what the Known below would lead to.
                    digests.append("")
                    if keeping and len(raw) <= room:
                        raws[path] = raw
                        room -= len(raw)
                    done.append(Outcome.unread(path))
                    if on_done is not None:
                        on_done()
                    continue
                digest = bytes_digest(raw) if indexed else ""
                state = reexport and gates.mentions_state_bytes(raw)
                known = Known(False, reexport, state, False, digest, len(raw))
            else:
                from lint_rules.fileio import SourceError, read_source  # a file to read

                try:
                    source = read_source(path)
                except SourceError as error:
                    done.append(Outcome(path, error=error.reason))
                    digests.append(None)
                    if on_done is not None:
                        on_done()
                    continue
                text, identity, raw = source.text, source.identity, source.raw
                utf8 = source.encoding in ("utf-8", "utf-8-sig")  # searched without encoding
                flag, reexport = gates.mentions_flag(text), _may_reexport(path, text, gates)
                known = Known(
                    flag,
                    reexport,
                    (reexport and not flag)
                    and (gates.mentions_state_bytes(raw) if utf8 else gates.mentions_state(text)),
                    gates.imports_te(text),
                    bytes_digest(raw) if indexed else "",
                    len(raw),
                )
                new_text = text if job.mode == "stdout" else None
            if indexed:
                cache.remember(path, identity, known)
        digests.append(known.digest)
        relevant = known.flag
        if not relevant and not (crossfile and known.reexport):
            outcome = Outcome.unread(path) if new_text is None else Outcome(path, new_text=new_text)
        else:
            settings = settings_of(path)
            if indexed:
                outcome = cache.get(keyed_digest(known.digest, settings, job.disable_noqa), path)
                # a file judged alone is served only a result judged alone, a file of a
                # project only one judged with its project
                if outcome is not None and outcome.error is None and outcome.indexed != crossfile:
                    outcome = None
            if outcome is None and not relevant and not known.state:
                deferred.append((len(done), settings))
            else:
                passed.append((len(done), settings))
                keeping = crossfile
            if outcome is None and relevant:
                to_parse.append((path, settings))
                size += known.size
                if crossfile and known.te:
                    te_importers.add(len(done))
        if keeping and raw is not None and len(raw) <= room:
            raws[path] = raw
            room -= len(raw)
        done.append(outcome)
        if outcome is not None and on_done is not None:
            on_done()
    plan = Plan(list(files), done, to_parse, size, passed, deferred, te_importers, started)
    plan.digests, plan.cache, plan.raws = digests, cache if indexed else None, raws
    return plan


def _may_reexport(path: str, text: str | bytes, gates: Gates) -> bool:
    """A package's ``__init__.py`` that imports: in a run over several files it is analysed
    too, so that what it re-exports from the run's modules (``from .layers import MyLinear``)
    resolves where it is imported from the package. ``text``: its text, or its UTF-8 bytes."""
    if not path.endswith(_INIT) or os.path.basename(path) != _INIT:
        return False
    return gates.may_import(text)
