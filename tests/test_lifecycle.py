"""The flag judged by its life across the files of a run (docs/rules.md, "Maintained, stale,
conditional"): two small packages shaped like megatron-core 0.8.0 (re-armed every step) and
0.10.0 (re-armed only under FP8), checked as trees, one file alone, and the evidence as JSON
beside them (``fixtures/lifecycle/*.expected.json``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_in_process

from lint_rules.analysis import analyze_source

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "lifecycle"


def _check(case: str, output: str = "json") -> tuple[int, list[dict]]:
    proc = subprocess.run(
        [sys.executable, "-m", "lint_rules.cli", "check", "--no-cache", "--isolated"]
        + ["--output-format", output, "model"],
        cwd=CASES / case,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout)


def _life(rows: list[dict]) -> list[dict]:
    """What the expected JSON beside a package pins of each finding: where, and its life."""
    keys = ("path", "line", "column", "code", "verdict", "evidence")
    return [{key: row[key] for key in keys} for row in rows]


def _expected(case: str) -> list[dict]:
    return json.loads((CASES / f"{case}.expected.json").read_text())


def test_a_flag_re_armed_every_step_is_maintained() -> None:
    assert _check("rearm_every_step") == (0, [])


def test_a_flag_re_armed_only_under_fp8_is_reported_with_its_life() -> None:
    rc, rows = _check("rearm_under_fp8")
    assert rc == 1
    assert _life(rows) == _expected("rearm_under_fp8")


def test_the_sarif_evidence_is_a_code_flow_code_scanning_shows() -> None:
    """SARIF carries the same life as related locations and one thread of the code flow."""
    rc, sarif = _check("rearm_under_fp8", "sarif")
    assert rc == 1
    results = sarif["runs"][0]["results"]  # type: ignore[call-overload]
    found = [{key: r[key] for key in ("ruleId", "relatedLocations", "codeFlows")} for r in results]
    expected = json.loads((CASES / "rearm_under_fp8.expected.sarif.json").read_text())
    assert found == expected


def test_one_file_alone_says_the_project_is_not_seen() -> None:
    """flake8 and the libcst runner see one file: the re-arm in ``module.py`` is not in it."""
    for case in ("rearm_every_step", "rearm_under_fp8"):
        text = (CASES / case / "model" / "layers.py").read_text()
        (finding,) = analyze_source(text)
        assert finding.verdict == "stale"
        # said first, so that a one-line face (flake8) shows it, and the fix waits for the user
        assert "not seen here" in finding.evidence[1].message
        assert "te-microbatch-lint check ." in finding.evidence[1].message
        assert finding.fix is not None and finding.fix.applicability == "unsafe"


@pytest.mark.parametrize("case", ["rearm_every_step", "rearm_under_fp8"])
def test_each_file_is_analysed_once_and_judged_again_with_the_runs_facts(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``layers.py``'s verdict reads ``module.py``'s re-arm, which the run knows only after its
    first pass: the first analysis is kept and its calls judged again (``crossfile.REJUDGE``),
    with the output a second full analysis gives."""
    from lint_rules.analysis.core import Analysis
    from lint_rules.cli import crossfile

    counted: list[str] = []
    run, rejudge = Analysis.run, Analysis.rejudge
    monkeypatch.setattr(Analysis, "run", lambda a: counted.append("run") or run(a))
    monkeypatch.setattr(Analysis, "rejudge", lambda a, r: counted.append("again") or rejudge(a, r))
    args = ["check", "--no-cache", "--isolated", "-j", "1", "--output-format", "json", "model"]
    judged = run_in_process(args, CASES / case)
    analysed = len([c for c in counted if c == "run"])
    assert counted.count("again") == 1
    counted.clear()
    monkeypatch.setattr(crossfile, "REJUDGE", False)
    full = run_in_process(args, CASES / case)
    assert counted.count("again") == 0 and counted.count("run") == analysed + 1
    assert (judged.returncode, judged.stdout) == (full.returncode, full.stdout)
    assert json.loads(judged.stdout) == _check(case)[1]


def test_a_class_built_only_where_the_re_arm_holds_is_maintained() -> None:
    """``built_under_switch``: the re-arm runs only ``if fp8 is not None or use_switch``.
    ``SwitchLinear`` (and its subclass) is built only where ``use_switch`` is set (a provider
    made under it, a choice by it, after an early return), so wherever it exists its flag is
    re-armed: not reported. ``PlainLinear`` is built where the switch is off, and
    ``LooseLinear`` also by a helper that no file calls: both are reported, as conditional."""
    rc, rows = _check("built_under_switch")
    assert rc == 1
    assert _life(rows) == _expected("built_under_switch")
    assert [row["line"] for row in rows] == [34, 45]


