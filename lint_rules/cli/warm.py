"""A warm ``check``: a whole run served from the project index when nothing it read changed.

A run of ``check --isolated`` over files is a function of what it reads: the bytes of each
file, the settings of each (the part that can change a finding, ``records.settings_key``),
the paths as named and the working directory (module names, ``analysis.runindex.Modules``),
which folders are packages (an ``__init__.py``, in the run or excluded from it), and the
linter's own code and Python (the index is kept per version of both: ``codehash``).
``run_key`` digests all of it, each file's bytes by the digest the index recorded under the
file's stat (``store.ResultCache.digest_by_stat``: an unchanged stat, not re-read, as in the
first pass of every run); a file whose stat is not the one recorded (changed, new, or written
too recently to be trusted, ``store.RACY_S``) gives no key, and the run is made as usual.
The outcomes of a run made in full are kept under the key computed once it is done, from the
stats then (``keep``): a file changed while the run read it gives no key, so nothing is kept.

A run judged with its project (without ``--isolated``: ``check .``, ``check FILE``, the
pre-commit hooks) is, for each project, the run over the whole project that
``analysis.faces.ProjectJudge`` makes (``run.run_crossfile`` of the project's files, found by
``root.project_files``, under the project's root as ``root.shown_root`` names it), of which it
shows the files named. Its key (``project_key``) is the key above of each such run, over every
file of the project (a file a named one depends on through the project index is one of them;
a new or deleted module anywhere in the project changes the list), with the settings of each
file found again (the configuration files are read again: a ``pyproject.toml`` created,
deleted or edited in any folder between a file and the root changes the settings it gives,
which are in the key; so the TE release inferred from the project's requirements), the root
of each named file found again (a marker created above moves it) and the place of each named
file in its project. A file judged alone (no root, excluded from its project, a project too
large) gives no key. The project's files and settings are found before the run and again
after it (``Shape``): a run kept is one over which they did not change.

A run served so imports neither the analysis nor the first pass: its cost is the stat of each
file and reading the index (and, for a project run, listing the project's files, which
``check .`` of the project's root has done already).
"""

from __future__ import annotations

import os

try:  # the module behind hashlib.blake2b, without loading OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules.analysis.records import settings_key

TYPE_CHECKING = False  # `typing` is not imported at run time (a warm run is its start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from lint_rules.analysis.records import Outcome
    from lint_rules.analysis.root import Root
    from lint_rules.analysis.store import ResultCache
    from lint_rules.settings import Settings

KEY_FORMAT = 2
"""Changed when what the key digests changes (an old run is then never served)."""


def run_key(
    cache: ResultCache,
    files: Sequence[str],
    settings_of: Callable[[str], Settings],
    roots: Sequence[str],
    crossfile: bool,
    disable_noqa: bool,
) -> tuple[str, str] | None:
    """The digest of everything a ``check --isolated`` of ``files`` reads (the module's
    docstring), and the digest of the command alone (its paths, flags and settings: a run
    kept replaces the one kept before for the same command, which the files' changes made
    stale); None when a file's stat is not the one the index recorded."""
    digest = blake2b(digest_size=20)
    named = [(root, os.path.isdir(root)) for root in roots]
    cwd = os.getcwd()
    head = repr((KEY_FORMAT, cwd, named, crossfile, disable_noqa)).encode("utf-8", "surrogatepass")
    command = blake2b(head, digest_size=20)
    digest.update(head + b"\0%d" % len(files))
    kinds: dict[int, int] = {}
    chosen: list[Settings] = []  # held, so that no id is reused while the key is made
    folders: dict[str, None] = {}
    absolute: set[str] = set()
    rows: list[str] = []
    for path in files:
        full = os.path.normpath(os.path.join(cwd, path))  # ``abspath``, one getcwd
        known = cache.digest_by_stat(path, full)
        if known is None:
            return None
        settings = settings_of(path)
        kind = kinds.get(id(settings))
        if kind is None:
            kind = kinds[id(settings)] = len(chosen)
            chosen.append(settings)
            key = settings_key(settings, disable_noqa)
            digest.update(b"\1%d\0" % len(key) + key)
            command.update(b"\1%d\0" % len(key) + key)
        absolute.add(full)
        folders[os.path.dirname(full)] = None
        rows.append(f"\2{path}\0{known}\0{kind}")
    digest.update("".join(rows).encode("utf-8", "surrogatepass"))
    packages = _packages(folders, absolute)
    digest.update(repr(sorted(packages.items())).encode("utf-8", "surrogatepass"))
    return digest.hexdigest(), command.hexdigest()


