"""The project index and result cache every face shares: findings of parsed files, keyed by
content, like ruff's, and each file's prefilter answers, keyed by its stat.

A file that passes the byte prefilter is parsed once per content: its findings (after
``# noqa``), what it tells its project (``records.Indexed``) or its syntax error are stored
under a hash of its bytes, its settings and ``--disable-noqa`` (``records.content_digest``).
Beside them, each file read is recorded by its stat (device, inode, size, modification time):
an unchanged file is not read again (``plan.Known``); a file modified in the last two seconds
is not recorded (a write within the same clock tick could keep size and time). A result judged
alone serves only a file judged alone, one judged with its project only a file of a project,
whose run then checks that what it read of the other files is unchanged (``analysis.run``).
All is in one JSON file per version of the linter's own code and per working directory,
``<cache dir>/<version>-<code hash>/<cwd hash>.json``, written whole and atomically (a
temporary file renamed): processes sharing it (flake8 ``-j``, two pre-commit runs) never
read a torn file. They run a project one at a time (``run_once``: a lock file beside it),
each reading what the one before wrote, so the project is analysed once; where no lock can
be taken, the last writer wins and the others' entries are only recomputed. The answers a
run gives to the questions of its verdicts (``builds``) are kept too, under the question and
every file of the run by path and bytes, and so are the findings of whole runs of ``check
--isolated`` (``runs``), under a digest of everything such a run reads (``cli.warm``). The
code hash (``codehash``) covers the size and mtime of every module of ``lint_rules``, so an
edited or upgraded linter never reads old results. Paths are not part of the key: a moved or
copied file hits too, its evidence named after it; the same bytes judged in two packages (two
alike ``__init__.py``) keep a result each (``variant``). Entries not used for 30 days are
dropped when the file is written. The directory is ``--cache-dir``, else
``$TE_MICROBATCH_LINT_CACHE_DIR``, else ``te-microbatch-lint`` in the user's cache directory
(``platformdirs``: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux), so nothing is written into
the project; it holds a ``CACHEDIR.TAG``. ``--no-cache`` turns it off. A cache that cannot be
read or written is ignored (the run is just not faster).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Iterator

try:  # the module behind hashlib.blake2b, without loading OpenSSL (a few ms at start-up)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules import __version__
from lint_rules.analysis.codehash import code_hash
from lint_rules.analysis.records import Indexed, Outcome, Reported
from lint_rules.slotted import field_names

TYPE_CHECKING = False  # `typing` is not imported at run time (a warm `check`)
if TYPE_CHECKING:
    from typing import Any

ENV_DIR = "TE_MICROBATCH_LINT_CACHE_DIR"
MAX_AGE_S = 30 * 24 * 3600
_FIELDS = [name for name in field_names(Reported) if name != "path"]
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# te-microbatch-lint result cache\n"


def _row(path: str, row: list[Any]) -> Reported:
    values = dict(zip(_FIELDS, row))
    for key in ("evidence", "edits", "together"):  # JSON gave lists: the dataclass holds tuples
        values[key] = tuple(tuple(step) for step in values.get(key, ()))
    values["evidence"] = tuple((str(step[0]) or path, *step[1:]) for step in values["evidence"])
    return Reported(path, **values)


def _stored(path: str, finding: Reported) -> list[Any]:
    """A finding as an entry holds it: its own file's steps of evidence without the path."""
    row = [getattr(finding, name) for name in _FIELDS]
    at = _FIELDS.index("evidence")
    row[at] = [["" if step[0] == path else step[0], *step[1:]] for step in finding.evidence]
    return row


def _indexed(raw: list[Any]) -> Indexed:
    exports, names, used, life, package, facts, keys = raw
    return Indexed(
        exports=tuple((str(row[0]), _export(row[1:])) for row in exports),
        names=tuple(map(str, names)),
        used=str(used),
        life=str(life),
        package=None if package is None else str(package),
        facts=None if facts is None else _facts(facts),
        keys=tuple(map(str, keys)),
    )


def _export(row: list[Any]) -> Any:
    """An ``analysis.Export`` (imported here: a run that hits no entry never loads the core)."""
    from lint_rules.analysis.exports import Export

    return Export(*row)


