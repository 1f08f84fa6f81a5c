"""The version of the linter's own code that the result cache is kept under (``store``)."""

from __future__ import annotations

import os
import sys

try:  # the module behind hashlib.blake2b, without loading OpenSSL (a few ms at start-up)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules import __version__

__all__ = ["code_hash"]


def code_hash(root: str | None = None) -> str:
    """The linter's own code (the modules under ``root``, by default the package's), by
    module sizes and mtimes (cheap: a stat per module)."""
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The interpreter too: one checkout installed in two Pythons must not share results (a
    # file one of them cannot parse).
    digest = blake2b(f"{__version__} {sys.version}".encode(), digest_size=8)
    modules: list[str] = []
    _modules(root, modules)
    digest.update("".join(modules).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _modules(folder: str, found: list[str]) -> None:
    """``path:size:mtime;`` of every module under ``folder``, in the order of their names
    (a folder's modules, then each folder below it; links to folders are not followed)."""
    with os.scandir(folder) as entries:
        listed = sorted(entries, key=lambda entry: entry.name)
    below = []
    for entry in listed:
        if entry.name.endswith(".py"):
            info = entry.stat()
            found.append(f"{entry.path}:{info.st_size}:{info.st_mtime_ns};")
        elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
            below.append(entry.path)
    for path in below:
        _modules(path, found)
