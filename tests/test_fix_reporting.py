"""How ``fix`` reports, like ruff: each file named as it is written, ``N fixed, M remaining``
with the codes left, exit 1 while findings remain, ``--check``/``--diff`` exit 1 when something
would change or remain, ``--select``/``--ignore`` and ``--unsafe-fixes`` (docs/fixes.md).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import IN_PROCESS_UNSAFE, cli, run_in_process

from lint_rules.cli import command, running

HEAD = "import transformer_engine.pytorch as te\n\n\n"
SAFE = HEAD + (
    "class Block:\n"
    "    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n\n"
    "    def forward(self, x):\n"
    "        return self.fc(x, is_first_microbatch=self.flag)\n"
)
TEM004 = HEAD + (
    "def run(x):\n"
    "    with te.fp8_autocast(enabled=True, is_first_microbatch=True):\n"
    "        return x\n"
)
UNRESOLVED = "def run(module, x, step):\n    return module(x, is_first_microbatch=step == 0)\n"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if not IN_PROCESS_UNSAFE.intersection(args):  # in this process (helpers.run_in_process)
        return run_in_process(list(args), cwd)  # type: ignore[no-any-return]
    return subprocess.run([*cli(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "safe.py").write_text(SAFE)
    (tmp_path / "autocast.py").write_text(TEM004)
    (tmp_path / "unresolved.py").write_text(UNRESOLVED)
    # a strict project: the unresolved callee is reported (quiet by default)
    (tmp_path / "pyproject.toml").write_text('[tool.te-microbatch-lint]\nunresolved = "report"\n')
    return tmp_path


def test_summary_names_what_remains_and_exit_1(project: Path) -> None:
    done = run("fix", ".", cwd=project)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "fixed ./safe.py (1 finding)"
    summary = lines[-1]
    assert summary.startswith("1 fixed, 2 remaining"), summary
    assert "TEM001 x1" in summary and "TEM004 x1" in summary
    assert "1 unsafe fix not applied (--unsafe-fixes applies them)" in summary
    assert "TEM004 has no automatic fix" in summary
    assert (project / "unresolved.py").read_text() == UNRESOLVED


def test_exit_0_when_nothing_remains(project: Path) -> None:
    (project / "autocast.py").unlink()
    done = run("fix", "--unsafe-fixes", ".", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("2 fixed, 0 remaining")
    assert "is_first_microbatch=None" in (project / "unresolved.py").read_text()
    assert run("fix", ".", cwd=project).returncode == 0  # and again: nothing to do


@pytest.mark.parametrize("mode", ["--check", "--diff"])
def test_check_and_diff_exit_1_when_something_remains(project: Path, mode: str) -> None:
    (project / "safe.py").unlink()
    (project / "unresolved.py").unlink()
    result = run("fix", mode, ".", cwd=project)  # nothing to change, but TEM004 stays
    assert result.returncode == 1, result.stderr
    assert "1 remaining" in result.stderr


@pytest.mark.parametrize("mode", ["--check", "--diff"])
def test_check_and_diff_exit_1_when_something_would_change(tmp_path: Path, mode: str) -> None:
    (tmp_path / "safe.py").write_text(SAFE)
    result = run("fix", mode, ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert (tmp_path / "safe.py").read_text() == SAFE
    assert run("fix", ".", cwd=tmp_path).returncode == 0
    assert run("fix", mode, ".", cwd=tmp_path).returncode == 0


def test_select_and_ignore(project: Path) -> None:
    only = run("fix", "--select", "TEM004", ".", cwd=project)
    assert only.returncode == 1 and (project / "safe.py").read_text() == SAFE
    assert only.stderr.strip().splitlines()[-1].startswith("0 fixed, 1 remaining")
    ignored = run("fix", "--ignore", "TEM004", "--unsafe-fixes", ".", cwd=project)
    assert ignored.returncode == 0, ignored.stderr
    assert (project / "safe.py").read_text() != SAFE
    assert run("fix", "--select", "TEM999", ".", cwd=project).returncode == 2


def test_interrupted_run_lists_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(SAFE)
    real = running.fix_file

    def stop_at_b(job, path, settings, source=None, project=None):  # type: ignore[no-untyped-def]
        if path.endswith("b.py"):
            raise KeyboardInterrupt
        return real(job, path, settings, source, project)

    monkeypatch.setattr(running, "fix_file", stop_at_b)
    monkeypatch.chdir(tmp_path)
    status = command.main(["fix", "--jobs", "1", "--isolated", "."])
    err = capsys.readouterr().err
    assert status == 130
    assert "fixed ./a.py (1 finding)" in err and "interrupted" in err
    assert (tmp_path / "a.py").read_text() != SAFE
    assert (tmp_path / "c.py").read_text() == SAFE and "c.py" not in err


def test_json_and_sarif_carry_the_applicability(project: Path) -> None:
    import json

    rows = json.loads(run("check", "--format", "json", ".", cwd=project).stdout)
    by_file = {Path(row["path"]).name: row.get("applicability") for row in rows}
    assert by_file == {"safe.py": "safe", "unresolved.py": "unsafe", "autocast.py": None}
    sarif = json.loads(run("check", "--format", "sarif", ".", cwd=project).stdout)
    results = sarif["runs"][0]["results"]
    seen = {
        Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name: r.get(
            "properties", {}
        ).get("fixApplicability")
        for r in results
    }
    assert seen == by_file


GUARDED = SAFE.replace("te.Linear(4, 4)\n", "te.Linear(4, 4)\n        self.config = None\n")
DEFAULT_GUARD_NOTE = (
    "te-microbatch-lint: note: guard-import is the default "
    "`megatron.core.transformer.module.is_first_microbatch_tracked`, which no released "
    "megatron-core (up to 0.19.2) defines: set guard-import to a guard your project has"
)


@pytest.mark.parametrize("mode", [(), ("--diff",), ("--check",)])
def test_default_guard_import_gets_one_note_per_run(tmp_path: Path, mode: tuple) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(GUARDED)
    done = run("fix", *mode, "--fix-strategy", "guard", ".", cwd=tmp_path)
    assert done.stderr.splitlines().count(DEFAULT_GUARD_NOTE) == 1, done.stderr
    own = run(
        "fix", *mode, "--fix-strategy", "guard", "--guard-import", "p.g.ok", ".", cwd=tmp_path
    )
    assert "guard-import is the default" not in own.stderr
    plain = run("fix", *mode, ".", cwd=tmp_path)
    assert "guard-import is the default" not in plain.stderr


def test_default_guard_import_note_on_stdin(tmp_path: Path) -> None:
    done = subprocess.run(
        [*cli(), "fix", "--fix-strategy", "guard", "-"],
        input=GUARDED,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr.splitlines().count(DEFAULT_GUARD_NOTE) == 1, done.stderr


BROKEN = HEAD + "def run(x:\n    return te.Linear(4, 4)(x, is_first_microbatch=True)\n"


def test_summary_counts_a_refused_file(tmp_path: Path) -> None:
    """A file ``fix`` refuses (one error line, exit 2, the file untouched) is counted as
    refused in the summary, not as a file with nothing left to fix."""
    (tmp_path / "safe.py").write_text(SAFE)
    (tmp_path / "broken.py").write_text(BROKEN)
    done = run("fix", ".", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith("./broken.py: error: cannot parse: ")
    assert lines[-1] == (
        "1 fixed, 0 remaining (1 file changed, 0 unchanged, 1 refused); "
        "1 error above: a refused file is left untouched"
    )
    assert (tmp_path / "broken.py").read_text() == BROKEN


def test_summary_counts_a_fix_that_would_not_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixed text would not verify (``fixing.FixError``): that file is refused too."""
    from lint_rules import fixing

    def refuse(old: str, new: str, encoding: str | None = None) -> None:
        raise fixing.FixError("the fixed text would lose a comment; nothing was changed")

    monkeypatch.setattr(fixing, "verify_fixed", refuse)
    (tmp_path / "safe.py").write_text(SAFE)
    done = run("fix", "--check", ".", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "0 would be fixed, 0 remaining (0 files changed, 0 unchanged, 1 refused); "
        "1 error above: a refused file is left untouched"
    )
    assert (tmp_path / "safe.py").read_text() == SAFE