ENTRY_FIELDS = 4
"""An entry: when, error, findings, project (None: judged alone; else ``Indexed``'s fields:
exports, names, used, life, package, facts, keys). A finding's evidence in its own file is
stored without its path ("") and read back with the path of the file served: a renamed or
copied file's evidence names that file."""


STATS = "@stat"
"""The key of the project index by file (``ResultCache.stats``) in the cache file."""

STAT_FIELDS = 11

ANSWERS = "@answers"
"""The key of the run's answers (``ResultCache.answers``) in the cache file."""

RUNS = "@runs"
"""The key of the outcomes of whole runs (``ResultCache.runs``) in the cache file."""

RUNS_KEPT = 16
"""Whole runs kept at most (the last used), one per command (``keep_run``)."""
RACY_S = 2.0


class ResultCache:
    """Lookups during the run, one write at its end (atomic: a temporary file renamed)."""

    def __init__(self, directory: str) -> None:
        self.root = directory
        self.directory = os.path.join(directory, f"{__version__}-{code_hash()}")
        cwd = blake2b(os.path.realpath(os.getcwd()).encode(), digest_size=8).hexdigest()
        self.path = os.path.join(self.directory, f"{cwd}.json")
        self.entries: dict[str, list[Any]] = {}
        self.stats: dict[str, list[Any]] = {}
        """The project index by file: ``abspath -> [dev, ino, size, mtime_ns, *Known, when]``;
        a file whose stat still matches is not read again (``plan.Known``). A run with the
        text gates off uses none of it (``prefilter.Gates.caches``)."""
        self.answers: dict[str, list[Any]] = {}
        """The answers of runs to the questions of verdicts (``builds``): ``digest -> [when,
        answer]``, the digest of the question and of every file of the run, by path and bytes
        (``answer_of``)."""
        self.runs: dict[str, list[Any]] = {}
        """Whole runs of ``check`` (``warm``): ``key -> [when, files, [[place, findings,
        error]...], command]``, the key a digest of everything the run read, the command a
        digest of its paths, flags and settings (``warm.run_key``)."""
        self.dirty = False
        self.now = int(time.time())
        self._read: Any = None
        """The stat of the cache file when it was read (``run_once`` reads it again if it
        changed)."""
        self._held = 0
        self._read_file()

    def _read_file(self) -> None:
        self._read = _identity(self.path)
        loaded = _load(self.path)
        if isinstance(loaded, dict):
            stats = loaded.pop(STATS, None)
            answers = loaded.pop(ANSWERS, None)
            runs = loaded.pop(RUNS, None)
            self.entries = loaded
            if isinstance(runs, dict):
                self.runs = runs
            if isinstance(stats, dict):
                self.stats = stats
            if isinstance(answers, dict):
                self.answers = answers

    @contextlib.contextmanager
    def run_once(self) -> Iterator[None]:
        """Held around a project's run, then ``save``: processes sharing the index (flake8's
        ``-j`` workers, parallel pre-commit runs) run one at a time, and each reads what the
        previous one wrote (the file is read again if it changed and nothing is unsaved), so
        a project is analysed once, not once per process. Without ``fcntl`` (Windows), or where
        no lock file can be made, each process runs on its own (still correct)."""
        if self._held:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        handle = _lock(self.directory, self.path + ".lock")
        self._held = 1
        try:
            if not self.dirty and _identity(self.path) != self._read:
                self._read_file()
            yield
            self.save()
        finally:
            self._held = 0
            if handle is not None:  # let go first: a worker forked meanwhile shares it
                with contextlib.suppress(OSError, ImportError):
                    import fcntl

                    fcntl.flock(handle, fcntl.LOCK_UN)
                os.close(handle)

    def known(self, path: str) -> Any:
        """What the index knows of the bytes of the file at ``path`` (``plan.Known``), when
        its stat (device, inode, size, modification time) is the one recorded; else None."""
        record = self._record(path)
        if record is None:
            return None
        from lint_rules.analysis.plan import Known

        try:
            flag, reexport, state, te, digest, size = record[4:10]
            return Known(bool(flag), bool(reexport), bool(state), bool(te), str(digest), int(size))
        except (TypeError, ValueError):
            return None

    def digest_by_stat(self, path: str, absolute: str | None = None) -> str | None:
        """The digest of the bytes of the file at ``path`` (``records.bytes_digest``), when
        its stat is the one recorded (``known``: no other answer is decoded); else None.
        ``absolute``: ``os.path.abspath(path)``, when the caller has it."""
        record = self._record(path, absolute)
        digest = None if record is None else record[8]
        return digest if isinstance(digest, str) and digest else None

    def _record(self, path: str, absolute: str | None = None) -> list[Any] | None:
        """The index's record of the file at ``path`` (``absolute``: its absolute path, if
        known) when its stat is the one recorded (and it is a regular file), its time of use
        refreshed; else None."""
        record = self.stats.get(absolute or os.path.abspath(path))
        if not isinstance(record, list) or len(record) != STAT_FIELDS:
            return None
        try:
            info = os.stat(path)
        except OSError:
            return None
        same = record[:4] == [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]
        if not same or not stat.S_ISREG(info.st_mode) or not _is_time(record[10]):
            return None
        if self.now - record[10] > 86400:
            record[10] = self.now
            self.dirty = True
        return record

    def remember(self, path: str, identity: Any, known: Any) -> None:
        """Record what was read of a file under its stat (``identity``: the ``fileio``
        identity of the bytes read). A file modified in the last ``RACY_S`` seconds is not
        recorded: a write within the same clock tick could keep its size and time."""
        if identity is None or identity[3] < 0:
            return
        if identity[3] > (time.time() - RACY_S) * 1e9:
            return
        self.stats[os.path.abspath(path)] = [*identity, *known, self.now]
        self.dirty = True

    def answer_of(self, digest: str) -> tuple[bool, Any]:
        """``(True, answer)`` when the answer stored under ``digest`` is known, else
        ``(False, None)``: an answer is a tuple of ``findings.Evidence``, or None."""
        entry = self.answers.get(digest)
        if not isinstance(entry, list) or len(entry) != 2 or not _is_time(entry[0]):
            return False, None
        rows = entry[1]
        if rows is None:
            found = None
        else:
            from lint_rules.findings import Evidence

            try:
                found = tuple(_evidence(row, Evidence) for row in rows)
            except (TypeError, ValueError):
                return False, None
        if self.now - entry[0] > 86400:
            entry[0] = self.now
            self.dirty = True
        return True, found

    def keep_answer(self, digest: str, answer: Any) -> None:
        """Store a run's answer (``answer_of``)."""
        rows = None if answer is None else [[e.message, e.line, e.col, e.path] for e in answer]
        self.answers[digest] = [self.now, rows]
        self.dirty = True

    def get(self, digest: str, path: str) -> Outcome | None:
        entry = self.entries.get(digest)
        if not isinstance(entry, list) or len(entry) != ENTRY_FIELDS:
            return None
        when, error, rows, project = entry
        if not _is_time(when):
            return None
        try:
            if error is not None:
                message, line, column = error
                if not (isinstance(message, str) and _optional_int(line, column)):
                    return None
                return Outcome(path, error=message, error_line=line, error_column=column)
            if not all(_row_ok(row) for row in rows):
                return None
            found = tuple(_row(path, row) for row in rows)
            indexed = None if project is None else _indexed(project)
        except (TypeError, IndexError, ValueError, AttributeError, RecursionError):
            return None
        if self.now - when > 86400:
            entry[0] = self.now
            self.dirty = True
        return Outcome(path, findings=found, project=indexed)

    def put(self, outcome: Outcome) -> None:
        if not (outcome.cacheable and outcome.digest):
            return
        error = None
        if outcome.error is not None:
            error = [outcome.error, outcome.error_line, outcome.error_column]
        rows = [_stored(outcome.path, f) for f in outcome.findings]
        project = None
        if outcome.project is not None:
            found = outcome.project
            exports = [[name, *export] for name, export in found.exports]
            project = [exports, list(found.names), found.used, found.life, found.package]
            project += [found.facts, list(found.keys)]
        entry = [self.now, error, rows, project]
        key = outcome.digest
        old = self.entries.get(key)
        package = None if outcome.project is None else outcome.project.package
        if outcome.project is not None and _package_of(old) not in (package, _NO_PROJECT):
            # The same bytes in another package (two `__init__.py` alike): kept beside, not
            # in its place, or the two files would take turns being analysed again.
            key = _variant(key, package)
            old = self.entries.get(key)
        if isinstance(old, list) and old[1:] == _plain(entry)[1:]:
            return  # known already (as JSON gave it back): nothing to write
        self.entries[key] = _plain(entry)
        self.dirty = True

    def run_outcomes(self, key: str, files: list[str]) -> list[Outcome] | None:
        """The outcomes of the files with findings or a syntax error of a whole run over
        ``files`` kept under ``key`` (``keep_run``), in the order of the files (the others'
        outcomes say nothing), or None when none is kept (or it is not one this tool wrote)."""
        entry = self.runs.get(key)
        if not (isinstance(entry, list) and len(entry) == 4 and _is_time(entry[0])):
            return None
        _, count, found, _ = entry
        if count != len(files) or not isinstance(found, list):
            return None
        outcomes = []
        try:
            last = -1
            for place, rows, error in found:
                if not (isinstance(place, int) and last < place < count and (rows or error)):
                    return None
                if not all(_row_ok(row) for row in rows):
                    return None
                path, last = files[place], place
                if error is None:
                    outcomes.append(Outcome(path, findings=tuple(_row(path, r) for r in rows)))
                    continue
                message, line, column = error
                if rows or not (isinstance(message, str) and _optional_int(line, column)):
                    return None
                outcomes.append(Outcome(path, error=message, error_line=line, error_column=column))
        except (TypeError, IndexError, ValueError, AttributeError, RecursionError):
            return None
        if self.now - entry[0] > 86400:
            entry[0] = self.now
            self.dirty = True
        return outcomes

    def keep_run(self, key: str, outcomes: list[Outcome], command: str) -> None:
        """Keep the outcomes of a whole run of ``check`` (every file's findings, and its
        syntax errors) under ``key``, to be served by ``run_outcomes``, in place of the run
        kept for the same ``command`` (the files it read have changed since: it is not served
        again unless they change back, and each run holds every finding of its files). A run
        with another error (one without a place in the file: an internal error) is not
        kept."""
        found = []
        for place, outcome in enumerate(outcomes):
            error = None
            if outcome.error is not None:
                if outcome.error_line is None or outcome.findings:
                    return
                error = [outcome.error, outcome.error_line, outcome.error_column]
            if outcome.findings or error:
                rows = [_stored(outcome.path, f) for f in outcome.findings]
                found.append([place, rows, error])
        for old in [k for k, v in self.runs.items() if isinstance(v, list) and v[-1:] == [command]]:
            del self.runs[old]
        self.runs[key] = [self.now, len(outcomes), _plain(found), command]
        self.dirty = True

    def variant(self, digest: str, path: str, package: str | None) -> Outcome | None:
        """The result stored for these bytes judged in ``package``, when the one under
        ``digest`` (``get``) was judged in another package."""
        return self.get(_variant(digest, package), path)

    def save(self) -> None:
        if not self.dirty:
            return
        oldest = self.now - MAX_AGE_S
        kept: dict[str, Any] = {
            k: v
            for k, v in self.entries.items()
            if isinstance(v, list) and len(v) == ENTRY_FIELDS and _is_time(v[0]) and v[0] >= oldest
        }
        kept[STATS] = {
            k: v
            for k, v in self.stats.items()
            if isinstance(v, list) and len(v) == STAT_FIELDS and _is_time(v[-1]) and v[-1] >= oldest
        }
        kept[ANSWERS] = {
            k: v
            for k, v in self.answers.items()
            if isinstance(v, list) and len(v) == 2 and _is_time(v[0]) and v[0] >= oldest
        }
        runs = [
            (v[0], k)
            for k, v in self.runs.items()
            if isinstance(v, list) and len(v) == 4 and _is_time(v[0]) and v[0] >= oldest
        ]
        kept[RUNS] = {k: self.runs[k] for _, k in sorted(runs)[-RUNS_KEPT:]}
        import tempfile

        with contextlib.suppress(OSError, ValueError, TypeError, RecursionError):
            self._prepare()
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(kept, handle, separators=(",", ":"))
                os.replace(temp, self.path)
                self.dirty = False
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise

    def _prepare(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        for name, text in ((".gitignore", "*\n"), ("CACHEDIR.TAG", _TAG)):
            target = os.path.join(self.root, name)
            if os.path.lexists(target):
                continue
            # never through a symlink (a dangling one would create its target elsewhere)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            with contextlib.suppress(FileExistsError):
                fd = os.open(target, flags, 0o644)
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)


