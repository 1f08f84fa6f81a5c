"""The first pass's quick look (``analysis.skim``): a file the prefilter rules out is read the
cheap way, only where the usual reading (``fileio.read_source``) reads it without an error, and
the first pass then records exactly what the usual reading makes it record (``plan.Known``)."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import modules_after
from hypothesis import given, settings
from hypothesis import strategies as st

from lint_rules import fileio
from lint_rules.analysis import prefilter, skim
from lint_rules.analysis.plan import plan_files
from lint_rules.analysis.records import Job
from lint_rules.fileio import read_source
from lint_rules.settings import Settings

CASES = {
    "plain.py": b"import torch\n\ndef f(x):\n    return x\n",
    "unicode.py": "# caf\u00e9\nname = '\u00e9t\u00e9'\n".encode(),
    "state.py": b"class Loop:\n    def step(self):\n        self.Micro_Batch = 0\n",
    "state_unicode.py": "# \u00e9\nMICROBATCH_SIZE = 4\n".encode(),
    "flag.py": b"def f(m, x):\n    return m(x, is_first_microbatch=True)\n",
    "te.py": b"import transformer_engine.pytorch as te\nlayer = te.Linear(4, 4)\n",
    "te_string.py": b"NAME = 'transformer_engine'\n",
    "nul.py": b"x = 1\n\x00\n",
    "latin1.py": b"x = '\xe9'\n",
    "bom.py": b"\xef\xbb\xbfx = 1\n",
    "cookie.py": b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    "cookie2.py": b"#!/usr/bin/env python\n# coding: utf-8\nx = 1\n",
    "bad_cookie.py": b"# coding: no-such-codec\nx = 1\n",
    "split_word.py": b"# cod\ning\nx = 1\n",
    "late_cookie.py": b"x = 1\ny = 2\n# coding: latin-1\n",
    "cr_only.py": b"x = 1\ry = 2\r",
    "empty.py": b"",
    "decoding.py": b'"""Flex Decoding: caf\xc3\xa9."""\nx = 1\n',
    "cookie_bad_utf8.py": b"# coding: utf-8\nx = '\xe9'\n",
}
INIT = b"from .layers import Block\n"  # a package's __init__.py that may re-export

QUICK = {
    "plain.py",
    "unicode.py",
    "state.py",
    "state_unicode.py",
    "late_cookie.py",
    "cookie2.py",
    "split_word.py",
    "decoding.py",
    "cr_only.py",
    "empty.py",
    "__init__.py",
}
"""Read the quick way: UTF-8 without a BOM, with no coding cookie in the first two lines but
UTF-8's (``coding`` elsewhere in them is no cookie: ``split_word.py``, ``decoding.py``),
neither the flag nor TE's package name spelt. The others go the usual way."""


def _tree(tmp_path: Path) -> list[str]:
    package = tmp_path / "pkg"
    package.mkdir()
    paths = []
    for name, data in [*CASES.items(), ("__init__.py", INIT)]:
        path = package / name
        path.write_bytes(data)
        os.utime(path, (1_000_000_000, 1_000_000_000))  # not modified just now: recorded
        paths.append(str(path))
    return paths


def test_known_from_bytes_only_where_the_usual_way_reads_the_same(tmp_path: Path) -> None:
    quick = set()
    for path in _tree(tmp_path):
        found = skim.skim(path)
        if found is not None:
            source = read_source(path)
            assert found == (source.raw, source.identity)
            assert source.encoding == "utf-8"  # no error, no BOM, no cookie
            quick.add(os.path.basename(path))
    assert quick == QUICK


def test_what_is_not_a_readable_file_is_left_to_the_reader(tmp_path: Path) -> None:
    (tmp_path / "folder.py").mkdir()
    assert skim.skim(str(tmp_path / "folder.py")) is None
    assert skim.skim(str(tmp_path / "missing.py")) is None
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.py")
        assert skim.skim(str(tmp_path / "fifo.py")) is None  # opened without waiting: no hang


