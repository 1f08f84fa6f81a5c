"""Markers that imply others: a ``realcode`` test is a ``slow`` one, so the quick tier
(``pytest -m "not slow"``) leaves it out and the full run (CI) keeps it.

Once the tests are collected, everything their imports made (torch's modules among them: over a
million objects) is moved out of the cyclic collector's reach (``gc.freeze``). Each automatic
full collection during the run then scans only what the tests make, instead of torch again and
again; nothing a test makes is frozen, so what ``test_no_cycles`` looks for is still found.
"""

from __future__ import annotations

import gc

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("realcode") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()
