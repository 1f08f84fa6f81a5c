"""The suite's tiers, and one speed-up of the whole run.

Tiers (README, "Quick start"): ``pytest -m "not slow"`` is the quick tier; plain ``pytest`` runs
everything but the ``long`` tier; ``pytest --long`` (what CI runs) runs every tier. Markers imply
others: a ``realcode`` test is a ``long`` one, and a ``long`` test is a ``slow`` one. The ``long``
tier is left out only when the run names no test itself: ``pytest tests/test_precommit.py``, a
``-m`` or ``-k`` expression, or ``--long``, runs what it names.

Once the tests are collected, everything their imports made (torch's modules among them: over a
million objects) is moved out of the cyclic collector's reach (``gc.freeze``). Each automatic
full collection during the run then scans only what the tests make, instead of torch again and
again; nothing a test makes is frozen, so what ``test_no_cycles`` looks for is still found.
"""

from __future__ import annotations

import gc

import pytest
from tiers import leaves_out_long

IMPLIED = (("realcode", "long"), ("long", "slow"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        help="also run the `long` tier (real code, pre-commit, whole commands): every test, "
        "as CI runs them",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker, implied in IMPLIED:
            if item.get_closest_marker(marker) and not item.get_closest_marker(implied):
                item.add_marker(getattr(pytest.mark, implied))
    if not leaves_out_long(config):
        return
    kept = [item for item in items if not item.get_closest_marker("long")]
    left = [item for item in items if item.get_closest_marker("long")]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
        config.stash[LEFT_OUT] = len(left)


LEFT_OUT = pytest.StashKey[int]()


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    left = config.stash.get(LEFT_OUT, 0)
    if left:
        terminalreporter.write_line(
            f"{left} tests of the long tier left out: `pytest --long` runs every tier (CI does)"
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()