def _packages(folders: dict[str, None], files: set[str]) -> dict[str, bool]:
    """Whether each folder of the run's files, and each folder above one that is a package,
    holds an ``__init__.py`` (what the module names of the files depend on)."""
    packages: dict[str, bool] = {}
    for folder in folders:
        while folder not in packages:
            init = os.path.join(folder, "__init__.py")
            packages[folder] = is_package = init in files or os.path.isfile(init)
            parent = os.path.dirname(folder)
            if not is_package or parent == folder:
                break
            folder = parent
    return packages


def served(
    cache: ResultCache,
    files: Sequence[str],
    settings_of: Callable[[str], Settings],
    roots: Sequence[str],
    crossfile: bool,
    disable_noqa: bool,
) -> list[Outcome] | None:
    """The outcomes of the files with findings of a run over ``files`` kept under its key
    (``keep``), in order, or None when no run is kept under it."""
    keys = run_key(cache, files, settings_of, roots, crossfile, disable_noqa)
    return None if keys is None else cache.run_outcomes(keys[0], list(files))


def keep(
    cache: ResultCache,
    files: Sequence[str],
    outcomes: list[Outcome],
    settings_of: Callable[[str], Settings],
    roots: Sequence[str],
    crossfile: bool,
    disable_noqa: bool,
) -> None:
    """Keep the outcomes of a run made in full over ``files`` (one each, in order), under the
    key of what it read, computed now (a file changed since the run read it gives no key:
    nothing is kept)."""
    if [outcome.path for outcome in outcomes] != list(files):
        return
    keys = run_key(cache, files, settings_of, roots, crossfile, disable_noqa)
    if keys is not None:
        cache.keep_run(keys[0], outcomes, keys[1])


class Shape:
    """What a run judged with its project reads besides the bytes of files: the root of each
    named file, each project's files (named files by the name given) and their settings.
    ``token``: all of it, as compared before and after a run; ``runs``: per project, its
    files and its root as named (what ``run_key`` digests); ``settings``: of each file;
    ``members``: each project's files by its root (the run made in full is given them, so
    that it reads the files the key was made of)."""

    __slots__ = ("token", "runs", "settings", "members")

    def __init__(
        self,
        token: bytes,
        runs: list[tuple[list[str], str]],
        settings: dict[str, Settings],
        members: dict[str, list[str]],
    ) -> None:
        self.token = token
        self.runs = runs
        self.settings = settings
        self.members = members


