"""Which TE release a project runs: the ``te-version`` setting, else the project's own pins.

As ruff infers ``target-version`` from ``requires-python``, the release is read, when
``te-version`` is not set, from the nearest project above a file (the first folder holding a
``pyproject.toml``, a ``setup.cfg``, a ``setup.py`` or a ``requirements*.txt``):

- ``pyproject.toml``: ``[project] dependencies`` and ``optional-dependencies``;
- ``requirements*.txt`` (every such file of the folder, in name order);
- ``setup.cfg``: ``[options] install_requires`` and ``extras_require``;

and from the first requirement on ``transformer-engine`` (``transformer_engine``,
``transformer-engine[pytorch]``, ``transformer-engine-torch``...) found: ``==X.Y.Z`` or
``~=X.Y`` is that release; an upper bound (``<2.0``, ``<=1.13``) the newest known release it
allows; a lower bound alone, or no pin, the newest (``te.NEWEST``). Each folder is looked up
once per process.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys

from lint_rules.releases import NEWEST, Release, parse_release
from lint_rules.slotted import Frozen

_PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
_TE_REQUIREMENT = re.compile(
    r"^\s*transformer[-_.]?engine(?:[-_.]?(?:torch|cu\d+))?\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)",
    re.I,
)
_CLAUSE = re.compile(r"(?P<op>==|~=|<=|>=|<|>|!=)\s*(?P<version>[0-9][0-9a-zA-Z.*+!-]*)")
KNOWN_MINORS: dict[int, int] = {1: 13, 2: NEWEST[1]}
"""The newest minor release of each major the facts know (an upper bound picks below it)."""


class Inferred(Frozen):
    """The release a file's project uses, and where that was read (``--show-settings``)."""

    __slots__ = ("version", "source")

    version: str
    """``"1.13"``; ``""`` when nothing pins TE (the newest applies)."""
    source: str

    def __init__(self, version: str, source: str) -> None:
        self._fill(locals())


def release_of_spec(spec: str) -> Release | None:
    """The release a requirement's version clauses point at, or None (no clause that does)."""
    pinned = upper = None
    upper_inclusive = False
    for match in _CLAUSE.finditer(spec):
        op, text = match["op"], match["version"].rstrip(".*")
        release = parse_release(text)
        if release is None:
            continue
        if op in ("==", "~="):
            pinned = release
        elif op in ("<", "<="):
            upper, upper_inclusive = release, op == "<="
    if pinned is not None:
        return pinned
    if upper is None:
        return None
    if upper_inclusive:
        return upper
    major, minor = upper
    if minor > 0:
        return (major, minor - 1)
    below = major - 1
    return (below, KNOWN_MINORS.get(below, 0)) if below >= 1 else None


def _requirements(folder: str) -> list[tuple[str, str]]:
    """``(requirement, file)`` for every requirement the folder's project files declare."""
    found: list[tuple[str, str]] = []
    pyproject = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(pyproject):
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - 3.9/3.10 only
            import tomli as tomllib
        try:
            with open(pyproject, "rb") as handle:
                project = tomllib.load(handle).get("project", {})
        except (OSError, ValueError):
            project = {}
        if isinstance(project, dict):
            listed = list(project.get("dependencies", []) or [])
            for extra in (project.get("optional-dependencies", {}) or {}).values():
                listed.extend(extra if isinstance(extra, list) else [])
            found.extend((r, pyproject) for r in listed if isinstance(r, str))
    import glob  # only where a folder holds a project file

    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "requirements*.txt"))):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                found.extend((line, path) for line in handle)
        except OSError:
            continue
    setup_cfg = os.path.join(folder, "setup.cfg")
    if os.path.isfile(setup_cfg):
        import configparser

        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(setup_cfg, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            return found
        if parser.has_option("options", "install_requires"):
            lines = parser.get("options", "install_requires").splitlines()
            found.extend((line, setup_cfg) for line in lines)
        if parser.has_section("options.extras_require"):
            for _name, value in parser.items("options.extras_require"):
                found.extend((line, setup_cfg) for line in value.splitlines())
    return found


def _is_project(folder: str, names: list[str]) -> bool:
    """Whether ``folder`` (its entries: ``names``) holds a project file."""
    if any(name in names and os.path.isfile(os.path.join(folder, name)) for name in _PROJECT_FILES):
        return True
    return bool(fnmatch.filter(names, "requirements*.txt"))


def _entries(folder: str) -> list[str]:
    """The names in ``folder`` (one listing: each file of a project is then looked for by
    name, not with a system call each)."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _own_release(folder: str, names: list[str]) -> Inferred | None:
    """TE's own source tree (TransformerEngine and its forks, such as ROCm's) pins no TE: it
    says its release in ``build_tools/VERSION.txt`` beside the ``transformer_engine`` package."""
    if "transformer_engine" not in names or "build_tools" not in names:
        return None
    path = os.path.join(folder, "build_tools", "VERSION.txt")
    if not os.path.isdir(os.path.join(folder, "transformer_engine")) or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read(200).strip()
    except OSError:
        return None
    release = parse_release(text.split("+", 1)[0].split("dev", 1)[0].rstrip("."))
    if release is None:
        return None
    return Inferred(f"{release[0]}.{release[1]}", f"inferred from {path} (TE's own release)")


@functools.lru_cache(maxsize=1024)
def infer(folder: str) -> Inferred:
    """The TE release the project holding ``folder`` pins (the nearest project above it).
    A folder that is no project answers as its parent (cached too: the folders of a tree
    share their walk up, and each folder's files are listed once)."""
    current = os.path.abspath(folder)
    names = _entries(current)
    own = _own_release(current, names)
    if own is not None:
        return own
    if _is_project(current, names):
        for requirement, path in _requirements(current):
            match = _TE_REQUIREMENT.match(requirement)
            if match is None:
                continue
            release = release_of_spec(match["spec"])
            if release is not None:
                text = f"{release[0]}.{release[1]}"
                shown = requirement.split("#", 1)[0].strip()
                return Inferred(text, f"inferred from {path} ({shown})")
        return Inferred("", f"newest known ({NEWEST[0]}.{NEWEST[1]}): {current} pins no TE")
    parent = os.path.dirname(current)
    if parent == current:
        return Inferred("", f"newest known ({NEWEST[0]}.{NEWEST[1]}): no project pins TE")
    return infer(parent)