MAX_BYTES = 1 << 28
"""A cache file larger than this is not read (it is not one this tool wrote)."""


_TYPES: dict[str, type | tuple[type, ...]] = {
    "code": str, "message": str, "line": int, "column": int, "end_line": int,
    "end_column": int, "char_column": int, "end_char_column": int, "fixable": bool,
    "applicability": (str, type(None)), "fingerprint": str, "verdict": str, "evidence": list,
}  # fmt: skip


def _row_ok(row: Any) -> bool:
    """A stored finding with the fields and types of ``Reported`` (ints are not bools)."""
    return (
        isinstance(row, list)
        and len(row) == len(_FIELDS)
        and all(
            isinstance(value, _TYPES.get(name, object))
            and (name == "fixable" or not isinstance(value, bool))
            for name, value in zip(_FIELDS, row)
        )
    )


def _evidence(row: Any, evidence: Any) -> Any:
    """A stored step of an answer's evidence (``[message, line, col, path]``)."""
    message, line, col, path = row
    if not (isinstance(message, str) and _optional_int(line, col) and line is not None):
        raise ValueError(row)
    if col is None or not (path is None or isinstance(path, str)):
        raise ValueError(row)
    return evidence(message, line, col, path)


_NO_PROJECT = object()


def _package_of(entry: Any) -> Any:
    """The package an entry's file was judged in (``Indexed.package``), or ``_NO_PROJECT``
    for anything else (no entry, a file judged alone, an error)."""
    if not (isinstance(entry, list) and len(entry) == ENTRY_FIELDS):
        return _NO_PROJECT
    project = entry[3]
    return project[4] if isinstance(project, list) and len(project) == 7 else _NO_PROJECT


