"""File discovery: the files to process under the paths named, in a deterministic order.

Directories are walked for ``*.py``/``*.pyi`` in name order, skipping hidden and tool
directories, excluded paths and (unless ``respect_gitignore`` is off) what ``.gitignore``,
``.ignore`` and ``.git/info/exclude`` ignore, the way git reads them: each ignore file applies
below its own directory, the deepest file with a matching pattern decides, ``.ignore`` before
``.gitignore`` in one directory, and an ignored directory is not entered. The ignore files
above a named directory count too, up to the repository root (the nearest directory holding
``.git``), unless the named directory is itself ignored (then it is walked as if it were
not, like a file named explicitly; ``--force-exclude`` skips it). Patterns are matched by
``pathspec`` (``GitIgnoreSpec``), imported only for an ignore file with a pattern that is more
than names of files or folders (``_Names`` matches those the same way).
"""

from __future__ import annotations

import errno
import fnmatch
import os
from collections.abc import Iterator, Sequence
from operator import attrgetter
from pathlib import Path

from lint_rules.settings import ancestors
from lint_rules.slotted import Frozen, Record

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Callable, Union

SOURCE_SUFFIXES = (".py", ".pyi")
SKIPPED_DIRS = frozenset({".venv", "venv", "__pycache__", "build", "dist", ".git", "node_modules"})
"""Never walked into (hidden directories neither); a file named explicitly is still read."""
IGNORE_FILES = (".ignore", ".gitignore")
"""Read in each directory walked; the first listed wins when both match."""
_NAME = attrgetter("name")


class ExcludePattern(Frozen):
    """A glob and the directory it is relative to (the config file's, or the cwd for a flag).

    Like flake8: a pattern matches a file or directory by its name, or by its whole path once a
    pattern containing ``/`` is anchored at its directory (``fixtures/*`` from pyproject.toml
    excludes ``<project>/fixtures/...`` wherever the command runs from).
    """

    __slots__ = ("glob", "anchor")

    glob: str
    anchor: str

    def __init__(self, glob: str, anchor: str) -> None:
        self._fill(locals())

    @property
    def absolute(self) -> str | None:
        if "/" not in self.glob and os.sep not in self.glob:
            return None
        return os.path.normpath(os.path.join(self.anchor, self.glob)) + (
            os.sep if self.glob.endswith(("/", os.sep)) else ""
        )


if TYPE_CHECKING:  # for annotations only (``typing`` is not imported at run time)
    Patterns = Union[Sequence[ExcludePattern], Callable[[str, bool], Sequence[ExcludePattern]]]
    """The patterns, or a function giving those that apply to a path (per-directory config)."""


def _per_directory(patterns: Patterns) -> Patterns:
    """The same patterns, asked once per directory (a configuration applies per directory)."""
    if not callable(patterns):
        return patterns
    known: dict[tuple[str, bool], Sequence[ExcludePattern]] = {}

    def lookup(path: str, is_dir: bool) -> Sequence[ExcludePattern]:
        key = (os.path.dirname(path), is_dir)
        found = known.get(key)
        if found is None:
            found = known[key] = tuple(patterns(path, is_dir))
        return found

    return lookup


def _excluded(path: str, patterns: Patterns, is_dir: bool = False) -> bool:
    if callable(patterns):
        patterns = patterns(path, is_dir)
    if not patterns:
        return False
    name = os.path.basename(os.path.normpath(path))
    absolute = os.path.abspath(path)
    candidates = [absolute, absolute + os.sep] if is_dir else [absolute]
    for pattern in patterns:
        if name not in ("", ".", "..") and fnmatch.fnmatch(name, pattern.glob):
            return True
        anchored = pattern.absolute
        if anchored is not None and any(fnmatch.fnmatch(c, anchored) for c in candidates):
            return True
    return False


