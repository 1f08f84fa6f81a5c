"""Never damage a file: concurrent saves, encodings, permissions, output files (reproducers
of a reliability review, each kept as a test)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import lint_rules.exchange as swap
import lint_rules.fileio as fileio
from lint_rules.cli import main

MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n    def forward(self, x):\n"
    "        return self.fc(x, is_first_microbatch=self.flag)\n"
)
SAVED = "# line the user just saved\n"


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    return path


def test_a_save_while_the_copy_is_synced_is_kept(
    module: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The editor saves while fix syncs its temporary copy: the save is kept and the file is
    reported as changed since it was read (exit 2), never overwritten with an older fix."""
    real, saved = os.fsync, []

    def fsync(fd: int) -> None:
        if not saved:
            saved.append(1)
            with open(module, "a") as handle:
                handle.write(SAVED)
        real(fd)

    monkeypatch.setattr(fileio.os, "fsync", fsync)
    assert main(["fix", "--no-cache", "m.py"]) == 2
    assert module.read_text() == MODULE + SAVED
    assert "changed on disk since it was read" in capsys.readouterr().err


NEEDS_SWAP = pytest.mark.skipif(not swap._exchange_supported(), reason="needs renameat2 (Linux)")


def at_the_swap(monkeypatch: pytest.MonkeyPatch, *actions: object) -> list[str]:
    """Run ``actions[i]`` right before the i-th swap of ``fix``'s file (the window between
    the last check and the rename); returns the temporary names swapped."""
    real, calls = swap._exchange, []

    def exchange(temp: str, target: str) -> bool:
        if len(calls) < len(actions):
            actions[len(calls)]()  # type: ignore[operator]
        calls.append(temp)
        return real(temp, target)

    monkeypatch.setattr(swap, "_exchange", exchange)
    return calls


def fixed_nothing(err: str) -> None:
    assert "another program wrote the file while fix replaced it" in err, err
    assert "fixed m.py" not in err and "1 fixed" not in err


