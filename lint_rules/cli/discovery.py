"""File discovery: the files to process under the paths named, in a deterministic order."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Union

SOURCE_SUFFIXES = (".py", ".pyi")
SKIPPED_DIRS = frozenset({".venv", "venv", "__pycache__", "build", "dist", ".git", "node_modules"})
"""Never walked into (hidden directories neither); a file named explicitly is still read."""


@dataclass(frozen=True)
class ExcludePattern:
    """A glob and the directory it is relative to (the config file's, or the cwd for a flag).

    Like flake8: a pattern matches a file or directory by its name, or by its whole path once a
    pattern containing ``/`` is anchored at its directory (``fixtures/*`` from pyproject.toml
    excludes ``<project>/fixtures/...`` wherever the command runs from).
    """

    glob: str
    anchor: str

    @property
    def absolute(self) -> str | None:
        if "/" not in self.glob and os.sep not in self.glob:
            return None
        return os.path.normpath(os.path.join(self.anchor, self.glob)) + (
            os.sep if self.glob.endswith(("/", os.sep)) else ""
        )


Patterns = Union[Sequence[ExcludePattern], Callable[[str, bool], Sequence[ExcludePattern]]]
"""The patterns, or a function giving those that apply to a path (per-directory config)."""


def _excluded(path: str, patterns: Patterns, is_dir: bool = False) -> bool:
    if callable(patterns):
        patterns = patterns(path, is_dir)
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


@dataclass
class Discovery:
    """The files to process, in output order, and the paths that could not be explored."""

    files: list[str]
    errors: list[tuple[str, str]]


def discover(
    paths: Sequence[str], patterns: Patterns, force_exclude: bool = False
) -> Discovery:
    """Files under ``paths`` in a deterministic order (arguments in order, then names sorted).

    A directory is walked for ``*.py``/``*.pyi``, skipping hidden and tool directories and
    excluded paths, without following directory symlinks (no loops). A path named explicitly is
    always processed unless ``force_exclude`` (for pre-commit, which names every file).
    """
    found = Discovery(files=[], errors=[])
    seen: set[str] = set()

    def add(path: str) -> None:
        # Resolved, so that a symlink and its target are one file (never two writers).
        key = os.path.normcase(os.path.realpath(path))
        if key not in seen:
            seen.add(key)
            found.files.append(path)

    for root in paths:
        if os.path.isdir(root):
            if force_exclude and _forced_out(root, patterns, is_dir=True):
                continue
            _walk(root, patterns, add, found.errors)
        elif os.path.lexists(root):
            if not (force_exclude and _forced_out(root, patterns)):
                add(root)  # read_source names whatever is wrong with it
        else:
            found.errors.append((root, "does not exist"))
    return found


def _forced_out(path: str, patterns: Patterns, is_dir: bool = False) -> bool:
    relative = Path(os.path.relpath(os.path.abspath(path)))
    folders = relative.parts if is_dir else relative.parts[:-1]
    inside = ".." not in folders  # the skipped-directory names apply below the cwd only
    if inside and any(_skipped_dir(part) for part in folders if part != "."):
        return True
    return _excluded(path, patterns, is_dir=is_dir)


def _walk(
    root: str,
    patterns: Patterns,
    add: Callable[[str], None],
    errors: list[tuple[str, str]],
) -> None:
    """Depth first in name order, a directory's contents at its place among its siblings."""
    stack: list[Iterator[os.DirEntry[str]]] = []

    def enter(folder: str) -> None:
        try:
            with os.scandir(folder) as scan:
                stack.append(iter(sorted(scan, key=lambda entry: entry.name)))
        except OSError as error:
            errors.append((folder, f"cannot list directory: {error.strerror or error}"))

    enter(root)
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        path = entry.path
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file()
        except OSError:
            continue
        if is_dir:
            if not _skipped_dir(entry.name) and not _excluded(path, patterns, is_dir=True):
                enter(path)
        elif is_file and entry.name.endswith(SOURCE_SUFFIXES) and not _excluded(path, patterns):
            add(path)
