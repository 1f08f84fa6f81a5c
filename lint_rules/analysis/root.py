"""Where a file's project is: the folder whose files share their lifecycle facts.

The ``project-root`` setting wins (relative to the configuration file that sets it); else the
nearest folder at or above the file holding ``pyproject.toml``, ``setup.cfg`` or ``.git`` (as
ruff and mypy find theirs); else the current directory, when the file is below it. A file
with none of these (outside the current directory, no marker above it) has no project: it is
judged alone and its verdicts stay provisional (``Root.alone`` says why).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

MARKERS = ("pyproject.toml", "setup.cfg", ".git")


@dataclass(frozen=True)
class Root:
    """A file's project root (``path``, absolute) and what decided it (``reason``)."""

    path: str
    reason: str


def find_root(path: str, setting: str = "", config_file: str | None = None) -> Root | None:
    """The project root of the file at ``path`` (``setting``: the ``project-root`` value of its
    settings, relative to ``config_file``'s folder when it was set there, else to the current
    directory)."""
    full = os.path.abspath(path)
    if setting:
        base = os.path.dirname(config_file) if config_file else os.getcwd()
        root = os.path.normpath(os.path.join(base, os.path.expanduser(setting)))
        where = f" in {config_file}" if config_file else ""
        return Root(root, f"project-root = {setting!r}{where}")
    folder = full if os.path.isdir(full) else os.path.dirname(full)
    while True:
        for marker in MARKERS:
            if os.path.lexists(os.path.join(folder, marker)):
                return Root(folder, f"nearest folder holding {marker}")
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    cwd = os.getcwd()
    if full == cwd or full.startswith(cwd.rstrip(os.sep) + os.sep):
        return Root(cwd, "the current directory (no pyproject.toml, setup.cfg or .git above)")
    return None


def root_of(path: str, settings: Any) -> Root | None:
    """``find_root`` with the ``project-root`` of ``settings`` (the file's): relative to the
    configuration file that set it, or to the current directory when given as a flag."""
    given = dict(settings.sources).get("project_root")
    base = None if given == "command line" else settings.config_file
    return find_root(path, settings.project_root, base)


NO_ROOT = (
    "judged alone: no project found (no pyproject.toml, setup.cfg or .git above the file, "
    "which is outside the current directory; set project-root)"
)
