"""The typed records a run over files passes around: plain, picklable data that worker
processes return, the on-disk index stores and every face prints.

- ``Reported``: one finding as printed (columns, evidence with paths, fix edits).
- ``Indexed``: what a file tells the rest of its project (exports, lifecycle facts) and what
  its verdicts read from it (names, digests): set when the file was judged with its project.
- ``Outcome``: what processing one file gave (findings or an error; for ``fix``, what changed).
- ``Job``: what a worker needs besides the path and its settings.

Each is a ``slotted.Frozen`` record, not a dataclass: a warm run served from the cache builds
them without importing ``dataclasses`` (nor ``typing``, nor the prefilter).
"""

from __future__ import annotations

try:  # the module behind hashlib.blake2b, without loading OpenSSL (a few ms at start-up)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules.settings import Settings
from lint_rules.slotted import Frozen, replace

_new, _set = object.__new__, object.__setattr__

TYPE_CHECKING = False  # neither `typing` nor the prefilter at run time: a warm run needs neither
if TYPE_CHECKING:
    from typing import Any

    from lint_rules.analysis.prefilter import Gates


class Reported(Frozen):
    """A finding as printed: flake8 columns (UTF-8 bytes, 1-based) and character columns.

    ``fingerprint`` identifies the finding by its code and the text of its line (and which
    occurrence of that text it is), not by its line number, so that it survives edits above it.
    ``applicability`` is the fix's (``"safe"``/``"unsafe"``), or None without a fix.
    """

    __slots__ = (
        "path",
        "code",
        "message",
        "line",
        "column",
        "end_line",
        "end_column",
        "char_column",
        "end_char_column",
        "fixable",
        "applicability",
        "fingerprint",
        "verdict",
        "evidence",
        "fix_message",
        "edits",
        "together",
    )

    path: str
    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    char_column: int
    end_char_column: int
    fixable: bool
    applicability: str | None
    fingerprint: str
    verdict: str
    """The flag's lifecycle verdict (``stale``, ``conditional``, ``unverified``, ...)."""
    evidence: tuple[tuple[str, int, int, str], ...]
    """The flag's life, in reading order: ``(path, line, column, message)`` per step, the path
    always filled (the finding's own file when the step is there), line 0 for a remark with no
    place; columns 1-based characters in the finding's own file, else 1-based UTF-8 bytes."""
    fix_message: str
    """What the fix does (its note, else a generic line); "" without a fix."""
    edits: tuple[tuple[int, int, int, int, str], ...]
    """The fix's edits: ``(line, column, end_line, end_column, content)``, 1-based characters."""
    together: tuple[tuple[str, int, int], ...]
    """The findings whose fix is this one's (``Fix.together``: ``(code, line, column)``, the
    column 1-based UTF-8 bytes as ``column``): ``fix`` applies it only with all of them."""

    def __init__(
        self,
        path: str,
        code: str,
        message: str,
        line: int,
        column: int,
        end_line: int,
        end_column: int,
        char_column: int,
        end_char_column: int,
        fixable: bool,
        applicability: str | None = None,
        fingerprint: str = "",
        verdict: str = "",
        evidence: tuple[tuple[str, int, int, str], ...] = (),
        fix_message: str = "",
        edits: tuple[tuple[int, int, int, int, str], ...] = (),
        together: tuple[tuple[str, int, int], ...] = (),
    ) -> None:
        self._fill(locals())

    def moved(self, path: str) -> Reported:
        """The same finding for the same content at ``path`` (a renamed or copied file): its
        own steps of evidence name ``path`` too."""
        if path == self.path:
            return self
        steps = tuple((path if p == self.path else p, *rest) for p, *rest in self.evidence)
        return replace(self, path=path, evidence=steps)


class Indexed(Frozen):
    """A file judged with the other files of its project (``analysis.run``)."""

    __slots__ = ("exports", "names", "used", "life", "package", "facts", "keys")

    exports: tuple[tuple[str, Any], ...]
    """Its module-level TE subclasses and factories, ``(name, analysis.Export)``."""
    names: tuple[str, ...]
    """The project names its analysis looked up (what its findings may depend on)."""
    used: str
    """A digest of the index entries those names reached ("": none, as without an index)."""
    life: str
    """A digest of the lifecycle facts of the other files its verdicts read ("": none)."""
    package: str | None
    """The package its relative imports were resolved in."""
    facts: Any
    """Its lifecycle facts for the other files of the run (``analysis.facts.FileFacts``)."""
    keys: tuple[str, ...]
    """The state keys its verdicts read from the run, and the functions of the file that
    re-arm them (``fn:<name>``): what its findings depend on in the other files."""

    def __init__(
        self,
        exports: tuple[tuple[str, Any], ...] = (),
        names: tuple[str, ...] = (),
        used: str = "",
        life: str = "",
        package: str | None = None,
        facts: Any = None,
        keys: tuple[str, ...] = (),
    ) -> None:
        self._fill(locals())


