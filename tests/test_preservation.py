"""Preservation: `fix` changes the fixed values and nothing else about a file.

Newlines (CRLF, CR-only, mixed), a UTF-8 BOM, a coding cookie, tabs, form feeds, non-ASCII text,
mode bits, symlinks; a read-only file is reported, never forced; a file with nothing to fix is
never rewritten (same mtime, same inode). The first half drives ``lint_rules.fileio`` directly,
the second half runs the installed ``te-microbatch-lint`` command.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from helpers import cli

from lint_rules import exchange as swap
from lint_rules import fileio
from lint_rules.fileio import SourceError, read_source, write_source_atomic

TE_MODULE = (
    "import torch\n"
    "import transformer_engine.pytorch as te\n"
    "\n"
    "\n"
    "class Block(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = te.Linear(16, 16)\n"
    "        self.flag = True\n"
    "\n"
    "    def forward(self, x):\n"
    "        y = self.fc(x, is_first_microbatch=self.flag)\n"
    "        self.flag = False\n"
    "        return y\n"
)
"""A module with one TEM001 (an untracked attribute passed by keyword to te.Linear)."""

OLD_TIME_NS = 978_307_200_000_000_000  # 2001-01-01: any rewrite would move it
TEMP_RE = re.compile(r"^\..*\.tmp$")


def te_module(newline: str = "\n", indent: str = "    ", prefix: str = "") -> str:
    text = prefix + TE_MODULE.replace("    ", indent)
    return text.replace("\n", newline)


def expected_fix(text: str, **settings: str) -> str:
    from lint_rules import fixing
    from lint_rules import settings as config

    chosen = config.Settings(**settings) if settings else config.DEFAULT_SETTINGS
    result = fixing.fix_source(text, chosen)
    assert result.changed and result.text != text, "sample must have something to fix"
    return result.text


def temp_leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if TEMP_RE.match(p.name))


# ------------------------------------------------------------------------ fileio, directly

NEWLINE_SAMPLES: dict[str, bytes] = {
    "lf": b"a = 1\nb = 2\n",
    "crlf": b"a = 1\r\nb = 2\r\n",
    "cr": b"a = 1\rb = 2\r",
    "mixed": b"a = 1\r\nb = 2\rc = 3\nd = 4",
    "tabs": b"if a:\n\tb = 1\n\t\tc = 2\n",
    "formfeed": b"a = 1\n\x0c\nb = 2  # \xe2\x80\xa8 line separator in a comment\n",
}


@pytest.mark.parametrize("name", sorted(NEWLINE_SAMPLES))
def test_read_source_keeps_every_byte(tmp_path: Path, name: str) -> None:
    raw = NEWLINE_SAMPLES[name]
    path = tmp_path / f"{name}.py"
    path.write_bytes(raw)
    source = read_source(path)
    assert source.raw == raw
    assert source.text == raw.decode("utf-8")  # no newline translation of any kind
    assert source.encoding == "utf-8"
    write_source_atomic(source, source.text + "e = 5\n")
    assert path.read_bytes() == raw + b"e = 5\n"


def test_bom_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbfs = '\xc3\xa9'\r\n")
    source = read_source(path)
    assert source.encoding == "utf-8-sig"
    assert source.text == "s = 'é'\r\n"  # the BOM is not part of the text
    write_source_atomic(source, "s = 'è'\r\n")
    assert path.read_bytes() == b"\xef\xbb\xbfs = '\xc3\xa8'\r\n"


@pytest.mark.parametrize(
    ("cookie", "codec"),
    [
        ("# -*- coding: latin-1 -*-", "latin-1"),
        ("# vim: set fileencoding=iso-8859-15 :", "iso-8859-15"),
        ("# coding=cp1252", "cp1252"),
    ],
)
def test_declared_encoding_round_trips(tmp_path: Path, cookie: str, codec: str) -> None:
    text = f"#!/usr/bin/env python\n{cookie}\nname = 'Müller'\n"
    path = tmp_path / "declared.py"
    path.write_bytes(text.encode(codec))
    source = read_source(path)
    assert source.text == text
    write_source_atomic(source, text + "other = 'ü'\n")
    assert path.read_bytes() == (text + "other = 'ü'\n").encode(codec)


def test_text_the_encoding_cannot_hold_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    raw = b"# coding: latin-1\nx = '\xe9'\n"
    path.write_bytes(raw)
    source = read_source(path)
    with pytest.raises(SourceError, match="cannot encode"):
        write_source_atomic(source, source.text + "y = '€'\n")
    assert path.read_bytes() == raw
    assert temp_leftovers(tmp_path) == []


def test_mode_bits_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "script.py"
    path.write_bytes(b"x = 1\n")
    path.chmod(0o754)
    write_source_atomic(read_source(path), "x = 2\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    assert path.read_bytes() == b"x = 2\n"


def test_read_only_file_is_reported_not_forced(tmp_path: Path) -> None:
    # Root may write a 0o444 file (os.access says yes); we refuse on the mode bits anyway.
    path = tmp_path / "frozen.py"
    path.write_bytes(b"x = 1\n")
    path.chmod(0o444)
    source = read_source(path)
    with pytest.raises(SourceError, match="read-only") as caught:
        write_source_atomic(source, "x = 2\n")
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    assert path.read_bytes() == b"x = 1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert temp_leftovers(tmp_path) == []


def test_identical_text_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "same.py"
    path.write_bytes(b"x = 1\r\n")
    os.utime(path, ns=(OLD_TIME_NS, OLD_TIME_NS))
    before = path.stat()
    write_source_atomic(read_source(path), "x = 1\r\n")
    after = path.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)


def test_symlink_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real" / "mod.py"
    real.parent.mkdir()
    real.write_bytes(b"x = 1\n")
    link = tmp_path / "link.py"
    link.symlink_to(Path("real") / "mod.py")
    write_source_atomic(read_source(link), "x = 2\n")
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "mod.py")
    assert real.read_bytes() == b"x = 2\n"
    assert temp_leftovers(tmp_path) == []


def test_file_changed_since_read_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "busy.py"
    path.write_bytes(b"x = 1\n")
    source = read_source(path)
    path.write_bytes(b"x = 1  # edited meanwhile\n")
    with pytest.raises(SourceError, match="changed on disk"):
        write_source_atomic(source, "x = 2\n")
    assert path.read_bytes() == b"x = 1  # edited meanwhile\n"


def test_temp_file_is_beside_target_synced_and_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "target.py"
    path.write_bytes(b"x = 1\n")
    calls: list[tuple[str, object]] = []
    real_fsync, real_replace, real_exchange = os.fsync, os.replace, swap._exchange

    def fsync(fd: int) -> None:
        calls.append(("fsync", fd))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        calls.append(("replace", (src, dst)))
        assert Path(src).read_bytes() == b"x = 2\n"  # complete before the rename
        real_replace(src, dst)

    def exchange(src: str, dst: str) -> bool:
        if not calls or calls[-1][0] != "replace":
            calls.append(("replace", (src, dst)))
            assert Path(src).read_bytes() == b"x = 2\n"  # complete before the swap
        return real_exchange(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(swap, "_exchange", exchange)
    write_source_atomic(read_source(path), "x = 2\n")
    kinds = [kind for kind, _ in calls]
    assert "replace" in kinds and kinds.index("fsync") < kinds.index("replace")
    (src, dst) = next(arg for kind, arg in calls if kind == "replace")  # type: ignore[misc]
    assert Path(src).parent == path.parent and TEMP_RE.match(Path(src).name)
    assert not Path(src).name.endswith(".py")
    assert Path(dst) == path.resolve()
    assert path.read_bytes() == b"x = 2\n"


@pytest.mark.parametrize("failing", ["write", "fsync", "replace", "fchmod", "_exchange"])
def test_failed_write_leaves_original_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "victim.py"
    path.write_bytes(b"x = 1\n")
    source = read_source(path)

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    if failing == "replace":  # the rename of platforms that cannot swap two names
        monkeypatch.setattr(swap, "_renameat2", False)
    monkeypatch.setattr(swap if failing == "_exchange" else os, failing, boom)
    with pytest.raises(SourceError) as caught:
        write_source_atomic(source, "x = 2\n")
    monkeypatch.undo()
    assert "left unchanged" in str(caught.value)
    assert path.read_bytes() == b"x = 1\n"
    assert temp_leftovers(tmp_path) == []
    assert set() == fileio._PENDING


# --------------------------------------------------------------------------- via the command


def run(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cli(), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


# name -> (text as the user wrote it, codec the bytes are in)
CLI_SAMPLES: dict[str, tuple[str, str]] = {
    "crlf": (te_module("\r\n"), "utf-8"),
    "cr_only": (te_module("\r"), "utf-8"),
    "mixed": (te_module("\n").replace("super().__init__()\n", "super().__init__()\r\n"), "utf-8"),
    "tabs": (te_module("\n", indent="\t"), "utf-8"),
    "bom": (te_module("\r\n"), "utf-8-sig"),
    "latin1_cookie": (te_module(prefix="# -*- coding: latin-1 -*-\n# Größe: ½\n"), "latin-1"),
    "utf8_cookie_nonascii": (
        te_module(prefix="# coding: utf-8\n")
        # non-ASCII before the flag on its line: byte columns differ from character columns
        .replace("y = self.fc(x,", "ÿ = self.fc(x,")
        .replace("return y", "return ÿ"),
        "utf-8",
    ),
    "formfeed_and_line_separator": (
        te_module(prefix="\x0c\n# a \u2028 b \x0b c\n").replace(
            "return y", "return y  # \u2029 \x1c \x85 not line ends for Python"
        ),
        "utf-8",
    ),
}


def newline_kinds(data: bytes) -> tuple[int, int, int]:
    crlf = data.count(b"\r\n")
    return crlf, data.count(b"\r") - crlf, data.count(b"\n") - crlf


def test_fix_preserves_encoding_newlines_and_layout(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    expected: dict[str, bytes] = {}
    for name, (text, codec) in CLI_SAMPLES.items():
        (tree / f"{name}.py").write_bytes(text.encode(codec))
        expected[name] = expected_fix(text).encode(codec)
    done = run("fix", tree, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for name, (text, codec) in CLI_SAMPLES.items():
        got = (tree / f"{name}.py").read_bytes()
        assert got == expected[name], f"{name}: fix changed more than the value"
        # The fix replaces a value: the newline style of every line is what it was.
        assert newline_kinds(got) == newline_kinds(text.encode(codec)), name
        assert got.startswith(b"\xef\xbb\xbf") == (codec == "utf-8-sig"), name
    assert temp_leftovers(tree) == []


def test_guard_strategy_import_uses_the_files_newlines(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.te-microbatch-lint]\nfix-strategy = "guard"\n')
    # the class sets `self.config`, so the guard (and its import) is used, not the None fallback
    configured = "        super().__init__()\n        self.config = None\n"
    text = TE_MODULE.replace("        super().__init__()\n", configured).replace("\n", "\r\n")
    path = tmp_path / "guarded.py"
    path.write_bytes(text.encode())
    done = run("fix", path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = path.read_bytes()
    assert got == expected_fix(text, fix_strategy="guard").encode()
    assert b"is_first_microbatch_tracked" in got
    crlf, cr, lf = newline_kinds(got)
    assert (cr, lf) == (0, 0), "the inserted import must use the file's CRLF newlines"


def test_mode_bits_survive_fix(tmp_path: Path) -> None:
    path = tmp_path / "tool.py"
    path.write_text(TE_MODULE)
    path.chmod(0o754)
    done = run("fix", path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert path.read_text() == expected_fix(TE_MODULE)
    assert stat.S_IMODE(path.stat().st_mode) == 0o754


def test_read_only_file_is_reported_and_the_rest_fixed(tmp_path: Path) -> None:
    frozen = tmp_path / "frozen_ro.py"
    frozen.write_text(TE_MODULE)
    frozen.chmod(0o444)
    other = tmp_path / "other.py"
    other.write_text(TE_MODULE)
    done = run("fix", tmp_path, cwd=tmp_path)
    assert done.returncode != 0, "a finding left unfixed because of a read-only file is not OK"
    lines = [line for line in done.stderr.splitlines() if "frozen_ro.py" in line]
    assert len(lines) == 1 and "read-only" in lines[0], done.stderr
    assert frozen.read_text() == TE_MODULE
    assert stat.S_IMODE(frozen.stat().st_mode) == 0o444
    assert other.read_text() == expected_fix(TE_MODULE)


NOTHING_TO_FIX: dict[str, bytes] = {
    "no_keyword.py": b"x = 1\r\n",
    "guarded_none.py": TE_MODULE.replace("=self.flag", "=None").encode(),
    "suppressed.py": TE_MODULE.replace("=self.flag)", "=self.flag)  # noqa: TEM001").encode(),
    "empty.py": b"",
    "latin1.py": b"# coding: latin-1\nx = '\xe9'\r\n",
}


def test_files_with_nothing_to_fix_are_not_rewritten(tmp_path: Path) -> None:
    before = {}
    for name, raw in NOTHING_TO_FIX.items():
        path = tmp_path / name
        path.write_bytes(raw)
        os.utime(path, ns=(OLD_TIME_NS, OLD_TIME_NS))
        before[name] = path.stat()
    done = run("fix", tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name, raw in NOTHING_TO_FIX.items():
        after = (tmp_path / name).stat()
        assert (tmp_path / name).read_bytes() == raw, name
        assert after.st_mtime_ns == before[name].st_mtime_ns, f"{name} was rewritten"
        assert after.st_ino == before[name].st_ino, f"{name} was replaced"


def test_symlink_and_its_target_in_one_run(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_text(TE_MODULE)
    (tmp_path / "alias.py").symlink_to("real.py")
    done = run("fix", "--jobs", "2", tmp_path, cwd=tmp_path)
    # The same file reached twice must be fixed once, without a spurious error.
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "alias.py").is_symlink()
    assert real.read_text() == expected_fix(TE_MODULE)
    assert temp_leftovers(tmp_path) == []