def _skipped_dir(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIRS


# ------------------------------------------------------------------------------- ignore files


class _IgnoreFile(Frozen):
    __slots__ = ("base", "spec")

    base: str  # absolute directory the patterns are relative to
    spec: Any  # pathspec.GitIgnoreSpec, or _Names

    def __init__(self, base: str, spec: Any) -> None:
        self._fill(locals())


def _read_ignore(path: str, base: str) -> _IgnoreFile | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        return None
    names = _Names.of(lines)
    if names is not None:
        return _IgnoreFile(base, names)
    import pathspec

    return _IgnoreFile(base, pathspec.GitIgnoreSpec.from_lines(lines))


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+~*?")


class _Names:
    """An ignore file whose patterns only name files or folders (``build/``, ``*.egg-info/``,
    ``.venv/``, ``*.pyc``, ``benchmarks/results/``, ``/dist``: each part letters, digits,
    ``._-+~``, ``*`` and ``?``; no ``**``, no negation), matched here as
    ``pathspec.GitIgnoreSpec`` matches them, without importing pathspec: its import was a sixth
    of a cold run over torch in a virtual environment inside a git checkout
    (``tests/test_skim.py`` holds the two to the same answers). A pattern with a ``/`` but at
    its end is anchored where the ignore file is; one without matches a name at any depth. A
    path is ignored where a pattern matches it or a folder above it (a pattern ending in ``/``:
    a folder only); with no negation, the last match cannot differ from the first."""

    __slots__ = ("patterns",)

    def __init__(self, patterns: list[tuple[list[str], bool, bool]]) -> None:
        self.patterns = patterns  # (globs of the parts, anchored, folders only)

    @classmethod
    def of(cls, lines: list[str]) -> _Names | None:
        """The patterns of ``lines``, or None where one is not that simple (pathspec then)."""
        patterns = []
        for line in lines:
            if not line or line.startswith("#"):
                continue
            glob = line[:-1] if line.endswith("/") else line
            anchored = "/" in glob
            parts = (glob[1:] if glob.startswith("/") else glob).split("/")
            for part in parts:
                if not part.strip(".") or "**" in part or not _NAME_CHARS.issuperset(part):
                    return None  # a space, an escape, a class, a negation: pathspec
            patterns.append((parts, anchored, glob != line))
        return cls(patterns)

    def include(self, relative: str) -> bool | None:
        """True where ``relative`` (a folder ends with ``/``) is ignored, else None."""
        parts = relative.split("/")
        folder = not parts[-1]
        if folder:
            parts.pop()
        match = fnmatch.fnmatchcase
        for globs, anchored, folders_only in self.patterns:
            if anchored:
                size = len(globs)
                if size > len(parts) or not all(map(match, parts, globs)):
                    continue
                if size < len(parts) or folder or not folders_only:
                    return True
                continue
            glob = globs[0]
            last = len(parts) - 1
            for at, part in enumerate(parts):
                if match(part, glob) and (at < last or folder or not folders_only):
                    return True
        return None


def _ignore_files_in(folder: str, names: Sequence[str] | None = None) -> list[_IgnoreFile]:
    """The ignore files of one directory, the one that wins first."""
    found = []
    for name in IGNORE_FILES:
        if names is not None and name not in names:
            continue
        spec = _read_ignore(os.path.join(folder, name), folder)
        if spec is not None:
            found.append(spec)
    return found


def repository_root(start: str) -> str | None:
    """The nearest directory at or above ``start`` that holds ``.git`` (a folder or a file)."""
    return next((f for f in ancestors(start) if os.path.exists(os.path.join(f, ".git"))), None)


def _inherited(folder: str) -> list[_IgnoreFile]:
    """Ignore files that apply to ``folder``'s contents from above it, deepest first."""
    folder = os.path.abspath(folder)
    root = repository_root(folder)
    if root is None:
        return []
    chain = []
    current = os.path.dirname(folder)
    while current.startswith(root) and len(current) >= len(root):
        chain.extend(_ignore_files_in(current))
        if current == root:
            break
        current = os.path.dirname(current)
    exclude = _read_ignore(os.path.join(root, ".git", "info", "exclude"), root)
    if exclude is not None:
        chain.append(exclude)
    return chain


def _ignored(path: str, is_dir: bool, specs: Sequence[_IgnoreFile]) -> bool:
    """Whether the deepest ignore file with a pattern for ``path`` ignores it."""
    absolute = os.path.abspath(path)
    for ignore in specs:
        prefix = ignore.base.rstrip(os.sep) + os.sep
        if not absolute.startswith(prefix):
            continue
        relative = absolute[len(prefix) :]
        if os.sep != "/":  # pragma: no cover - Windows
            relative = relative.replace(os.sep, "/")
        include = _check(ignore.spec, relative + "/" if is_dir else relative)
        if include is not None:
            return include
    return False


def _check(spec: Any, relative: str) -> bool | None:
    """The last pattern of ``spec`` that matches decides: ignored, re-included, or no match."""
    if isinstance(spec, _Names):
        return spec.include(relative)
    check = getattr(spec, "check_file", None)  # pathspec >= 0.12.1
    if check is not None:
        include = check(relative).include
        return None if include is None else bool(include)
    for pattern in reversed(spec.patterns):
        if pattern.include is not None and pattern.match_file(relative) is not None:
            return bool(pattern.include)
    return None


def _ignored_from_above(path: str, is_dir: bool) -> bool:
    """For a path named on the command line: is it, or a directory above it, ignored?"""
    absolute = os.path.abspath(path)
    root = repository_root(absolute)
    if root is None:
        return False
    parts = Path(os.path.relpath(absolute, root)).parts
    current = root
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        last = index == len(parts) - 1
        if _ignored(current, is_dir or not last, _inherited(current)):
            return True
    return False


# ---------------------------------------------------------------------------------- discovery


class Discovery(Record):
    """The files to process, in output order; the paths that could not be explored; notes."""

    __slots__ = ("files", "errors", "notes")

    files: list[str]
    errors: list[tuple[str, str]]
    notes: list[tuple[str, str]]

    def __init__(
        self,
        files: list[str],
        errors: list[tuple[str, str]],
        notes: list[tuple[str, str]] | None = None,
    ) -> None:
        self._fill({"files": files, "errors": errors, "notes": [] if notes is None else notes})


def discover(
    paths: Sequence[str],
    patterns: Patterns,
    force_exclude: bool = False,
    respect_gitignore: bool = True,
) -> Discovery:
    """Files under ``paths`` in a deterministic order (arguments in order, then names sorted).

    A directory is walked without following directory symlinks (no loops); a symlink to a
    file is followed when named or when its target is inside the walked directory (else
    skipped with a note); a file with two names goes by the one that is not a symlink, the
    other is skipped with a note. A path named explicitly is always processed unless
    ``force_exclude`` (for pre-commit, which names every file); a named file that is not
    ``*.py``/``*.pyi`` is skipped with a note.
    """
    found = Discovery(files=[], errors=[])
    seen: dict[str, str] = {}
    links: set[str] = set()  # names in ``seen`` that are symlinks

    def add(path: str, key: str | None = None, link: bool = False) -> None:
        # Resolved, so that a symlink and its target are one file (never two writers).
        key = os.path.normcase(key or os.path.realpath(path))
        first = seen.get(key)
        if first is None:
            seen[key] = path
            found.files.append(path)
            if link:
                links.add(path)
        elif first in links and not link:
            # The file goes by its real name, not by an alias found earlier.
            seen[key] = path
            found.files.remove(first)
            found.files.append(path)
            found.notes.append((first, f"skipped: the same file as {path}"))
        elif first != path:
            found.notes.append((path, f"skipped: the same file as {first}"))

    patterns = _per_directory(patterns)
    for root in paths:
        if os.path.isdir(root):
            if force_exclude and _forced_out(root, patterns, True, respect_gitignore):
                continue
            inherited = _inherited(root) if respect_gitignore else []
            if inherited and _ignored_from_above(root, True):
                inherited = []  # an ignored directory named explicitly is walked, as a file is
            _walk(root, patterns, add, found, inherited, respect_gitignore)
        elif os.path.lexists(root):
            if force_exclude and _forced_out(root, patterns, False, respect_gitignore):
                continue
            if root.endswith(SOURCE_SUFFIXES):
                add(root, None, os.path.islink(root))  # read_source names what is wrong with it
            else:
                found.notes.append((root, "skipped: not a Python file (*.py, *.pyi)"))
        else:
            found.errors.append((root, "does not exist"))
    return found


def _forced_out(path: str, patterns: Patterns, is_dir: bool, respect_gitignore: bool) -> bool:
    relative = Path(os.path.relpath(os.path.abspath(path)))
    folders = relative.parts if is_dir else relative.parts[:-1]
    inside = ".." not in folders  # the skipped-directory names apply below the cwd only
    if inside and any(_skipped_dir(part) for part in folders if part != "."):
        return True
    if _excluded(path, patterns, is_dir=is_dir):
        return True
    return respect_gitignore and _ignored_from_above(path, is_dir)


def _walk(
    root: str,
    patterns: Patterns,
    add: Callable[[str, str | None, bool], None],
    found: Discovery,
    inherited: list[_IgnoreFile],
    respect_gitignore: bool,
) -> None:
    """Depth first in name order, a directory's contents at its place among its siblings.

    Each directory is resolved once (``realpath``); a file's identity is its name in it, or
    its own ``realpath`` when it is a symlink. A symlink to a file outside ``root`` is skipped
    with a note, so that ``fix`` never writes outside the tree it was asked to walk.
    """
    errors = found.errors
    top = os.path.realpath(root)
    # A folder on the stack: its entries left, the ignore files that apply in it, its real
    # path with a separator (its entries' identities), and the exclude patterns of its files
    # and of its folders (asked once per folder, when the first entry of each kind needs them).
    stack: list[tuple[Iterator[os.DirEntry[str]], list[_IgnoreFile], str, list[Any]]] = []

    def enter(folder: str, specs: list[_IgnoreFile], real: str | None = None) -> None:
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=_NAME)
        except OSError as error:
            errors.append((folder, f"cannot list directory: {error.strerror or error}"))
            return
        if respect_gitignore:
            names = {entry.name for entry in entries if entry.name in IGNORE_FILES}
            if names:
                specs = [*_ignore_files_in(os.path.abspath(folder), sorted(names)), *specs]
        real = real or os.path.realpath(folder)
        prefix = real if real.endswith(os.sep) else real + os.sep  # ``os.path.join(real, ...)``
        stack.append((iter(entries), specs, prefix, [None, None]))

    def excludes(path: str, is_dir: bool, known: list[Any]) -> Sequence[ExcludePattern]:
        """The patterns for the files (or the folders) of one folder, ``path`` one of them."""
        found = known[is_dir]
        if found is None:
            found = known[is_dir] = patterns(path, is_dir) if callable(patterns) else patterns
        return found

    enter(root, inherited)
    while stack:
        entries, specs, prefix, known = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        name = entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            # (``is_file`` follows a symlink: asked only of a source file's name)
            is_file = not is_dir and name.endswith(SOURCE_SUFFIXES) and entry.is_file()
        except OSError as error:
            if error.errno == errno.ELOOP and name.endswith(SOURCE_SUFFIXES):
                errors.append((entry.path, "symlink loop (too many levels of symbolic links)"))
            continue
        if is_dir:
            if _skipped_dir(name):
                continue
            path = entry.path
            excluded = excludes(path, True, known)
            if excluded and _excluded(path, excluded, is_dir=True):
                continue
            if not (specs and _ignored(path, True, specs)):  # not a symlink: its real path is
                enter(path, specs, prefix + name)  # known without a lstat
        elif is_file:
            path = entry.path
            excluded = excludes(path, False, known)
            if (excluded and _excluded(path, excluded)) or (specs and _ignored(path, False, specs)):
                continue
            if not entry.is_symlink():
                add(path, prefix + name, False)
                continue
            target = os.path.realpath(path)
            if os.path.commonpath([top, target]) != top:
                found.notes.append((path, f"skipped: symlink to a file outside {root}"))
                continue
            if _skipped_target(top, target, patterns, respect_gitignore):
                found.notes.append((path, "skipped: symlink to a file the walk skips"))
                continue
            add(path, target, True)


def _skipped_target(top: str, target: str, patterns: Patterns, respect_gitignore: bool) -> bool:
    """Whether the walk would skip ``target`` (a symlink's target inside the tree ``top``) by
    its own path: under a skipped directory (``.venv``, hidden), excluded, or ignored."""
    relative = Path(os.path.relpath(target, top))
    current = top
    for part in relative.parts[:-1]:
        current = os.path.join(current, part)
        if _skipped_dir(part) or _excluded(current, patterns, is_dir=True):
            return True
    if _excluded(target, patterns):
        return True
    # an ignored directory named explicitly is walked as if it were not: so are its links
    return (
        respect_gitignore
        and _ignored_from_above(target, False)
        and not _ignored_from_above(top, True)
    )