def test_a_file_is_asked_what_it_is_once_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One system call less a file: no ``stat`` before the open (``fstat`` after it)."""
    path = tmp_path / "plain.py"
    path.write_bytes(CASES["plain.py"])

    stat, asked = os.stat, []

    def recorded(name: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(os.fspath(name))
        return stat(name, *args, **kwargs)

    monkeypatch.setattr(os, "stat", recorded)
    assert skim.skim(str(path)) is not None
    assert str(path) not in asked


PIECES = [
    b"a",
    b"\n",
    b"\r",
    b"\xc3\xa9",  # é
    b"\xe2\x80\x94",  # an em dash
    b"\xf0\x9f\x9a\xa8",  # an emoji: four bytes
    b"\xc3",  # a lead byte alone
    b"\xa9",  # a continuation byte alone
    b"\xe2\x80",  # three bytes cut short
    b"\xed\xa0\x80",  # a surrogate
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xc0\xaf",  # overlong
    b"\xff",
]


@pytest.mark.parametrize("piece", [1, 2, 5, 4096])
def test_utf8_is_checked_a_piece_at_a_time_as_the_whole_decodes(
    monkeypatch: pytest.MonkeyPatch, piece: int
) -> None:
    """Cut before a line break, the pieces are valid exactly where the whole is: a character
    cut by a line break is invalid in the whole (``\\xc3\\n\\xa9``) and in its piece."""
    monkeypatch.setattr(skim, "_PIECE", piece)
    rng = random.Random(32)
    answers = set()
    for _ in range(4000):
        raw = b"".join(rng.choice(PIECES) for _ in range(rng.randrange(14)))
        try:
            raw.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        assert skim._utf8(raw) == valid, raw
        answers.add((valid, raw.isascii()))
    assert answers == {(True, True), (True, False), (False, False)}


def test_with_the_gates_off_nothing_is_read_the_quick_way(tmp_path: Path) -> None:
    path = tmp_path / "plain.py"
    path.write_bytes(CASES["plain.py"])
    assert skim.skim(str(path), prefilter.ON) is not None
    assert skim.skim(str(path), prefilter.OFF) is None


def test_state_words_are_found_in_the_bytes_as_in_the_lowered_text() -> None:
    """``mentions_state_bytes``: no character outside ASCII lowers to a letter a state word can
    use (U+0130 lowers to ``i`` and a combining dot, never followed by ``c``; U+212A to ``k``),
    so the ASCII bytes lowered find the words exactly where the text lowered does."""
    letters = set("".join(prefilter.STATE_WORDS))
    for code in range(0x80, 0x110000):
        lowered = chr(code).lower()
        ascii_part = {c for c in lowered if c.isascii()}
        assert not ascii_part or lowered in ("i\u0307", "k"), hex(code)
        assert "k" not in letters
    texts = [
        "self.Micro_Batch = 1",
        "MICROBATCH = 4  # caf\u00e9",
        "m\u0130crobatch = 1",  # the dotted capital I: lowered, 'i' and a dot, not a word
        "micro\u212abatch",
        "\u00b5batch, micro-batch, micro batch",
    ]
    expected = [True, True, False, False, False]
    assert [any(w in t.lower() for w in prefilter.STATE_WORDS) for t in texts] == expected
    assert [prefilter.mentions_state_bytes(t.encode()) for t in texts] == expected
    assert [prefilter.mentions_state(t) for t in texts] == expected


INITS = {
    "state_quick": b"from .layers import Block\nMicro_Batch = 1\n",
    "state_usual": "# -*- coding: latin-1 -*-\nfrom .a import b\nMICROBATCH = '\u00e9'\n".encode(
        "latin-1"
    ),
    "state_unicode": "from .a import b  # \u00e9\nself.current_microbatch = 0\n".encode(),
    "plain": b"from .layers import Block\n",
    "flag": b"from .a import b\nf(is_first_microbatch=x)  # microbatch\n",
}
"""Packages' ``__init__.py`` (they may re-export): the state words, any case, any encoding,
decide whether a run reads one that fails the prefilter for its facts (``Plan.deferred``)."""


@pytest.mark.parametrize("quick", [True, False])
def test_the_state_words_of_a_package_init_decide_where_it_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick: bool
) -> None:
    paths = []
    for name, data in INITS.items():
        (tmp_path / name).mkdir()
        path = tmp_path / name / "__init__.py"
        path.write_bytes(data)
        os.utime(path, (1_000_000_000, 1_000_000_000))
        paths.append(str(path))
    if not quick:
        monkeypatch.setattr(skim, "skim", lambda path, gates=None: None)
    index = _Index()
    plan = plan_files(Job(), paths, lambda path: Settings(), index, crossfile=True)
    states = {p.split(os.sep)[-2] for p, (_, known) in index.remembered.items() if known.state}
    assert states == {"state_quick", "state_usual", "state_unicode"}
    deferred = {paths[place].split(os.sep)[-2] for place, _ in plan.deferred}
    assert deferred == {"plain"}  # the others are read for the index (``flag`` is parsed)


class _Index:
    """The on-disk index as the first pass sees it: empty, recording what it is told."""

    def __init__(self) -> None:
        self.remembered: dict[str, tuple[Any, Any]] = {}

    def known(self, path: str) -> None:
        return None

    def remember(self, path: str, identity: Any, known: Any) -> None:
        self.remembered[path] = (identity, known)

    def get(self, digest: str, path: str) -> None:
        return None


def _first_pass(paths: list[str], crossfile: bool) -> tuple[Any, dict[str, tuple[Any, Any]]]:
    index = _Index()
    plan = plan_files(Job(), paths, lambda path: Settings(), index, crossfile=crossfile)
    found = (plan.done, plan.to_parse, plan.passed, plan.deferred, plan.te_importers)
    alone = plan_files(Job(), paths, lambda path: Settings(), None, crossfile=crossfile)
    without = (alone.done, alone.to_parse, alone.passed, alone.deferred, alone.te_importers)
    return (found, without, alone.digests, sorted(alone.raws)), index.remembered


@pytest.mark.parametrize("crossfile", [False, True])
def test_the_first_pass_records_what_the_usual_reading_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crossfile: bool
) -> None:
    paths = _tree(tmp_path)
    read: list[str] = []

    def reader(path: str) -> Any:
        read.append(os.path.basename(path))
        return read_source(path)

    monkeypatch.setattr(fileio, "read_source", reader)
    quick, quick_index = _first_pass(paths, crossfile)
    assert set(read) == set(CASES) - QUICK  # the others read the quick way
    monkeypatch.setattr(skim, "skim", lambda path, gates=None: None)  # every file the usual way
    usual, usual_index = _first_pass(paths, crossfile)
    assert quick == usual
    assert quick_index == usual_index
    states = {os.path.basename(p) for p, (_, known) in usual_index.items() if known.state}
    # Asked only of a file that may re-export and fails the prefilter (``plan.Known``): the
    # state words of ``state.py``, ``state_unicode.py`` and ``flag.py`` decide nothing there.
    assert states == set()
    unreadable = {"nul.py", "latin1.py", "bad_cookie.py", "cookie_bad_utf8.py"}  # errors
    assert {os.path.basename(p) for p in paths} - unreadable == {
        os.path.basename(p) for p in usual_index
    }


def test_the_bytes_are_kept_from_the_first_file_that_passes(tmp_path: Path) -> None:
    """A run over several files keeps the bytes it read for what it later asks of its files
    (``Plan.raws``), from the first file that passes on: a run where nothing passes asks
    nothing of them."""
    paths = []
    for name in ("a.py", "b.py", "c.py"):
        path = tmp_path / name
        path.write_bytes(CASES["flag.py" if name == "b.py" else "plain.py"])
        paths.append(str(path))
    plan = plan_files(Job(), paths, lambda path: Settings(), None, crossfile=True)
    assert [place for place, _ in plan.passed] == [1]
    assert sorted(plan.raws) == paths[1:]
    assert plan.raws[paths[2]] == CASES["plain.py"]
    plan = plan_files(Job(), paths[::2], lambda path: Settings(), None, crossfile=True)
    assert not plan.passed and plan.raws == {}


def test_a_cold_run_where_nothing_passes_imports_no_analysis(tmp_path: Path) -> None:
    """What a fresh interpreter imports for a cold ``check --isolated --no-cache`` of a tree
    that never spells the flag nor TE's package name (transformers, torch): discovery, the
    first pass and the output; no module of the run's index or lifecycle facts (not even for
    the package's ``__init__.py``, which may re-export: it is deferred, then done unread), and
    none of ``ast``, ``dataclasses``, ``inspect`` or ``typing``."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .layers import Block\n")
    (package / "layers.py").write_text("import torch\n\nclass Block(torch.nn.Module):\n    pass\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "notes.py").write_text("# caf\u00e9\nMICROBATCH = 4\n", encoding="utf-8")
    out, status, modules = modules_after(
        tmp_path, "check", "--isolated", "--no-cache", "--output-format", "json", "pkg"
    )
    assert (out, status) == ("[]\n", 0)  # no finding, no error
    assert "lint_rules.analysis.skim" in modules  # the first pass ran
    assert not {"ast", "dataclasses", "inspect", "typing"} & modules
    analysis = {
        "lint_rules.analysis.run",
        "lint_rules.analysis.runindex",
        "lint_rules.analysis.runfacts",
        "lint_rules.analysis.gather",
        "lint_rules.analysis.builds",
        "lint_rules.analysis.facts",
        "lint_rules.findings",
        "lint_rules.fileio",
    }
    assert not analysis & modules


_GLOB_PARTS = ["a", "b", "build", ".venv", "x.py", "*", "?", ".", "-", "egg-info", "~", "+"]


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.sampled_from(["", "/"]),
            st.lists(st.sampled_from([*_GLOB_PARTS, "/"]), min_size=1, max_size=4),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    ),
    path=st.lists(
        st.sampled_from(["a", "b", "build", ".venv", "x.py", "a.b", "-", "ab+"]),
        min_size=1,
        max_size=4,
    ),
    folder=st.booleans(),
)
def test_simple_ignore_files_match_as_pathspec_does(
    lines: list[tuple[str, list[str], bool]], path: list[str], folder: bool
) -> None:
    """An ignore file that only names files or folders (``discovery._Names``) is matched
    without pathspec: the same answer as ``pathspec.GitIgnoreSpec`` for every path."""
    import pathspec

    from lint_rules.cli.discovery import _check, _Names

    text = [lead + "".join(parts) + ("/" if slash else "") for lead, parts, slash in lines]
    names = _Names.of(["# a comment", "", *text])
    if names is None:  # a part made of dots only or empty (`a//b`), or a `**`: pathspec's
        parts = [p for line in text for p in line.strip("/").split("/")]
        assert any(not p.strip(".") or "**" in p for p in parts) or any("//" in t for t in text)
        return
    relative = "/".join(path) + ("/" if folder else "")
    expected = _check(pathspec.GitIgnoreSpec.from_lines(text), relative)
    assert _check(names, relative) == expected, (text, relative)