def test_where_a_class_is_built_is_seen_only_by_a_run_over_its_builders(tmp_path: Path) -> None:
    """Without ``specs.py`` nothing shows where ``SwitchLinear`` is built: it is reported too.
    One file alone (flake8) cannot see the re-arm at all."""
    shutil.copytree(CASES / "built_under_switch", tmp_path / "case")
    (tmp_path / "case" / "model" / "specs.py").unlink()
    args = ["check", "--no-cache", "--isolated", "--output-format", "json", "model"]
    proc = run_in_process(args, tmp_path / "case")
    assert [r["line"] for r in json.loads(proc.stdout)] == [19, 34, 45]
    text = (CASES / "built_under_switch" / "model" / "layers.py").read_text()
    assert [f.line for f in analyze_source(text)] == [19, 34, 45]


@pytest.mark.parametrize(
    ("guard", "outcome", "condition", "implied"),
    [
        ("use_switch", True, "cfg.fp8 is not None or getattr(cfg, 'use_switch', False)", True),
        ("config.use_switch and ready", True, "cfg.use_switch", True),
        ("not config.use_switch", False, "cfg.use_switch", True),
        ("not config.use_switch", True, "cfg.use_switch", False),
        ("config.fp8", True, "cfg.fp8 is not None", True),
        ("config.fp8 is not None", True, "cfg.fp8", False),  # set is not truthy
        ("use_switch or other", True, "cfg.use_switch", False),
        ("config.fp8 is None", False, "cfg.fp8 is not None", True),
        ("use_switch", True, "cfg.use_switch and cfg.fp8", False),
    ],
)
def test_what_a_test_implies_of_a_re_arms_condition(
    guard: str, outcome: bool, condition: str, implied: bool
) -> None:
    import ast

    from lint_rules.analysis import builds

    known = builds.terms(ast.parse(guard, mode="eval").body, outcome)
    assert builds.implies(known, [ast.parse(condition, mode="eval").body]) is implied


def test_a_cached_verdict_is_judged_again_when_a_builder_changes(tmp_path: Path) -> None:
    """``specs.py`` is never parsed for its own sake (it passes no flag), yet the verdict of
    ``layers.py`` reads it: a change there must reach a result served from the cache."""
    shutil.copytree(CASES / "built_under_switch", tmp_path / "case")
    args = ["check", "--isolated", "--output-format", "json", "--cache-dir", str(tmp_path / "c")]

    def lines() -> list[int]:
        proc = run_in_process([*args, "model"], tmp_path / "case")
        return [r["line"] for r in json.loads(proc.stdout)]

    assert lines() == [34, 45]
    assert lines() == [34, 45]  # from the cache
    with open(tmp_path / "case" / "model" / "specs.py", "a") as specs:
        specs.write("\nDEFAULT = SwitchLinear  # built at module level, whatever holds\n")
    assert lines() == [19, 34, 45]


def test_a_folder_with_one_file_is_a_project(tmp_path: Path) -> None:
    """``check .`` over a folder that holds one file sees every file there is: no re-arm can
    hide in another file, so nothing is provisional (a file named alone stays provisional)."""
    (tmp_path / "model.py").write_text((CASES / "rearm_under_fp8/model/layers.py").read_text())
    args = ["check", "--no-cache", "--isolated", "--output-format", "json"]
    (folder,) = json.loads(run_in_process([*args, "."], tmp_path).stdout)
    (alone,) = json.loads(run_in_process([*args, "model.py"], tmp_path).stdout)
    assert not any("not seen here" in e["message"] for e in folder["evidence"])
    assert folder["fix"]["applicability"] == "safe"
    assert any("not seen here" in e["message"] for e in alone["evidence"])
    assert alone["fix"]["applicability"] == "unsafe"


def test_a_constant_test_is_no_condition_on_the_run() -> None:
    """``if True:`` always runs (a re-arm there has no condition) and its ``else`` never does.
    (``self.layer`` is built as the ``TELinear`` whose flag is judged: the write reaches it.)"""
    layers = (CASES / "rearm_under_fp8/model/layers.py").read_text()
    rearm = (
        "\n\nclass Module:\n    def __init__(self):\n        self.layer = TELinear(4)\n\n"
        "    def set_is_first_microbatch(self):\n        if {test}:\n"
        "            self.layer.is_first_microbatch = {first}\n        else:\n"
        "            self.layer.is_first_microbatch = {second}\n\n\n"
        "def step(model):\n    model.set_is_first_microbatch()\n"
    )
    kept = rearm.format(test="True", first="True", second="False")
    assert analyze_source(layers + kept) == []
    never = rearm.format(test="False", first="False", second="True")
    assert analyze_source(layers + never) == []  # the else arm always runs
    dead = rearm.format(test="True", first="False", second="True")
    (finding,) = analyze_source(layers + dead)
    assert finding.verdict == "conditional"
    assert any("only if `False`" in e.message for e in finding.evidence)