@NEEDS_SWAP
def test_an_in_place_save_right_before_the_swap_is_kept(
    module: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A save landing on the file read, after the last check and before the swap: the swap
    puts that file back (the file itself, never a copy), and the file is not fixed."""
    at_the_swap(monkeypatch, lambda: module.write_text(MODULE + SAVED))
    assert main(["fix", "--no-cache", "m.py"]) == 2
    assert module.read_text() == MODULE + SAVED
    fixed_nothing(capsys.readouterr().err)
    assert [p.name for p in module.parent.iterdir()] == ["m.py"]


@NEEDS_SWAP
def test_an_in_place_save_straddling_the_swap_is_kept(
    module: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reproducer #04: the editor's ``open(O_TRUNC)`` lands before the swap, its ``write``
    after fix is done. The truncated file is the one found at the path, so it goes back, and
    the write lands in the file the path names: never an empty file."""
    editor: list = []
    at_the_swap(monkeypatch, lambda: editor.append(open(module, "w")))  # noqa: SIM115
    assert main(["fix", "--no-cache", "m.py"]) == 2
    editor[0].write(MODULE + SAVED)
    editor[0].close()
    assert module.read_text() == MODULE + SAVED
    fixed_nothing(capsys.readouterr().err)


@NEEDS_SWAP
def test_an_atomic_save_right_before_the_swap_is_kept(
    module: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reproducer #05: the editor renames its copy over the file after the last check: the
    swap takes the editor's file out of the path, finds it is not the file read, and swaps
    it back. ``fix`` never says ``fixed``."""

    def atomic_save() -> None:
        module.with_name("m.py.swp").write_text(MODULE + SAVED)
        os.replace(module.with_name("m.py.swp"), module)

    at_the_swap(monkeypatch, atomic_save)
    assert main(["fix", "--no-cache", "m.py"]) == 2
    assert module.read_text() == MODULE + SAVED
    fixed_nothing(capsys.readouterr().err)
    assert [p.name for p in module.parent.iterdir()] == ["m.py"]


@NEEDS_SWAP
@pytest.mark.parametrize("second", ["atomic", "in place"])
def test_two_saves_around_the_swap_back_keep_both(
    module: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], second: str
) -> None:
    """An in-place save before the swap, then a save (atomic, or into the fixed copy then at
    the path) before the swap back: the newest save is at the path, the other one beside it
    under the name the error gives."""

    def atomic_save() -> None:
        module.with_name("m.py.swp").write_text(MODULE + SAVED + SAVED)
        os.replace(module.with_name("m.py.swp"), module)

    def in_place_save() -> None:
        module.write_text(MODULE + SAVED + SAVED)

    then = atomic_save if second == "atomic" else in_place_save
    at_the_swap(monkeypatch, lambda: module.write_text(MODULE + SAVED), then)
    assert main(["fix", "--no-cache", "m.py"]) == 2
    assert module.read_text() == MODULE + SAVED + SAVED
    err = capsys.readouterr().err
    fixed_nothing(err)
    kept = [p for p in module.parent.iterdir() if p.name != "m.py"]
    assert len(kept) == 1 and kept[0].read_text() == MODULE + SAVED and kept[0].name in err


def test_without_the_swap_an_in_place_save_straddling_the_rename_is_kept(
    module: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where names cannot be swapped, the file read stays linked across the rename and is
    moved back when it was written to: the save's write lands in the file at the path."""
    monkeypatch.setattr(swap, "_renameat2", False)
    real, editor = os.replace, []

    def replace(src: str, dst: str) -> None:
        if not editor and dst.endswith("m.py"):
            editor.append(open(dst, "w"))  # noqa: SIM115
        real(src, dst)

    monkeypatch.setattr(fileio.os, "replace", replace)
    assert main(["fix", "--no-cache", "m.py"]) == 2
    editor[0].write(MODULE + SAVED)
    editor[0].close()
    assert module.read_text() == MODULE + SAVED
    fixed_nothing(capsys.readouterr().err)
    assert [p.name for p in module.parent.iterdir()] == ["m.py"]


def test_a_rename_style_save_after_the_read_is_not_overwritten(module: Path) -> None:
    source = fileio.read_source(module)
    other = module.with_name("other.py")
    other.write_text(MODULE)  # same bytes, new inode: the editor's rename-style save
    os.replace(other, module)
    with pytest.raises(fileio.SourceError, match="changed on disk since it was read"):
        fileio.write_source_atomic(source, MODULE.replace("True", "False"))
    assert module.read_text() == MODULE


@pytest.mark.parametrize(
    "encoding, head",
    [("cp932", b"# \x87\x90\n"), ("big5", b"# \xa2\xcc\n"), ("unicode_escape", b"# x\n")],
)
def test_a_codec_that_does_not_round_trip_is_refused_untouched(
    module: Path, encoding: str, head: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    """Writing the whole text back in such a codec would change bytes outside the fix (NEC
    0x8790 becomes 0x81E0 in cp932; unicode_escape turns every newline into ``\\n``)."""
    raw = f"# -*- coding: {encoding} -*-\n".encode() + head + MODULE.encode()
    assert raw.decode(encoding).encode(encoding) != raw  # the premise
    module.write_bytes(raw)
    assert main(["fix", "--no-cache", "m.py"]) == 2
    assert module.read_bytes() == raw
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "does not give back the bytes" in errors[0]


def test_a_codec_that_round_trips_is_still_fixed(module: Path) -> None:
    raw = b"# -*- coding: cp932 -*-\n# \x82\xa0\n" + MODULE.encode()
    module.write_bytes(raw)
    assert main(["fix", "--no-cache", "m.py"]) == 0
    assert module.read_bytes() == raw.replace(b"self.flag)", b"None)")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_setuid_and_setgid_bits_survive_when_root_fixes_another_users_file(module: Path) -> None:
    os.chown(module, 65534, 65534)
    os.chmod(module, 0o6755)
    assert main(["fix", "--no-cache", "m.py"]) == 0
    info = module.stat()
    assert stat.S_IMODE(info.st_mode) == 0o6755 and (info.st_uid, info.st_gid) == (65534, 65534)
    assert "None)" in module.read_text()


def test_setgid_bit_survives_a_fix(module: Path) -> None:
    os.chmod(module, 0o2754)
    assert main(["fix", "--no-cache", "m.py"]) == 0
    assert stat.S_IMODE(module.stat().st_mode) == 0o2754


@pytest.mark.parametrize("spelling", ["m.py", "./m.py", "{dir}/m.py", "link.py"])
def test_output_file_naming_an_input_is_refused_before_anything_is_written(
    module: Path, spelling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (module.parent / "link.py").symlink_to("m.py")
    target = spelling.format(dir=module.parent)
    assert main(["check", "--no-cache", ".", "--output-file", target]) == 2
    assert module.read_text() == MODULE
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "is one of the files checked" in errors[0]


def test_output_file_elsewhere_still_gets_the_report(module: Path) -> None:
    assert main(["check", "--no-cache", "m.py", "--output-file", "report.txt"]) == 1
    assert "TEM" in (module.parent / "report.txt").read_text()


def test_thousands_of_findings_in_one_file_are_all_fixed() -> None:
    """Edits are applied with a sorted index of the spans taken (linear; the time per finding
    is measured in benchmarks/fix_scaling.py): every finding is still fixed exactly once."""
    from lint_rules.fixing import fix_source

    head, method = MODULE.split("\n    def forward", 1)
    text = head + "".join(f"\n    def f{i}" + method for i in range(3000))
    result = fix_source(text)
    assert len(result.applied) == 3000
    assert result.text.count("is_first_microbatch=None") == 3000
    assert result.text.replace("is_first_microbatch=None", "is_first_microbatch=self.flag") == text


def test_a_file_in_a_read_only_directory_is_refused(module: Path) -> None:
    """The rename writes the directory: a 0555 directory is protected like a 0444 file, also
    when root runs the fix (root could write it)."""
    os.chmod(module.parent, 0o555)
    try:
        assert main(["fix", "--no-cache", str(module)]) == 2
    finally:
        os.chmod(module.parent, 0o755)
    assert module.read_text() == MODULE


def test_an_idna_file_that_cannot_be_written_back_is_one_line(
    module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """idna fails on a line over 63 characters when encoding: refused, never an internal
    error."""
    raw = b"# -*- coding: idna -*-\n" + MODULE.encode() + b"# " + b"y" * 80 + b"\n"
    module.write_bytes(raw)
    assert main(["fix", "--no-cache", "m.py"]) == 2
    assert module.read_bytes() == raw
    err = capsys.readouterr().err
    assert "m.py: error: its encoding idna does not give back the bytes" in err
    assert "internal error" not in err
