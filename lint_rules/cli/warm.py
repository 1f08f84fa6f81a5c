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

A run served so imports neither the analysis nor the first pass: its cost is the stat of each
file and reading the index. Runs judged with their project (without ``--isolated``), which read
files the run does not name, are always made in full.
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

    from lint_rules.analysis.records import Outcome
    from lint_rules.analysis.store import ResultCache
    from lint_rules.settings import Settings

KEY_FORMAT = 1
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
