"""Where a file's project is: the folder whose files share their lifecycle facts.

The ``project-root`` setting wins (relative to the configuration file that sets it); else the
nearest folder at or above the file holding ``pyproject.toml``, ``setup.cfg`` or ``.git`` (as
ruff and mypy find theirs); else the current directory, when the file is below it. A file
with none of these (outside the current directory, no marker above it) has no project: it is
judged alone and its verdicts stay provisional (``Root.alone`` says why).
"""

from __future__ import annotations

import os

from lint_rules.slotted import Frozen

TYPE_CHECKING = False  # `typing` is not imported at run time (a warm run is its start-up)
if TYPE_CHECKING:
    from typing import Any

MARKERS = ("pyproject.toml", "setup.cfg", ".git")

MAX_PROJECT_FILES = 20_000
"""A project with more Python files than this is not read: each file is judged alone."""


class Root(Frozen):
    """A file's project root (``path``, absolute) and what decided it (``reason``)."""

    __slots__ = ("path", "reason")

    path: str
    reason: str

    def __init__(self, path: str, reason: str) -> None:
        self._fill(locals())


def find_root(
    path: str,
    setting: str = "",
    config_file: str | None = None,
    markers: dict[str, Root | None] | None = None,
) -> Root | None:
    """The project root of the file at ``path`` (``setting``: the ``project-root`` value of its
    settings, relative to ``config_file``'s folder when it was set there, else to the current
    directory). ``markers``: the nearest folder holding a marker at or above each folder
    walked, for the next call of the same run (the files of a project share their walk up)."""
    full = os.path.abspath(path)
    if setting:
        base = os.path.dirname(config_file) if config_file else os.getcwd()
        root = os.path.normpath(os.path.join(base, os.path.expanduser(setting)))
        where = f" in {config_file}" if config_file else ""
        return Root(root, f"project-root = {setting!r}{where}")
    folder = full if os.path.isdir(full) else os.path.dirname(full)
    found = _marked(folder, {} if markers is None else markers)
    if found is not None:
        return found
    cwd = os.getcwd()
    if full == cwd or full.startswith(cwd.rstrip(os.sep) + os.sep):
        return Root(cwd, "the current directory (no pyproject.toml, setup.cfg or .git above)")
    return None


def _marked(folder: str, markers: dict[str, Root | None]) -> Root | None:
    """The nearest folder at or above ``folder`` holding a marker, or None; each folder walked
    is answered in ``markers``."""
    walked = []
    found = None
    while folder not in markers:
        walked.append(folder)
        for marker in MARKERS:
            if os.path.lexists(os.path.join(folder, marker)):
                found = Root(folder, f"nearest folder holding {marker}")
                break
        parent = os.path.dirname(folder)
        if found is not None or parent == folder:
            break
        folder = parent
    else:
        found = markers[folder]
    for seen in walked:
        markers[seen] = found
    return found


def root_of(path: str, settings: Any, markers: dict[str, Root | None] | None = None) -> Root | None:
    """``find_root`` with the ``project-root`` of ``settings`` (the file's): relative to the
    configuration file that set it, or to the current directory when given as a flag."""
    given = dict(settings.sources).get("project_root")
    base = None if given == "command line" else settings.config_file
    return find_root(path, settings.project_root, base, markers)


def shown_root(root: str) -> str:
    """How a project root is named to discovery and to the run: relative to the current
    directory when below it (the module names of its files follow)."""
    cwd = os.getcwd()
    below = root == cwd or root.startswith(cwd.rstrip(os.sep) + os.sep)
    return os.path.relpath(root) if below else root


def project_files(root: str, excludes: Any) -> list[str] | None:
    """The project's Python files (``excludes``: the exclude patterns of a path, as for
    ``cli.discovery.discover``), spelled as discovery finds them under ``shown_root``; None
    when the project cannot be listed or holds more than ``MAX_PROJECT_FILES`` files."""
    from lint_rules.cli.discovery import discover

    try:
        found = discover([shown_root(root)], excludes).files
    except (OSError, ValueError, RecursionError):
        return None
    return normal_files(found)


def normal_files(found: list[str]) -> list[str] | None:
    """``project_files`` from what discovery found."""
    if len(found) > MAX_PROJECT_FILES:
        return None
    return [os.path.normpath(f) for f in found]


NO_ROOT = (
    "judged alone: no project found (no pyproject.toml, setup.cfg or .git above the file, "
    "which is outside the current directory; set project-root)"
)
