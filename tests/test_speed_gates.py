"""What the command leaves alone because it cannot matter: files it never parses, modules it
never imports. Behaviour only (which files are analysed, which modules load); the time these
save is measured in benchmarks/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import modules_after

import lint_rules.analysis
from lint_rules import __version__
from lint_rules.cli import command, cpus, running

ROOT = Path(__file__).resolve().parent.parent
REEXPORT = ROOT / "fixtures" / "imports" / "reexport"


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first line of every text the run analyses (in this process: ``--jobs 1``)."""
    seen: list[str] = []
    real = lint_rules.analysis.analyze_source

    def spy(text: str, *args: object, **kwargs: object) -> object:
        seen.append(text.splitlines()[0] if text else "")
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lint_rules.analysis, "analyze_source", spy)
    return seen


def _check(capsys: pytest.CaptureFixture[str], path: Path) -> set[tuple[str, int, str]]:
    command.main(
        ["check", "--isolated", "--no-cache", "--jobs", "1", "--format", "json", str(path)]
    )
    rows = json.loads(capsys.readouterr().out or "[]")
    return {(Path(r["path"]).name, r["line"], r["code"]) for r in rows}


def test_no_init_is_parsed_when_no_file_can_have_a_finding(
    tmp_path: Path, analysed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .layers import Block\n")
    (tmp_path / "pkg" / "layers.py").write_text("class Block:\n    pass\n")
    assert _check(capsys, tmp_path) == set()
    assert analysed == []


def test_only_the_init_that_an_import_goes_through_is_parsed(
    tmp_path: Path, analysed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(REEXPORT, tree)
    (tree / "unrelated").mkdir()
    (tree / "unrelated" / "__init__.py").write_text("from .mod import thing  # unrelated\n")
    (tree / "unrelated" / "mod.py").write_text("thing = 1\n")
    # `import pkg` may reach every package under it: those whose text spells a name the
    # index holds are read, the others not.
    (tree / "pkg" / "other").mkdir()
    (tree / "pkg" / "other" / "__init__.py").write_text("from .mod import thing  # other\n")
    (tree / "pkg" / "again").mkdir()
    (tree / "pkg" / "again" / "__init__.py").write_text("from ..layers import MyLinear as A\n")
    (tree / "whole.py").write_text("import pkg  # is_first_microbatch\n")
    found = _check(capsys, tree)
    assert found == {("model.py", 5, "TEM002"), ("model.py", 6, "TEM001")}
    assert "from .layers import MyLinear, make_fc" in analysed  # pkg/__init__.py: re-exports
    assert "from ..layers import MyLinear as A" in analysed
    assert not any("unrelated" in line or "other" in line for line in analysed)


def _sample(idle: int, busy: int, own: float, wall: float) -> running.CpuSample:
    """A ``/proc/stat`` ``cpu`` line's ticks: ``busy`` in user time, ``idle`` idle."""
    return running.CpuSample((busy, 0, 0, idle, 0, 0, 0, 0), own, wall)


@pytest.mark.parametrize(
    ("idle", "busy", "own", "workers"),
    [
        (20, 20, 0.2, 2),  # this process on one core, the other idle: a pool of two
        (10, 30, 0.2, 2),  # the other core half idle
        (2, 38, 0.2, 1),  # both busy: this process and another
        (0, 40, 0.0, 1),  # both busy with others, this one waiting: still one
        (40, 0, 0.0, 2),  # this process asleep (reading), both idle
    ],
)
def test_the_pool_follows_the_idle_cores_of_the_last_moments(
    idle: int, busy: int, own: float, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two cores, a 0.2 s window: what the machine does now decides, not the load average
    (here 2.0: the previous run of this command, just ended, still counts in it)."""
    before, after = _sample(0, 0, 0.0, 0.0), _sample(idle, busy, own, 0.2)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (2.0, 2.0, 2.0))
    monkeypatch.setattr(running.CpuSample, "now", classmethod(lambda cls: after))
    assert running.default_cpus(before) == workers
    plan = running.Plan(["a", "b"], [None, None], [("a", None), ("b", None)], 10**7)
    plan.started = before
    assert running.pool_size(plan, None) == workers
    assert running.pool_size(plan, 1) == 1  # --jobs is obeyed


def test_no_proc_stat_falls_back_to_the_load_average(monkeypatch: pytest.MonkeyPatch) -> None:
    blind = running.CpuSample(None, 0.0, 0.0)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr("os.getloadavg", lambda: (0.2, 0.2, 0.2))
    monkeypatch.setattr(running.CpuSample, "now", classmethod(lambda cls: blind))
    assert running.default_cpus(blind) == 2
    assert cpus.idle_cores(blind, blind, 2) is None


def test_a_window_too_short_to_say_is_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = iter([_sample(1, 1, 0.0, 0.001), _sample(10, 0, 0.0, 0.05)])
    slept: list[float] = []
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr(running.CpuSample, "now", classmethod(lambda cls: next(samples)))
    monkeypatch.setattr(cpus.time, "sleep", slept.append)
    assert running.default_cpus(_sample(0, 0, 0.0, 0.0)) == 2
    assert slept and 0 < slept[0] <= 0.05


def test_version_loads_nothing_of_the_command(tmp_path: Path) -> None:
    out, _, modules = modules_after(tmp_path, "--version")
    argparse_says = "from lint_rules.cli.command import main; main(['--version'])"
    whole = subprocess.run([sys.executable, "-c", argparse_says], capture_output=True, text=True)
    assert out == whole.stdout == "te-microbatch-lint 0.1.0\n".replace("0.1.0", __version__)
    assert not {m for m in modules if m.startswith("lint_rules.") and m != "lint_rules.cli"}
    assert not {"argparse", "dataclasses", "typing"} & modules


def test_a_check_that_writes_nothing_loads_no_writer(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("def f(m, x):\n    return m(x, is_first_microbatch=True)\n")
    (tmp_path / "empty").mkdir()
    _, _, modules = modules_after(tmp_path / "empty", "check", "--no-cache", ".")
    assert (
        not {"lint_rules.analysis.store", "lint_rules.analysis.core", "lint_rules.fileio"} & modules
    )
    assert not {"tempfile", "random"} & modules
    assert not {"dataclasses", "inspect", "ast", "typing"} & modules  # start-up: issue 32
    cache = str(tmp_path / "cache")
    _, _, modules = modules_after(tmp_path / "empty", "check", "--cache-dir", cache, ".")
    assert not {"lint_rules.analysis.core", "lint_rules.fileio", "tempfile"} & modules
    _, _, modules = modules_after(tmp_path, "check", "--no-cache", "--jobs", "1", ".")
    assert "lint_rules.analysis.core" in modules  # the file was analysed
    assert not {"lint_rules.analysis.store", "tempfile", "random", "libcst"} & modules


def test_state_lines_are_the_lines_that_spell_a_state_word() -> None:
    from lint_rules.analysis.prefilter import OFF, ON

    text = "a = 1\nself.Micro_Batch = 2  # microbatch\n\n\nx(current_microbatch)\r\nend\n"
    expected = [n for n, line in enumerate(text.split("\n"), 1) if "micro" in line.lower()]
    assert ON.state_lines(text) == expected == [2, 5]
    assert OFF.state_lines(text) is None  # the gates off: every statement
    # Lowered as UTF-8 bytes, where the text has no CR: the same lines as the text lowered.
    text = "# caf\u00e9\nself.Micro_Batch = 2\nM\u0130CROBATCH = 1\n\n\ud800 current_microBATCH\n"
    expected = [
        n
        for n, line in enumerate(text.split("\n"), 1)
        if "microbatch" in line.lower().replace("_", "")
    ]
    assert ON.state_lines(text) == expected == [2, 5]


def test_a_file_that_cannot_have_a_finding_is_parsed_only_with_the_gates_off(
    tmp_path: Path,
) -> None:
    """The first pass skips by the switch it is handed (``Job.gates``), and with the gates
    off it neither reads nor writes the project index (what it keeps was found with them on)."""
    import os

    from lint_rules.analysis.plan import plan_files
    from lint_rules.analysis.prefilter import OFF
    from lint_rules.analysis.records import Job
    from lint_rules.analysis.store import open_cache
    from lint_rules.settings import DEFAULT_SETTINGS

    (tmp_path / "plain.py").write_text("def f(x):\n    return x\n")
    os.utime(tmp_path / "plain.py", (1e9, 1e9))  # not modified a moment ago: indexed
    files = [str(tmp_path / "plain.py")]
    cache = open_cache(False, str(tmp_path / "cache"))
    on = plan_files(Job(), files, lambda path: DEFAULT_SETTINGS, cache)
    assert on.to_parse == [] and on.done[0] is not None
    assert cache.known(files[0]) is not None
    stats = dict(cache.stats)
    off = plan_files(Job(gates=OFF), files, lambda path: DEFAULT_SETTINGS, cache)
    assert [path for path, _ in off.to_parse] == files and off.done == [None]
    assert cache.stats == stats


def test_an_empty_folder_loads_no_per_file_machinery(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    cache = str(tmp_path / "cache")
    _, _, modules = modules_after(tmp_path / "empty", "check", "--cache-dir", cache, ".")
    assert not {"lint_rules.cli.running", "lint_rules.analysis.store", "json"} & modules
    out, _, modules = modules_after(tmp_path / "empty", "check", "--output-format", "json", ".")
    assert not {"lint_rules.cli.running", "lint_rules.analysis.store"} & modules
    assert out.strip() == "[]"  # the report is still written
    assert not os.path.exists(cache)


def test_a_run_where_nothing_passes_builds_no_index(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .layers import Block\n")
    (tmp_path / "pkg" / "layers.py").write_text("class Block:\n    pass\n")
    for isolated in ((), ("--isolated",)):
        args = ("check", "--no-cache", "--jobs", "1", *isolated, ".")
        out, _, modules = modules_after(tmp_path, *args)
        assert "lint_rules.analysis.plan" in modules  # the files were read
        assert "lint_rules.analysis.project" not in modules
        assert "All checks passed!" in out


def test_an_empty_folder_loads_only_the_command_line(tmp_path: Path) -> None:
    """`check` on a folder without Python files reads the arguments and the configuration,
    walks, and says so: TE's tables, the rule texts' TE facts, the finding classes, the guard
    importer, the CPU sampler, the CI formats and `typing` are never loaded."""
    out, _, modules = modules_after(tmp_path, "check", ".")
    assert out == "All checks passed!\n"
    unused = {
        "lint_rules.te",
        "lint_rules.te_release",
        "lint_rules.findings",
        "lint_rules.guard_import",
        "lint_rules.cli.cpus",
        "lint_rules.cli.ciformats",
        "lint_rules.analysis",
        "typing",
        "unicodedata",
    }
    assert not unused & modules


@pytest.mark.parametrize("isolated", [True, False])
def test_alike_init_files_of_two_packages_are_both_served_warm(
    tmp_path: Path, isolated: bool
) -> None:
    """Two `__init__.py` with the same bytes in two packages are each judged in their own
    package: the index keeps both results, so the next run analyses neither (they used to
    take turns being analysed again, and the index was written again on every run)."""
    project = tmp_path / "proj"
    for name in ("a", "b"):
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(
            "from .model import Model  # is_first_microbatch\n"
        )
        (project / name / "model.py").write_text("class Model:\n    pass\n")
    (project / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    argv = ["check", "--cache-dir", str(tmp_path / "cache"), *(["--isolated"] * isolated), "."]
    outputs = []
    for run in range(3):
        out, _, modules = modules_after(project, *argv)
        outputs.append(out)
        assert ("lint_rules.analysis.core" in modules) == (run == 0), run
    assert outputs[0] == outputs[1] == outputs[2]