def test_ignore_files_that_are_not_simple_are_left_to_pathspec() -> None:
    from lint_rules.cli.discovery import _Names

    for line in ("!keep.py", "docs/**", "a//b", "**/tmp", "a b", "[ab].py", "x\\#", " y"):
        assert _Names.of(["build/", line]) is None, line
    assert _Names.of([".venv/", "__pycache__/", "*.egg-info/", "*.pyc", "benchmarks/results/"])


def test_with_one_configuration_the_excludes_are_asked_once(tmp_path: Path) -> None:
    """``--isolated`` (or ``--config``): every folder has the same excludes, so discovery asks
    the resolver for them once, not once a folder; the files found are the same."""
    from lint_rules.cli.discovery import discover
    from lint_rules.cli.options import Configuration
    from lint_rules.settings import ConfigResolver

    for folder in ("a", "a/b", "c", "c/d/e"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "m.py").write_text("x = 1\n")
    asked: list[str] = []
    resolver = ConfigResolver(isolated=True)
    answer = resolver.settings_for

    def settings_for(path: Any) -> Any:
        asked.append(str(path))
        return answer(path)

    resolver.settings_for = settings_for  # type: ignore[method-assign]
    found = discover([str(tmp_path)], Configuration(resolver, ()).excludes).files
    assert sorted(os.path.relpath(f, tmp_path) for f in found) == sorted(
        os.path.join(*p.split("/"), "m.py") for p in ("a", "a/b", "c", "c/d/e")
    )
    assert len(asked) == 1