def project_shape(
    files: Sequence[str],
    settings_of: Callable[[str], Settings],
    excludes: Any,
    listed: tuple[str, list[str]] | None = None,
) -> Shape | None:
    """The ``Shape`` of a run judged with its project over ``files`` (``excludes``: the
    exclude patterns of a path); None when a file would be judged alone. ``listed``: a folder
    and the files discovery found under it, when found with the patterns ``project_files``
    uses (not listed again when it is a project's root as named)."""
    from lint_rules.analysis.root import normal_files, project_files, root_of, shown_root

    roots: dict[tuple[str, int], str] = {}
    own: dict[str, Settings] = {}  # each file's settings (held: no id is reused)
    markers: dict[str, Root | None] = {}
    projects: dict[str, tuple[list[str], dict[str, int]]] = {}
    rows = []
    cwd = os.getcwd()
    for path in files:
        settings = own[path] = settings_of(path)
        full = os.path.normpath(os.path.join(cwd, path))  # ``abspath``, one getcwd
        folder = (os.path.dirname(full), id(settings))
        root = roots.get(folder)
        if root is None:
            found = root_of(path, settings, markers)
            if found is None:
                return None
            root = roots[folder] = found.path
        project = projects.get(root)
        if project is None:
            shown = shown_root(root)
            if listed is not None and os.path.normpath(listed[0]) == shown:
                members = normal_files(listed[1])
            else:
                members = project_files(root, excludes)
            if members is None:
                return None
            places = {
                os.path.normcase(os.path.normpath(os.path.join(cwd, f))): n
                for n, f in enumerate(members)
            }
            project = projects[root] = (members, places)
        at = project[1].get(os.path.normcase(full))
        if at is None:  # excluded from its project, or named by another link: alone
            return None
        project[0][at] = path  # the files named go by the names they were given
        rows.append((path, root, at))
    runs = [(members, shown_root(root)) for root, (members, _) in projects.items()]
    kinds: dict[int, int] = {}
    chosen: list[Settings] = []
    seen = []
    for members, _ in runs:
        for path in members:
            settings = own[path] if path in own else own.setdefault(path, settings_of(path))
            kind = kinds.get(id(settings))
            if kind is None:
                kind = kinds[id(settings)] = len(chosen)
                chosen.append(settings)
            seen.append(kind)
    token = repr((cwd, rows, runs, seen, [s.config_file for s in chosen]))
    listing = {root: list(found) for root, (found, _) in projects.items()}
    return Shape(token.encode("utf-8", "surrogatepass"), runs, own, listing)


def project_key(
    cache: ResultCache,
    shape: Shape,
    paths: Sequence[str],
    disable_noqa: bool,
) -> tuple[str, str] | None:
    """``run_key`` for a run judged with its project (the module's docstring): the digest of
    its ``Shape`` and of each project's run, and of the command (``paths``: as named)."""
    digest = blake2b(b"project\0" + shape.token, digest_size=20)
    head = repr(("project", KEY_FORMAT, os.getcwd(), list(paths), disable_noqa))
    command = blake2b(head.encode("utf-8", "surrogatepass"), digest_size=20)
    for members, shown in shape.runs:
        keys = run_key(cache, members, shape.settings.__getitem__, [shown], True, disable_noqa)
        if keys is None:
            return None
        digest.update(keys[0].encode("ascii"))
        command.update(keys[1].encode("ascii"))
    return digest.hexdigest(), command.hexdigest()


def served_project(
    cache: ResultCache,
    files: Sequence[str],
    shape: Shape,
    paths: Sequence[str],
    disable_noqa: bool,
) -> list[Outcome] | None:
    """``served`` for a run judged with its project, of the ``Shape`` found before it."""
    keys = project_key(cache, shape, paths, disable_noqa)
    return None if keys is None else cache.run_outcomes(keys[0], list(files))


def keep_project(
    cache: ResultCache,
    files: Sequence[str],
    outcomes: list[Outcome],
    settings_of: Callable[[str], Settings],
    shape: Shape,
    paths: Sequence[str],
    disable_noqa: bool,
    excludes: Any,
) -> None:
    """``keep`` for a run judged with its project: kept when its ``Shape``, found again now,
    is the one found before the run (no module created or deleted, no root moved while it
    ran), under the key of the files' stats now."""
    if [outcome.path for outcome in outcomes] != list(files):
        return
    again = project_shape(files, settings_of, excludes)
    if again is None or again.token != shape.token:
        return
    keys = project_key(cache, again, paths, disable_noqa)
    if keys is not None:
        cache.keep_run(keys[0], outcomes, keys[1])
