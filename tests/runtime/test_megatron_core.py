"""megatron-core's own TE wrappers (``TELinear``, ``TEGroupedLinear``, ``MegatronModule.
set_is_first_microbatch``) on the CPU reference, through a ``transformer_engine`` shim the test
builds (``te_shim.py``), in a child process (``megatron_core_run.py``).

Needs megatron-core (installed, or the 0.14.0 wheel fetched and unpacked by
``benchmarks/corpora.py`` under ``$TE_LINT_CACHE``) and numpy (megatron-core imports it; the
``test`` extra installs it); skips with the reason otherwise (no registry, no numpy).
``slow``: the child imports megatron-core (about 7 s of CPU).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch")

from te_shim import build_shim  # noqa: E402

from lint_rules.runtime.reference_state import UNSAFE_PICKLE_EXTRA_STATE_ENV  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSION = "0.14.0"

pytestmark = pytest.mark.network


def megatron_root() -> Path | None:
    """The folder holding ``megatron/core``: installed, or the cached wheel, or None."""
    spec = importlib.util.find_spec("megatron")
    if spec is not None and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations))).parent
        if (root / "megatron" / "core").is_dir():
            return root
    sys.path.insert(0, str(REPO))
    try:
        from benchmarks.corpora import ACCEPTANCE, CorpusUnavailable, fetch_corpus
    finally:
        sys.path.remove(str(REPO))
    try:  # the wheel is fetched once, as the real-code tests fetch theirs
        return fetch_corpus(ACCEPTANCE[f"megatron-core-{VERSION}"], timeout=120, socket_timeout=10)
    except CorpusUnavailable:
        return None


def run_arms(tmp_path: Path, *arms: str, env: dict[str, str] | None = None) -> dict[str, str]:
    root = megatron_root()
    if root is None:
        pytest.skip(f"megatron-core not installed, and megatron-core {VERSION} unavailable")
    if importlib.util.find_spec("numpy") is None:
        pytest.skip("megatron-core imports numpy, which is not installed (pip install 'numpy<2')")
    shim = build_shim(tmp_path / "shim")
    path = [str(REPO), str(shim), str(root), os.environ.get("PYTHONPATH", "")]
    clean = {k: v for k, v in os.environ.items() if k != UNSAFE_PICKLE_EXTRA_STATE_ENV}
    done = subprocess.run(
        [sys.executable, str(HERE / "megatron_core_run.py"), *arms],
        capture_output=True,
        text=True,
        timeout=600,
        env={**clean, "PYTHONPATH": os.pathsep.join(p for p in path if p), **(env or {})},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_megatron_cores_wrappers_lose_depth_2_at_the_first_step_of_each_process(
    tmp_path: Path,
) -> None:
    """The same outcome as the project's Megatron-shaped fixture, on megatron-core's classes:
    without FP8 the flag is True at the first step of each process (lost there, kept after);
    under FP8 ``set_is_first_microbatch`` re-arms it every step (lost every step);
    ``disable_parameter_transpose_cache=True`` passes None (kept every step)."""
    labels = run_arms(tmp_path)
    assert labels == {
        "TELinear": "lost,kept,lost,kept",
        "TEGroupedLinear": "lost,kept,lost,kept",
        "TELinear disable_parameter_transpose_cache": "kept,kept,kept,kept",
        "TEGroupedLinear fp8": "lost,lost,lost,lost",
        "TELinear fp8 DelayedScaling": "refused",
    }


@pytest.mark.slow
def test_megatron_cores_resume_of_delayed_scaling_state_needs_the_opt_in(tmp_path: Path) -> None:
    """A torch-native resume of megatron-core's TELinear under DelayedScaling is refused by
    TE 2.18+ (above); with ``NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1`` it loads."""
    arm = "TELinear fp8 DelayedScaling"
    labels = run_arms(tmp_path, arm, env={UNSAFE_PICKLE_EXTRA_STATE_ENV: "1"})
    assert labels == {arm: "lost,lost,lost,lost"}