def test_the_guard_strategy_falls_back_to_none_when_the_guards_module_lacks_it(
    tmp_path: Path,
) -> None:
    """``guard-import``'s module is a file of the run that never spells the guard: the import
    the guard strategy would add fails, so it falls back to ``None`` and says why."""
    shutil.copytree(CASES / "rearm_under_fp8" / "model", tmp_path / "model")
    layers, module = tmp_path / "model" / "layers.py", tmp_path / "model" / "module.py"
    setup = "        self.is_first_microbatch = True\n"
    layers.write_text(layers.read_text().replace(setup, setup + "        self.config = None\n", 1))
    args = ["fix", "--isolated", "--no-cache", "--fix-strategy", "guard", "--diff", "."]
    args += ["--guard-import", "model.module.is_first_microbatch_tracked"]
    lacking = run_in_process(args, tmp_path)
    assert "is_first_microbatch=None" in lacking.stdout
    assert "fell back to None: `model/module.py` (in the run) defines no" in lacking.stderr
    guard = "\n\ndef is_first_microbatch_tracked(config):\n    return True\n"
    module.write_text(module.read_text() + guard)
    having = run_in_process(args, tmp_path)
    assert "if is_first_microbatch_tracked(self.config) else None" in having.stdout


def test_judging_again_gives_what_a_second_analysis_gives_on_the_catalogue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole catalogue checked as one folder: the files whose verdicts wait for the run's
    facts are judged again (their TEM005 findings kept as they were), with the output that
    analysing them again in full gives."""
    from lint_rules.analysis.core import Analysis
    from lint_rules.cli import crossfile

    judged: list[int] = []
    rejudge = Analysis.rejudge
    monkeypatch.setattr(Analysis, "rejudge", lambda a, r: judged.append(1) or rejudge(a, r))
    args = ["check", "--no-cache", "--isolated", "-j", "1", "--output-format", "json", "."]
    where = CASES.parent / "catalogue"
    again = run_in_process(args, where)
    monkeypatch.setattr(crossfile, "REJUDGE", False)
    full = run_in_process(args, where)
    assert len(judged) > 20 and '"TEM005"' in again.stdout
    assert (again.returncode, again.stdout) == (full.returncode, full.stdout)


GUARDED = "    if cfg.use_switch:\n        return K()\n"


@pytest.mark.parametrize(
    ("specs", "built_only_there"),
    [
        ("def make(cfg):\n    return K() if cfg.use_switch else None\n", True),
        ("def make(cfg):\n    return cfg.use_switch and K()\n", True),
        ("def make(cfg):\n    if not cfg.use_switch:\n        return None\n    return K()\n", True),
        ("from layers import K\n\n\ndef make(cfg, k: K):\n" + GUARDED, True),
        ("def make(cfg, m):\n" + GUARDED + "    return isinstance(m, K)\n", True),
        ("DEFAULT = K\n\n\ndef make(cfg):\n" + GUARDED, False),
        ("def make(cfg):\n    return K()\n", False),
        ("def make(cfg):\n    if cfg.other:\n        return K()\n", False),
        ("def make(cfg, m):\n    return isinstance(K(), type)\n", False),
        (
            "class P:\n    def get(self):\n        return K\n\n\n"
            "def make(cfg):\n    return P() if cfg.use_switch else None\n",
            True,
        ),
        ("class P:\n    def get(self):\n        return K\n", False),  # P: built nowhere
    ],
)
def test_where_a_class_is_built_decides(tmp_path: Path, specs: str, built_only_there: bool) -> None:
    """``builds.Answers``: is ``K`` built only where ``use_switch`` is set?"""
    from lint_rules.analysis import builds

    (tmp_path / "layers.py").write_text("class K:\n    pass\n")
    (tmp_path / "specs.py").write_text(specs)
    (tmp_path / "train.py").write_text("from specs import make\n\nmake(None)\n")
    paths = [str(tmp_path / name) for name in ("layers.py", "specs.py", "train.py")]
    key = builds.question("K", ["self.config.fp8 is not None or self.config.use_switch"])
    assert bool(builds.Answers(paths).answer(key)) is built_only_there
