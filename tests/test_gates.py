"""Every text-level shortcut taken for speed sits behind ``analysis.prefilter.GATES``: with the
gates off, the whole catalogue and the lifecycle packages give the same findings (codes,
places, verdicts, evidence) and the same fixes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lint_rules.analysis import analyze_source, prefilter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from markers import read_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted((ROOT / "fixtures" / "catalogue").glob("*.py")) + sorted(
    (ROOT / "fixtures" / "lifecycle").rglob("*.py")
)


def _findings(text: str) -> list[tuple]:
    return [
        (f.code, f.line, f.col, f.message, f.verdict, f.evidence, f.fix)
        for f in analyze_source(text)
    ]


@pytest.fixture
def gates_off():
    prefilter.GATES = False
    try:
        yield
    finally:
        prefilter.GATES = True


def test_the_gates_are_on_by_default() -> None:
    assert prefilter.GATES is True


def test_catalogue_is_the_same_with_the_gates_off(gates_off) -> None:
    texts = {path.name: read_text(path) for path in CASES}
    prefilter.GATES = True
    on = {name: _findings(text) for name, text in texts.items()}
    prefilter.GATES = False
    off = {name: _findings(text) for name, text in texts.items()}
    assert sum(map(len, on.values())) > 100
    assert off == on


@pytest.mark.parametrize(
    "case", ["rearm_every_step", "rearm_under_fp8", "built_under_switch", "object_and_step"]
)
def test_a_run_over_a_package_is_the_same_with_the_gates_off(gates_off, case: str) -> None:
    """The run's own gates (the facts a file shares, where a class is built) as well."""
    from helpers import run_in_process

    args = ["check", "--no-cache", "--isolated", "-j", "1", "--output-format", "json", "model"]
    where = ROOT / "fixtures" / "lifecycle" / case
    prefilter.GATES = True
    on = run_in_process(args, where)
    prefilter.GATES = False
    off = run_in_process(args, where)
    assert (off.returncode, off.stdout) == (on.returncode, on.stdout)
    expected = {"rearm_every_step": 0, "rearm_under_fp8": 1, "built_under_switch": 2}
    expected["object_and_step"] = 4  # a re-arm and its caller that never spell "microbatch"
    expected = expected[case]
    assert on.stdout.count('"code":') == expected
