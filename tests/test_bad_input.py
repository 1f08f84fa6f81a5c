"""Bad input through the installed command: each file that cannot be read or parsed gets one
clear line on stderr naming it and the reason, is left byte-identical, the other files of the
same run are still checked and fixed, and the run exits 2 (CLI contract, issue 3)."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

GOOD = (
    "import transformer_engine.pytorch as te\n"
    "\n"
    "\n"
    "class Block:\n"
    "    def __init__(self):\n"
    "        self.fc = te.Linear(16, 16)\n"
    "        self.flag = True\n"
    "\n"
    "    def forward(self, x):\n"
    "        y = self.fc(x, is_first_microbatch=self.flag)\n"
    "        self.flag = False\n"
    "        return y\n"
)
"""A fixable module (one TEM001 at line 10) that every run includes beside the bad file."""

GOOD_LINE = 10


def run(*args: object, cwd: Path, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*cli(), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def fixed_good() -> str:
    from lint_rules.fixing import fix_source

    result = fix_source(GOOD)
    assert result.changed, "the GOOD sample must have something to fix"
    return result.text


def assert_reported(stderr: str, name: str, reason: str) -> None:
    """Exactly one stderr line names the file, and it gives the reason; no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if name in line]
    assert len(lines) == 1, f"want one line naming {name!r} on stderr, got:\n{stderr}"
    assert re.search(reason, lines[0], re.IGNORECASE), f"no reason /{reason}/ in {lines[0]!r}"


def assert_good_checked(stdout: str) -> None:
    hits = [line for line in stdout.splitlines() if "good.py" in line and "TEM001" in line]
    assert hits, f"the good file was not checked in the same run:\n{stdout}"
    assert any(f":{GOOD_LINE}:" in line for line in hits), hits