class Outcome(Frozen):
    """What processing one file gave; built in a worker process, so plain picklable data.

    ``error_line``/``error_column`` locate a syntax error (1-based characters) when known.
    ``digest`` is the cache key of the content read (empty when nothing was parsed).
    ``project`` is set when the file was judged with its project, None when judged alone.
    """

    __slots__ = ("path", "__dict__")
    _fields = (
        "path",
        "findings",
        "error",
        "changed",
        "fixed",
        "notes",
        "diff",
        "new_text",
        "error_line",
        "error_column",
        "digest",
        "cacheable",
        "remaining",
        "unsafe",
        "added_imports",
        "project",
    )
    # Every field but ``path`` has a class-level default (``slotted``): the outcome of a file
    # done unread, most of a run, holds its path alone.

    path: str
    findings: tuple[Reported, ...] = ()
    error: str | None = None
    changed: bool = False
    fixed: int = 0
    notes: tuple[str, ...] = ()
    diff: str = ""
    new_text: str | None = None
    error_line: int | None = None
    error_column: int | None = None
    digest: str = ""
    cacheable: bool = False
    remaining: tuple[str, ...] = ()
    """``fix``: the codes of the findings left in the file (one entry per finding)."""
    unsafe: int = 0
    """``fix``: how many of those have an unsafe fix that was not asked for."""
    added_imports: tuple[str, ...] = ()
    """``fix``: the dotted guards whose import the fix added."""
    project: Indexed | None = None

    def __init__(
        self,
        path: str,
        findings: tuple[Reported, ...] = (),
        error: str | None = None,
        changed: bool = False,
        fixed: int = 0,
        notes: tuple[str, ...] = (),
        diff: str = "",
        new_text: str | None = None,
        error_line: int | None = None,
        error_column: int | None = None,
        digest: str = "",
        cacheable: bool = False,
        remaining: tuple[str, ...] = (),
        unsafe: int = 0,
        added_imports: tuple[str, ...] = (),
        project: Indexed | None = None,
    ) -> None:
        self._fill(locals())

    @classmethod
    def unread(cls, path: str) -> Outcome:
        """``Outcome(path)``, the outcome of a file done without a word (most files of a
        run: those the prefilter rules out), made without ``__init__``: an eighth of its
        instructions."""
        outcome = _new(cls)
        _set(outcome, "path", path)
        return outcome

    @property
    def indexed(self) -> bool:
        """Judged as a file of a project (its exports and names are known)."""
        return self.project is not None

    @property
    def reads_project(self) -> bool:
        """Whether its findings read anything from the other files of its project."""
        return self.project is not None and bool(self.project.used or self.project.life)


class Job(Frozen):
    """Everything a worker needs besides the path and its settings (pickled once per chunk)."""

    __slots__ = ("disable_noqa", "mode", "name_writes", "gates")

    disable_noqa: bool
    mode: str  # check | write | diff | verify (fix --check without --diff) | stdout
    name_writes: bool
    """``write``: the process that renames a fixed file into place says ``fixed PATH (N
    findings)`` on stderr before a Ctrl-C held back during the rename is let through."""
    gates: Gates
    """The text-level shortcuts of the run (``prefilter``; ``ON`` when not given): ``OFF``
    only in the test that every answer is the same without them."""

    def __init__(
        self,
        disable_noqa: bool = False,
        mode: str = "check",
        name_writes: bool = False,
        gates: Gates | None = None,
    ) -> None:
        if gates is None:  # the prefilter is loaded with the first Job, not with this module
            from lint_rules.analysis.prefilter import ON

            gates = ON
        self._fill(locals())


NOT_IN_CACHE_KEY = frozenset(
    {
        "select",
        "extend_select",
        "ignore",
        "extend_ignore",
        "enabled",
        "sources",
        "exclude",
        "extend_exclude",
        "config_file",
    }
)
"""Settings that never change a file's findings (``select``/``ignore`` filter them later)."""


def content_digest(settings: Settings, disable_noqa: bool, raw: bytes) -> str:
    """Cache key: the file's bytes and every setting that can change its findings."""
    return keyed_digest(bytes_digest(raw), settings, disable_noqa)


def bytes_digest(raw: bytes) -> str:
    """A file's bytes, digested (the project index keeps it by the file's stat)."""
    return blake2b(raw, digest_size=20).hexdigest()


def keyed_digest(raw_digest: str, settings: Settings, disable_noqa: bool) -> str:
    """``content_digest`` from the digest of the bytes (``bytes_digest``)."""
    digest = blake2b(raw_digest.encode("ascii"), digest_size=20)
    digest.update(settings_key(settings, disable_noqa))
    return digest.hexdigest()


_SETTINGS_KEYS: dict[tuple[int, bool], tuple[Settings, bytes]] = {}
"""``settings_key``'s answers by the settings' identity (the settings kept, so that the
identity is not reused): the files of a folder share one ``Settings``."""


def settings_key(settings: Settings, disable_noqa: bool) -> bytes:
    """The part of the cache key that the settings make (the same for every file they rule;
    ``Settings`` is frozen)."""
    known = _SETTINGS_KEYS.get((id(settings), disable_noqa))
    if known is not None and known[0] is settings:
        return known[1]
    from lint_rules.slotted import field_names

    values = [
        (name, getattr(settings, name))
        for name in field_names(settings)
        if name not in NOT_IN_CACHE_KEY
    ]
    key = repr((values, disable_noqa)).encode("utf-8", "backslashreplace")
    _SETTINGS_KEYS[(id(settings), disable_noqa)] = (settings, key)
    return key