def _variant(digest: str, package: str | None) -> str:
    """The key of a result for ``digest``'s bytes judged in ``package`` (``put``)."""
    return f"{digest}@{package}"


def _optional_int(*values: Any) -> bool:
    return all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values)


def _is_time(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _identity(path: str) -> Any:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


LOCK_WAIT_S = 300.0
"""How long a process waits for another's run of the project before running its own."""


def _lock(directory: str, path: str) -> int | None:
    """An open descriptor of ``path`` holding its exclusive lock (None: no lock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.makedirs(directory, exist_ok=True)
        handle = os.open(path, flags, 0o600)
    except OSError:
        return None
    waited = 0.0
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if waited >= LOCK_WAIT_S:
                break
        except OSError:  # no locks on this file system
            break
        time.sleep(0.01)
        waited += 0.01
    os.close(handle)
    return None


def _load(path: str) -> Any:
    """The JSON at ``path``, or None for anything but a readable regular file (never a
    symlink, FIFO or device: reading one could block or never end) holding valid JSON."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def default_directory() -> str:
    """``te-microbatch-lint`` in the user's cache directory, as ``platformdirs`` knows it for
    each OS (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
    ``%LOCALAPPDATA%`` on Windows)."""
    import platformdirs

    return platformdirs.user_cache_dir("te-microbatch-lint", appauthor=False)


def open_cache(no_cache: bool, directory: str | None) -> ResultCache | None:
    if no_cache:
        return None
    return ResultCache(directory or os.environ.get(ENV_DIR) or default_directory())


def _plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples become lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _facts(raw: list[Any]) -> Any:
    """``FileFacts`` from its JSON form (lists for tuples)."""
    from lint_rules.analysis.facts import from_json

    return from_json(raw)