BAD_FILES: dict[str, tuple[bytes, str]] = {
    # name: (bytes, reason regex). Unparsable files contain the keyword so the byte prefilter
    # does not skip them (a file without `is_first_microbatch` is never parsed, by design).
    "syntax_error.py": (
        b"def broken(:\n    return fc(x, is_first_microbatch=True)\n",
        r"syntax|parse|invalid",
    ),
    "python2.py": (
        b'print "x"\ny = fc(x, is_first_microbatch=True)\n',
        r"syntax|parse|invalid|print",
    ),
    "not_utf8.py": (
        b"# Gr\xf6\xdfe in latin-1, no cookie\ny = fc(x, is_first_microbatch=True)\n",
        r"utf-?8",
    ),
    "nul_byte.py": (b"x = 1\x00\ny = fc(x, is_first_microbatch=True)\n", r"\bnul|null"),
    "unknown_codec.py": (b"# -*- coding: klingon -*-\nx = 1\n", r"encoding"),
    "bom_vs_cookie.py": (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", r"encoding|bom|cookie"),
    "tab_error.py": (
        b"def f(x):\n\tif x:\n        return fc(x, is_first_microbatch=x)\n",
        r"syntax|parse|indent|tab",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_is_reported_untouched_and_the_run_goes_on(tmp_path: Path, name: str) -> None:
    raw, reason = BAD_FILES[name]
    (tmp_path / "good.py").write_text(GOOD)
    bad = tmp_path / name
    bad.write_bytes(raw)
    mtime = bad.stat().st_mtime_ns

    checked = run("check", tmp_path, cwd=tmp_path)
    assert checked.returncode == 2, (checked.returncode, checked.stdout, checked.stderr)
    assert_reported(checked.stderr, name, reason)
    assert_good_checked(checked.stdout)

    fixed = run("fix", tmp_path, cwd=tmp_path)
    assert fixed.returncode == 2, (fixed.returncode, fixed.stdout, fixed.stderr)
    assert_reported(fixed.stderr, name, reason)
    assert (tmp_path / "good.py").read_text() == fixed_good()
    assert bad.read_bytes() == raw and bad.stat().st_mtime_ns == mtime


def test_empty_file_is_fine(tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_bytes(b"")
    for command in ("check", "fix"):
        done = run(command, empty, cwd=tmp_path)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert "empty.py" not in done.stderr and "error" not in done.stderr.lower(), done.stderr
    assert empty.read_bytes() == b""


def test_declared_latin1_round_trips_through_fix(tmp_path: Path) -> None:
    text = GOOD.replace(
        "import transformer_engine",
        "# -*- coding: latin-1 -*-\n# Größe, Maß, ½: not UTF-8 on disk\nimport transformer_engine",
    ).replace("self.flag = False", "self.flag = False  # à bientôt")
    path = tmp_path / "latin.py"
    path.write_bytes(text.encode("latin-1"))

    checked = run("check", path, cwd=tmp_path)
    assert checked.returncode == 1, (checked.stdout, checked.stderr)
    assert "TEM001" in checked.stdout and f":{GOOD_LINE + 2}:" in checked.stdout

    fixed = run("fix", path, cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    from lint_rules.fixing import fix_source

    expected = fix_source(text)
    assert expected.changed and "is_first_microbatch=None" in expected.text
    assert path.read_bytes() == expected.text.encode("latin-1")  # still latin-1 bytes
    assert b"Gr\xf6\xdfe" in path.read_bytes()


def test_parser_warnings_about_user_code_do_not_leak(tmp_path: Path) -> None:
    """An invalid escape sequence in the analysed file makes ``ast.parse`` warn (a
    SyntaxWarning shown by default on Python 3.12+; a DeprecationWarning on 3.9-3.11, shown here
    through PYTHONWARNINGS). The warning names ``<unknown>``, not the file: it must not reach
    stderr as a stray line; the file is fine and is checked and fixed as usual."""
    text = GOOD.replace("import transformer_engine", 'PATTERN = "\\d+"\nimport transformer_engine')
    path = tmp_path / "escapes.py"
    path.write_text(text)
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    checked = run("check", path, cwd=tmp_path, env=env)
    assert checked.returncode == 1, checked.stderr
    assert "Warning" not in checked.stderr, checked.stderr
    fixed = run("fix", path, cwd=tmp_path, env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert "Warning" not in fixed.stderr, fixed.stderr


def test_nonexistent_path(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    for command in ("check", "fix"):
        done = run(command, tmp_path / "good.py", tmp_path / "missing.py", cwd=tmp_path)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert_reported(done.stderr, "missing.py", r"exist|no such|not found")
        if command == "check":
            assert_good_checked(done.stdout)
    assert (tmp_path / "good.py").read_text() == fixed_good()


def test_symlink_loop_named_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "loop_a.py").symlink_to("loop_b.py")
    (tmp_path / "loop_b.py").symlink_to("loop_a.py")
    done = run("check", tmp_path / "good.py", tmp_path / "loop_a.py", cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert_reported(done.stderr, "loop_a.py", r"loop|too many levels|symbolic")
    assert_good_checked(done.stdout)
    assert os.readlink(tmp_path / "loop_a.py") == "loop_b.py"


def test_symlink_loops_inside_a_tree_terminate(tmp_path: Path) -> None:
    """A directory link to its parent and a file link loop inside the walked tree: the run
    ends (no infinite recursion), the good file is fixed once, the links are untouched."""
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "good.py").write_text(GOOD)
    (sub / "up").symlink_to("..")  # pkg/sub/up -> pkg: a cycle for a link-following walker
    (sub / "self_loop.py").symlink_to("self_loop.py")
    done = run("fix", tmp_path / "pkg", cwd=tmp_path, timeout=60)
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 1, 2), done.stderr
    if done.returncode == 2:  # reporting the loop is allowed; crashing or hanging is not
        assert_reported(done.stderr, "self_loop.py", r"loop|too many levels|symbolic")
    assert (sub / "good.py").read_text() == fixed_good()
    assert (sub / "up").is_symlink() and (sub / "self_loop.py").is_symlink()


# ------------------------------------------------------------------------------ permissions

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, PR_CAPBSET_DROP = 1, 2, 24


def _drop_root_file_capabilities() -> None:  # runs in the child, before exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def permission_bits_apply(tmp_path: Path) -> dict[str, Any]:
    """subprocess options under which permission bits stop reads.

    Root reads anything through CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH, so as root the child
    drops those two capabilities from its bounding set before exec (it stays uid 0 and keeps
    reaching the interpreter and the package; only the mode bits of our test files start to
    matter). Skips with the reason where even that is impossible."""
    options: dict[str, Any] = {}
    if os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            pytest.skip("running as root: permission bits do not stop root's reads here")
        options["preexec_fn"] = _drop_root_file_capabilities
    probe_file = tmp_path / "probe_unreadable"
    probe_file.write_text("x")
    probe_file.chmod(0o000)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", f"import lint_rules.cli; open({str(probe_file)!r}).read()"],
            capture_output=True,
            text=True,
            **options,
        )
    except (OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE: {error}")
    finally:
        probe_file.unlink()
    if "PermissionError" not in probe.stderr:
        pytest.skip(
            "permission bits do not stop reads for this user (root without droppable "
            f"capabilities?): probe rc={probe.returncode} {probe.stderr.strip()[-200:]!r}"
        )
    return options


def test_directory_and_file_without_permission(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.py").write_text(GOOD)
    secret = tree / "secret"
    secret.mkdir()
    (secret / "hidden.py").write_text(GOOD)
    unreadable = tree / "unreadable.py"
    unreadable.write_text(GOOD)
    options = permission_bits_apply(tmp_path)
    secret.chmod(0o000)
    unreadable.chmod(0o000)
    try:
        checked = run("check", tree, cwd=tmp_path, **options)
        fixed = run("fix", tree, cwd=tmp_path, **options)
    finally:
        secret.chmod(0o755)
        unreadable.chmod(0o644)

    assert checked.returncode == 2, (checked.stdout, checked.stderr)
    assert_reported(checked.stderr, "unreadable.py", r"permission")
    assert_reported(checked.stderr, "secret", r"permission")
    assert_good_checked(checked.stdout)

    assert fixed.returncode == 2, (fixed.stdout, fixed.stderr)
    assert_reported(fixed.stderr, "unreadable.py", r"permission")
    assert_reported(fixed.stderr, "secret", r"permission")
    assert (tree / "good.py").read_text() == fixed_good()
    assert (secret / "hidden.py").read_text() == GOOD
    assert unreadable.read_text() == GOOD


# --------------------------------------------------------------------------------- big file


@pytest.mark.slow
def test_large_file(tmp_path: Path) -> None:
    """A few MB: a long module docstring, many small functions, the TE module at the end. The
    finding is at the right line and ``fix`` changes only the flag (the time it takes on 50 MB is
    measured by benchmarks/large_file.py, never asserted here)."""
    filler_line = "    value = other_function(argument, 12345)  # padding comment\n"
    functions = "".join(
        f"def f{i}(argument):\n{filler_line * 3}    return value\n\n\n" for i in range(2_000)
    )
    doc_line = "Documentation line that goes on for a while, for padding purposes only.\n"
    doc = '"""' + doc_line * (2_000_000 // len(doc_line)) + '"""\n\n\n'
    text = doc + functions + GOOD
    path = tmp_path / "huge.py"
    path.write_text(text)
    line = text.count("\n", 0, len(doc) + len(functions)) + GOOD_LINE

    checked = run("check", path, cwd=tmp_path, timeout=60)
    assert checked.returncode == 1, checked.stderr
    assert f":{line}:" in checked.stdout and "TEM001" in checked.stdout

    fixed = run("fix", path, cwd=tmp_path, timeout=60)
    assert fixed.returncode == 0, fixed.stderr
    data = path.read_bytes()
    assert len(data) == len(text) - len("self.flag") + len("None")
    assert data.endswith(fixed_good().encode())
    assert data[: len(doc)] == doc.encode()
