"""TE releases as ``(major, minor)``: what ``te_release`` reads when it infers a project's
release, without the facts of ``te`` (nor ``dataclasses``): settings are found before any
analysis, and a warm run served whole (``cli.warm``) makes none."""

from __future__ import annotations

Release = tuple[int, int]
"""A TE release as ``(major, minor)``: ``(1, 13)``, ``(2, 20)``."""

NEWEST: Release = (2, 20)
"""The newest release the facts of ``te`` were read off (2.20.2): the default when a project
pins nothing (``te-version``)."""

OLDEST: Release = (1, 0)


def parse_release(text: str) -> Release | None:
    """``"1.13"``, ``"1.13.0"``, ``"2"`` (its first minor) -> ``(1, 13)``...; None if not one."""
    parts = text.strip().split(".")
    if not parts or not all(p.isdigit() for p in parts[:2]):
        return None
    major = int(parts[0])
    minor = int(parts[1]) if len(parts) > 1 else 0
    return (major, minor)
