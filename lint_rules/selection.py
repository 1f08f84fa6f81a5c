"""How configuration files and flags layer, as ruff layers them (docs/config.md).

A file's settings come from layers, applied in order: the files it ``extend``s (the farthest
first), the file itself, then the command line. For the rule selection each layer does, in
this order:

1. ``select``, when the layer sets it, *replaces* the codes enabled so far (so a ``--select``
   on the command line re-enables a code that a configuration file ignores);
2. ``extend-select`` adds codes;
3. ``ignore`` and ``extend-ignore`` remove codes (so ``--ignore`` on the command line adds to
   the configured ``ignore`` instead of replacing it).

Every other key: the last layer that sets it wins. Codes match by prefix (``TEM00`` is every
``TEM00x``), and ``ALL`` is every code.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from lint_rules.slotted import Frozen

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Callable

SELECTION_FIELDS = ("select", "extend_select", "ignore", "extend_ignore")


def matches(code: str, prefixes: Iterable[str]) -> bool:
    prefixes = tuple(prefixes)
    return "ALL" in prefixes or code.startswith(prefixes)


class Layer(Frozen):
    """One layer's selection keys (``select`` None: the layer does not set it)."""

    __slots__ = ("source", "select", "extend_select", "ignore", "extend_ignore")

    source: str
    select: tuple[str, ...] | None
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]
    extend_ignore: tuple[str, ...]

    def __init__(
        self,
        source: str,
        select: tuple[str, ...] | None = None,
        extend_select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (),
        extend_ignore: tuple[str, ...] = (),
    ) -> None:
        self._fill(locals())

    @classmethod
    def of(cls, source: str, values: dict[str, Any]) -> Layer:
        return cls(
            source,
            values.get("select"),
            tuple(values.get("extend_select", ())),
            tuple(values.get("ignore", ())),
            tuple(values.get("extend_ignore", ())),
        )


def resolve(layers: Iterable[Layer], codes: Iterable[str]) -> frozenset[str]:
    """The codes enabled after every layer (an empty ``select`` selects every code)."""
    known = tuple(codes)
    enabled = set(known)
    for layer in layers:
        if layer.select is not None:
            chosen = layer.select or ("ALL",)
            enabled = {code for code in known if matches(code, chosen)}
        enabled |= {code for code in known if matches(code, layer.extend_select)}
        dropped = (*layer.ignore, *layer.extend_ignore)
        enabled -= {code for code in known if dropped and matches(code, dropped)}
    return frozenset(enabled)


def per_file_ignored(settings: Any, path: str) -> frozenset[str]:
    """The codes ``per-file-ignores`` and ``extend-per-file-ignores`` leave out in ``path``, as
    ruff and flake8 match them: a glob is relative to the directory of the configuration file
    (else the current one) and matches the whole path, or the file name alone; ``*`` crosses
    ``/`` and ``**/`` may match no folder; ``!glob`` stands for the files ``glob`` does not
    match. Codes match by prefix, as in ``select``."""
    from fnmatch import fnmatchcase

    from lint_rules.rules import RULES

    root = settings.root or os.getcwd()
    absolute = Path(os.path.abspath(path)).as_posix()
    name = os.path.basename(absolute)
    dropped: set[str] = set()
    for glob, codes in (*settings.per_file_ignores, *settings.extend_per_file_ignores):
        negated = glob.startswith("!")
        pattern = glob[1:] if negated else glob
        full = Path(os.path.join(root, pattern)).as_posix()
        candidates = {full, full.replace("/**/", "/"), pattern}
        hit = any(fnmatchcase(absolute, c) for c in candidates) or fnmatchcase(name, pattern)
        if hit != negated:
            dropped.update(code for code in RULES if matches(code, codes))
    return frozenset(dropped)


def extend_chain(
    pyproject: Path,
    read_table: Callable[[Path], dict[str, Any] | None],
    error: Callable[[str], Exception],
) -> list[tuple[Path, dict[str, Any]]]:
    """``pyproject``'s table and those it ``extend``s: ``[(file, table), ...]``, the farthest
    base first. ``extend`` is a path relative to the directory of the file that names it."""
    chain: list[tuple[Path, dict[str, Any]]] = []
    seen: set[str] = set()
    current: Path | None = pyproject
    while current is not None:
        key = os.path.realpath(current)
        if key in seen:
            raise error(f"{current}: `extend` makes a cycle")
        seen.add(key)
        table = read_table(current)
        if table is None:
            if chain:
                raise error(f"{chain[-1][0]}: extend: {current} has no [tool.te-microbatch-lint]")
            return []
        table = dict(table)
        target = table.pop("extend", None)
        chain.append((current, table))
        if target is None:
            break
        if not isinstance(target, str):
            raise error(f"{current}: extend must be a path (a string), not {target!r}")
        current = Path(
            os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(current)), target))
        )
        if not current.is_file():
            raise error(f"{chain[-1][0]}: extend: {current} does not exist")
    chain.reverse()
    return chain


_LOOKALIKE = rb"^\s*\[\s*tool\s*\.\s*[\"']?(te[-_. ]?micro[-_. ]?batch[-_. ]?lint)"
"""A table header that may be ours, misspelt (compiled by the first file that may hold one)."""
TABLE_NAME = b"te-microbatch-lint"


_WARNED: set[str] = set()


def warn_lookalike(pyproject: Path, raw: bytes, table: str) -> None:
    """One line on stderr, once per file, for ``[tool.te_microbatch_lint]`` and the like."""
    name = lookalike_table(raw)
    if name is None or str(pyproject) in _WARNED:
        return
    _WARNED.add(str(pyproject))
    print(
        f"te-microbatch-lint: warning: {pyproject}: [tool.{name}] is not read; "
        f"the table is [{table}]",
        file=sys.stderr,
    )


def lookalike_table(raw: bytes) -> str | None:
    """The name of a table that looks like ours but is not (``[tool.te_microbatch_lint]``), or
    None: such a table is never read, so the faces warn about it once per file."""
    if b"icro" not in raw:
        return None
    for match in re.finditer(_LOOKALIKE, raw, re.I | re.M):
        if match.group(1) != TABLE_NAME:
            return match.group(1).decode("utf-8", "replace")
    return None
