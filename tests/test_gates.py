"""Every text-level shortcut taken for speed sits in ``analysis.prefilter``, behind one switch
passed into the analysis and the run (``gates=prefilter.OFF``, ``Job(gates=prefilter.OFF)``):
with the gates off, the whole catalogue and the lifecycle packages give the same findings
(codes, places, verdicts, evidence) and the same fixes."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

from lint_rules.analysis import analyze_source, prefilter
from lint_rules.analysis.records import Job

sys.path.insert(0, str(Path(__file__).resolve().parent))
from markers import read_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted((ROOT / "fixtures" / "catalogue").glob("*.py")) + sorted(
    (ROOT / "fixtures" / "lifecycle").rglob("*.py")
)


def _findings(text: str, gates: prefilter.Gates) -> list[tuple]:
    return [
        (f.code, f.line, f.col, f.message, f.verdict, f.evidence, f.fix)
        for f in analyze_source(text, gates=gates)
    ]


def test_the_gates_are_on_by_default() -> None:
    assert Job().gates is prefilter.ON and prefilter.ON.on and not prefilter.OFF.on
    assert pickle.loads(pickle.dumps(Job(gates=prefilter.OFF))).gates is prefilter.OFF


def test_every_shortcut_has_its_permissive_answer() -> None:
    """A shortcut added to ``Gates`` and not to ``Open`` would stay on with the gates off."""
    shortcuts = {n for n in vars(prefilter.Gates) if not n.startswith("_") and n != "on"}
    assert shortcuts <= set(vars(prefilter.Open)), shortcuts - set(vars(prefilter.Open))


def test_catalogue_is_the_same_with_the_gates_off() -> None:
    texts = {path.name: read_text(path) for path in CASES}
    on = {name: _findings(text, prefilter.ON) for name, text in texts.items()}
    off = {name: _findings(text, prefilter.OFF) for name, text in texts.items()}
    assert sum(map(len, on.values())) > 100
    assert off == on


def _run(folder: Path, gates: prefilter.Gates) -> list[tuple]:
    """``check`` over ``folder`` as one project (``--isolated``)."""
    from lint_rules.analysis.filework import check_file
    from lint_rules.analysis.plan import plan_files
    from lint_rules.analysis.run import run_crossfile
    from lint_rules.settings import DEFAULT_SETTINGS

    files = sorted(str(p) for p in folder.rglob("*.py"))
    job = Job(gates=gates)
    plan = plan_files(job, files, lambda path: DEFAULT_SETTINGS, None, None, True)
    outcomes = list(run_crossfile(check_file, job, plan, 1, [str(folder)]))
    assert not [o.error for o in outcomes if o.error]
    return [(o.path, f) for o in outcomes for f in o.findings]


@pytest.mark.parametrize(
    "case",
    [
        "rearm_every_step",
        "rearm_under_fp8",
        "built_under_switch",
        "object_and_step",
        "across_files",
    ],
)
def test_a_run_over_a_package_is_the_same_with_the_gates_off(case: str) -> None:
    """The run's own gates (the files it parses, the facts a file shares, the unread files it
    gathers facts from, where a class is built) as well."""
    where = ROOT / "fixtures" / "lifecycle" / case
    on = _run(where / "model", prefilter.ON)
    off = _run(where / "model", prefilter.OFF)
    assert off == on
    expected = {"rearm_every_step": 0, "rearm_under_fp8": 1, "built_under_switch": 2}
    expected["object_and_step"] = 4  # a re-arm and its caller that never spell "microbatch"
    expected["across_files"] = 2
    assert len(on) == expected[case]


IMPORTS = sorted(p for p in (ROOT / "fixtures" / "imports").iterdir() if p.is_dir())


FOLDERS = [*IMPORTS, ROOT / "fixtures" / "project", ROOT / "fixtures" / "rounds"]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_a_run_through_packages_is_the_same_with_the_gates_off(folder: Path) -> None:
    """What a package's ``__init__.py`` re-exports, and which files may import TE, are told
    from the text with the gates on (``may_import``, ``imports_te``): the same findings."""
    on = _run(folder, prefilter.ON)
    assert _run(folder, prefilter.OFF) == on
    assert len(on) >= 2
