"""Real-code regression tests: the pinned findings on megatron-core and transformer-engine.

Corpora (recorded here; change them only together with the expectations below):

- megatron-core 0.19.2 (PyPI wheel, cp312; downloaded with ``--python-version 3.12`` since it
  installs only on Python >= 3.12, never installed): exactly three TEM001 findings, the
  ``super().forward(..., is_first_microbatch=<local>)`` calls of ``TELinear``,
  ``TELayerNormColumnParallelLinear`` and ``TEGroupedLinear`` in
  ``megatron/core/extensions/transformer_engine.py`` (see ``docs/te-facts.md``);
- transformer-engine 2.20.2 (PyPI wheel, py3-none-any): zero findings in
  ``transformer_engine/pytorch`` and in the whole package (TE forwards its parameter);
- released code with the shapes listed in ``docs/te-facts.md`` (``RELEASES`` below, marked
  slow): megatron-core 0.8.0, 0.10.0 and 0.14.0 (the TE wrapper classes' ``super().forward``
  reported as resolved TE calls; 0.10.0 ``cuda_graphs.py``, an in-file non-TE runner, not
  reported; 0.8.0's graphed callables and 0.14.0's ``nvidia_kitchen`` subclasses reported as
  unresolved), megatron-bridge 0.6.2 (an in-file ``TransformerLayer`` subclass), nemo_toolkit
  1.23.0 (``layer = self._get_layer(i)`` resolved to TE) and transformer-engine 1.13.0 (clean).

The wheels are fetched once by ``benchmarks/corpora.py`` (the benchmark's cache:
``$TE_LINT_CACHE`` or ``.cache/``) and every test here skips, with the reason, when the
package registry cannot be reached (short timeouts) or ``$TE_LINT_OFFLINE`` is set and the
corpus is not cached yet. The fix tests work on a copy in a temporary directory.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpora import (  # noqa: E402
    ACCEPTANCE,
    MEGATRON_CORE,
    TRANSFORMER_ENGINE,
    CorpusSpec,
    CorpusUnavailable,
    corpus_info,
    fetch_corpus,
)

pytestmark = pytest.mark.network

MEGATRON_CORE_VERSION = "0.19.2"
TRANSFORMER_ENGINE_VERSION = "2.20.2"
MEGATRON_PY_FILES = 542
TE_PY_FILES = 222

TE_EXTENSIONS = "megatron/core/extensions/transformer_engine.py"
MEGATRON_EXPECTED = {
    (TE_EXTENSIONS, 1088, "TEM001"),  # TELinear.forward
    (TE_EXTENSIONS, 1336, "TEM001"),  # TELayerNormColumnParallelLinear.forward
    (TE_EXTENSIONS, 2430, "TEM001"),  # TEGroupedLinear.forward
}
MEGATRON_FIX_LINES = {1088, 1336, 2430}
GUARD = "is_first_microbatch_tracked"

_LOCATION = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ")


# ------------------------------------------------------------------------------------ helpers


def _corpus(spec: CorpusSpec, version: str) -> Path:
    assert spec.version == version, "benchmarks/corpora.py and this test disagree on the pin"
    try:
        root = fetch_corpus(spec, timeout=120, socket_timeout=10)
    except CorpusUnavailable as error:
        pytest.skip(f"{spec.requirement} unavailable (package registry unreachable?): {error}")
    info = corpus_info(root)
    assert (info["name"], info["version"]) == (spec.name, version)
    return root


@pytest.fixture(scope="session")
def megatron_core() -> Path:
    return _corpus(MEGATRON_CORE, MEGATRON_CORE_VERSION)


@pytest.fixture(scope="session")
def transformer_engine() -> Path:
    return _corpus(TRANSFORMER_ENGINE, TRANSFORMER_ENGINE_VERSION)


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("te-microbatch-lint")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from lint_rules.cli import main; sys.exit(main())"]


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def flake8_findings(cwd: Path, path: str) -> tuple[int, set[tuple[str, int, str]], str]:
    proc = _run([sys.executable, "-m", "flake8", "--select", "TEM", "--isolated", path], cwd)
    found = set()
    for line in proc.stdout.splitlines():
        match = _LOCATION.match(line)
        assert match, f"unexpected flake8 output line: {line!r}"
        found.add((os.path.normpath(match["path"]), int(match["line"]), match["code"]))
    return proc.returncode, found, proc.stderr


def check_findings(cwd: Path, *paths: str) -> tuple[int, set[tuple[str, int, str]], str]:
    proc = _run([*_cli(), "check", *paths, "--isolated", "--format", "json"], cwd)
    rows = json.loads(proc.stdout) if proc.stdout.strip() else []
    found = {(os.path.normpath(r["path"]), r["line"], r["code"]) for r in rows}
    assert len(found) == len(rows), "a finding was reported twice"
    return proc.returncode, found, proc.stderr


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` (not only .py): relative path -> (bytes, mtime_ns)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def changed_lines(before: bytes, after: bytes) -> set[int]:
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new), "the None fix must not add or remove lines"
    return {n for n, (a, b) in enumerate(zip(old, new), start=1) if a != b}


@pytest.fixture
def megatron_copy(megatron_core: Path, tmp_path: Path) -> Path:
    """A writable copy of the ``megatron`` package (the cached corpus is never modified)."""
    shutil.copytree(megatron_core / "megatron", tmp_path / "megatron", symlinks=True)
    return tmp_path


# ----------------------------------------------------------------------------------- corpora


def test_corpus_versions(megatron_core: Path, transformer_engine: Path) -> None:
    for root, spec, version, n_files in (
        (megatron_core, MEGATRON_CORE, MEGATRON_CORE_VERSION, MEGATRON_PY_FILES),
        (transformer_engine, TRANSFORMER_ENGINE, TRANSFORMER_ENGINE_VERSION, TE_PY_FILES),
    ):
        info = corpus_info(root)
        assert info["version"] == version
        assert info["wheel"].startswith(f"{spec.name.replace('-', '_')}-{version}-")
        assert sum(1 for _ in (root / spec.package_dir).rglob("*.py")) == n_files


# ------------------------------------------------------------------------------ megatron-core


@pytest.mark.realcode
def test_megatron_core_flake8_plugin(megatron_core: Path) -> None:
    rc, found, err = flake8_findings(megatron_core, "megatron")
    assert found == MEGATRON_EXPECTED, err
    assert rc == 1


def test_megatron_core_check_json(megatron_core: Path) -> None:
    rc, found, err = check_findings(megatron_core, "megatron")
    assert found == MEGATRON_EXPECTED, err
    assert rc == 1


@pytest.mark.realcode
def test_megatron_core_check_parallel_is_identical(megatron_core: Path) -> None:
    outputs = set()
    for jobs in ("1", "2", "1"):
        proc = _run([*_cli(), "check", "megatron", "--isolated", "--jobs", jobs], megatron_core)
        assert proc.returncode == 1, proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1


# ------------------------------------------------------------------------- transformer-engine


@pytest.mark.parametrize("path", ["transformer_engine/pytorch", "transformer_engine"])
def test_transformer_engine_check_clean(transformer_engine: Path, path: str) -> None:
    rc, found, err = check_findings(transformer_engine, path)
    assert found == set(), err
    assert rc == 0, err


@pytest.mark.realcode
def test_transformer_engine_flake8_plugin_clean(transformer_engine: Path) -> None:
    # The whole package (transformer_engine/pytorch included): one flake8 run.
    rc, found, err = flake8_findings(transformer_engine, "transformer_engine")
    assert found == set(), err
    assert rc == 0, err


# ---------------------------------------------------------------- fix on a copy (issue 3)


@pytest.mark.realcode
def test_megatron_core_fix_none_strategy(megatron_copy: Path) -> None:
    before = snapshot(megatron_copy)
    proc = _run([*_cli(), "fix", "megatron", "--isolated"], megatron_copy)
    assert proc.returncode == 0, proc.stderr
    after = snapshot(megatron_copy)

    assert before.keys() == after.keys()
    changed = {p for p in before if before[p][0] != after[p][0]}
    assert changed == {TE_EXTENSIONS}
    untouched_mtime = {p for p in before if p not in changed and before[p][1] != after[p][1]}
    assert untouched_mtime == set(), "files with nothing to fix were rewritten"
    assert changed_lines(before[TE_EXTENSIONS][0], after[TE_EXTENSIONS][0]) == MEGATRON_FIX_LINES
    fixed = after[TE_EXTENSIONS][0]
    ast.parse(fixed)
    for line in MEGATRON_FIX_LINES:
        assert b"is_first_microbatch=None" in fixed.splitlines()[line - 1]

    rc, found, err = check_findings(megatron_copy, "megatron")
    assert (rc, found) == (0, set()), err

    again = _run([*_cli(), "fix", "megatron", "--isolated"], megatron_copy)
    assert again.returncode == 0, again.stderr
    assert snapshot(megatron_copy) == after, "a second fix changed something"


@pytest.mark.realcode
def test_megatron_core_fix_guard_strategy(megatron_copy: Path) -> None:
    before = snapshot(megatron_copy)
    proc = _run(
        [*_cli(), "fix", "megatron", "--isolated", "--fix-strategy", "guard"], megatron_copy
    )
    assert proc.returncode == 0, proc.stderr
    after = snapshot(megatron_copy)
    changed = {p for p in before if before[p][0] != after[p][0]}
    assert changed == {TE_EXTENSIONS}

    text = after[TE_EXTENSIONS][0].decode("utf-8")
    tree = ast.parse(text)
    imports = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(a.name == GUARD for a in node.names)
    ]
    assert len(imports) == 1, f"the guard must be imported exactly once, got {len(imports)}"
    assert imports[0].module == "megatron.core.transformer.module"
    guard_calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == GUARD
    ]
    assert len(guard_calls) == len(MEGATRON_FIX_LINES)

    rc, found, err = check_findings(megatron_copy, "megatron")
    assert (rc, found) == (0, set()), err
    again = _run(
        [*_cli(), "fix", "megatron", "--isolated", "--fix-strategy", "guard"], megatron_copy
    )
    assert again.returncode == 0, again.stderr
    assert snapshot(megatron_copy) == after, "a second guard fix changed something"


# ------------------------------------------------------------ released code shapes (issue 10)

CG = "megatron/core/transformer/custom_layers/transformer_engine.py"
EXT = "megatron/core/extensions/transformer_engine.py"
KITCHEN = "megatron/core/extensions/kitchen.py"
NEMO = "nemo/collections/nlp/modules/common/megatron/transformer.py"
BRIDGE = "megatron/bridge/models/gpt_full_te_layer_autocast_spec.py"
RESOLVED, UNRESOLVED = "TE", "unresolved"
RELEASES: dict[str, tuple[str, set[tuple[str, int, str, str]]]] = {
    # corpus key: (path to check, {(path, line, code, how the callee is named)}): exactly these.
    "megatron-core-0.8.0": (
        "megatron",
        {
            (CG, 181, "TEM001", RESOLVED),  # TELinear
            (CG, 293, "TEM001", RESOLVED),  # TELayerNormColumnParallelLinear
            (CG, 656, "TEM001", RESOLVED),  # TEGroupedLinear
            # self.cuda_graphs[l][mb](...): filled outside the file (make_graphed_callables)
            ("megatron/core/transformer/transformer_block.py", 436, "TEM001", UNRESOLVED),
        },
    ),
    "megatron-core-0.10.0": (
        "megatron",
        {(EXT, 220, "TEM001", RESOLVED), (EXT, 372, "TEM001", RESOLVED)}
        | {(EXT, 904, "TEM001", RESOLVED)},  # and not transformer/cuda_graphs.py:250
    ),
    "megatron-core-0.14.0": (
        "megatron",
        {(EXT, 385, "TEM001", RESOLVED), (EXT, 573, "TEM001", RESOLVED)}
        | {(EXT, 1199, "TEM001", RESOLVED)}
        # subclasses of nvidia_kitchen modules: a package the file cannot show
        | {(KITCHEN, line, "TEM001", UNRESOLVED) for line in (352, 673, 999)},
    ),
    "megatron-bridge-0.6.2": ("megatron", {(BRIDGE, 254, "TEM001", RESOLVED)}),
    "nemo_toolkit-1.23.0": (
        "nemo",
        {(NEMO, 1256, "TEM001", RESOLVED), (NEMO, 1553, "TEM001", RESOLVED)},
    ),
    "transformer-engine-1.13.0": ("transformer_engine", set()),
}


def _named(message: str) -> str:
    """How the message names the callee: a resolved TE module, or unresolved."""
    if "unresolved `" in message or "not resolved" in message:
        return UNRESOLVED
    return RESOLVED if re.search(r"\bTE (\w+ )?`", message) else message


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(RELEASES))
def test_released_code_shapes(key: str) -> None:
    spec = ACCEPTANCE[key]
    root = _corpus(spec, spec.version)
    path, expected = RELEASES[key]
    proc = _run([*_cli(), "check", path, "--isolated", "--format", "json"], root)
    rows = json.loads(proc.stdout) if proc.stdout.strip() else []
    found = {
        (os.path.normpath(r["path"]), r["line"], r["code"], _named(r["message"])) for r in rows
    }
    assert found == expected, proc.stderr
    assert proc.returncode == (1 if expected else 0), proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("key", ["megatron-core-0.10.0", "nemo_toolkit-1.23.0"])
def test_released_code_flake8_agrees(key: str) -> None:
    spec = ACCEPTANCE[key]
    root = _corpus(spec, spec.version)
    path, expected = RELEASES[key]
    rc, found, err = flake8_findings(root, path)
    assert found == {(p, line, code) for p, line, code, _ in expected}, err


# ------------------------------------------------------- unsafe fixes on released code (issue 11)

BLOCK = "megatron/core/transformer/transformer_block.py"


@pytest.mark.slow
def test_megatron_core_0_8_0_graphed_callable_fix_is_unsafe(tmp_path: Path) -> None:
    """transformer_block.py:436 calls a CUDA-graphed callable (needs a bool flag) that the tool
    cannot resolve: the default fix leaves it alone, ``--unsafe-fixes`` rewrites it."""
    spec = ACCEPTANCE["megatron-core-0.8.0"]
    root = _corpus(spec, spec.version)
    shutil.copytree(root / "megatron", tmp_path / "megatron", symlinks=True)
    before = snapshot(tmp_path)
    safe = _run([*_cli(), "fix", "megatron", "--isolated"], tmp_path)
    assert safe.returncode == 1, safe.stderr  # the unresolved call remains
    assert "1 unsafe fix not applied" in safe.stderr, safe.stderr
    after = snapshot(tmp_path)
    changed = {p for p in before if before[p][0] != after[p][0]}
    assert changed == {CG}
    assert changed_lines(before[CG][0], after[CG][0]) == {181, 293, 656}
    assert _run([*_cli(), "fix", "megatron", "--isolated"], tmp_path).returncode == 1
    assert snapshot(tmp_path) == after, "a second fix changed something"

    unsafe = _run([*_cli(), "fix", "megatron", "--isolated", "--unsafe-fixes"], tmp_path)
    assert unsafe.returncode == 0, unsafe.stderr
    done = snapshot(tmp_path)
    assert {p for p in after if after[p][0] != done[p][0]} == {BLOCK}
    assert changed_lines(after[BLOCK][0], done[BLOCK][0]) == {436}
    assert b"is_first_microbatch=None," in done[BLOCK][0].splitlines()[435]
    assert (
        _run([*_cli(), "fix", "megatron", "--isolated", "--unsafe-fixes"], tmp_path).returncode == 0
    )
    assert snapshot(tmp_path) == done
