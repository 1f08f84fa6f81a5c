"""Markers that imply others: a ``realcode`` test is a ``slow`` one, so the quick tier
(``pytest -m "not slow"``) leaves it out and the full run (CI) keeps it."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("realcode") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