SHARED = HEAD + (
    "class Block:\n"
    "    def __init__(self):\n"
    "        self.fc1 = te.Linear(4, 4)\n"
    "        self.fc2 = te.Linear(4, 4)\n"
    "        self.count = 0\n\n"
    "    def forward(self, x):\n"
    "        first = self.count == 0\n"
    "        y = self.fc1(x, is_first_microbatch=first)\n"  # line 11: TEM001
    "        return self.fc2(y, first)\n"  # line 12: TEM002, the same local
)
"""Two findings of two codes whose fixes share one fold (the local goes with both reads)."""


@pytest.mark.parametrize("select", [None, "TEM001", "TEM002"])
def test_check_counts_a_shared_fix_as_fix_applies_it_under_a_selection(
    tmp_path: Path, select: str | None
) -> None:
    import json

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "block.py").write_text(SHARED)
    chosen = ["--select", select] if select else []
    checked = run("check", "--no-cache", "--output-format", "json", *chosen, ".", cwd=tmp_path)
    rows = json.loads(checked.stdout)
    assert {row["code"] for row in rows} == ({select} if select else {"TEM001", "TEM002"})
    fixable = [row["code"] for row in rows if row["fix"]]
    # With both codes selected, the shared fix is applied (both findings fixed); with one of
    # them left out, `fix` leaves it (the other read would stay), and `check` says so.
    assert fixable == ([] if select else ["TEM001", "TEM002"])
    done = run("check", "--no-cache", *chosen, ".", cwd=tmp_path)
    assert ("2 fixable with" in done.stdout + done.stderr) == (select is None)
    fixed = run("fix", "--no-cache", *chosen, ".", cwd=tmp_path)
    assert ((tmp_path / "block.py").read_text() == SHARED) == (select is not None), fixed.stdout
