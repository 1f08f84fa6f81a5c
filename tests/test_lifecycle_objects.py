"""The flag's life by object and by step (docs/rules.md, "Maintained, stale, conditional"):
a re-arm counts only where it reaches this object, every step, before the call.

``fixtures/lifecycle/object_and_step/`` is a package whose four reported wrappers each fail one
way (a re-arm only ``if args.resume``, once per run in ``setup``, only on an object of unknown
type, only under FP8 in a recipe that never spells the state words); its expected JSON is the
evidence. The catalogue (``tem001_lifecycle_objects.py``, ``_steps.py``, ``_conditions.py``)
holds one case per class, positive and negative."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from helpers import run_in_process

from lint_rules.analysis import analyze_source
from lint_rules.analysis.conditions import Reading, When, classify

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "fixtures" / "lifecycle"
ARGS = ["check", "--no-cache", "--isolated", "--output-format", "json"]
RECORDER = "class R:\n    def forward(self, m):\n        m.is_first_microbatch = True\n"


def _rows(where: Path, *paths: str, isolated: bool = True) -> list[dict]:
    args = ARGS if isolated else [a for a in ARGS if a != "--isolated"]
    proc = run_in_process([*args, *paths], where)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _path(row: dict) -> str:
    path = row["path"].replace("\\", "/")
    return path[2:] if path.startswith("./") else path


def _found(rows: list[dict], under: str = "") -> list[tuple]:
    keys = ("line", "column", "code", "message", "verdict")
    return [(_path(r), *(r[k] for k in keys)) for r in rows if _path(r).startswith(under)]


def test_the_package_reports_each_re_arm_that_misses_the_object_or_the_step() -> None:
    rows = _rows(CASES / "object_and_step", "model")
    keys = ("path", "line", "column", "code", "verdict", "evidence")
    expected = json.loads((CASES / "object_and_step.expected.json").read_text())
    assert [{k: r[k] for k in keys} for r in rows] == expected


def test_getters_and_forwarders_of_another_file_are_followed() -> None:
    """``across_files``: a flag read through another file's getter is judged by when the
    training loop sets its global (every step: maintained; once, before the loop: stale), and a
    call of another file's forwarder as if it passed its argument to TE (a flag set once:
    stale, TEM002; one re-armed every step, or None: nothing)."""
    rows = _rows(CASES / "across_files", "model")
    keys = ("path", "line", "column", "code", "verdict", "evidence")
    expected = json.loads((CASES / "across_files.expected.json").read_text())
    assert [{k: r[k] for k in keys} for r in rows] == expected
    assert [(r["line"], r["code"], r["verdict"]) for r in rows] == [
        (26, "TEM001", "stale"),
        (41, "TEM002", "stale"),
    ]


def test_the_repository_root_reports_what_the_examples_folder_reports() -> None:
    """``lint_rules/runtime/reference_te.py`` writes ``ctx.is_first_microbatch`` (an autograd
    context, never a module): checking the whole repository (with its own settings, which
    leave out ``fixtures/``) must not hide the examples' findings."""
    alone = _found(_rows(ROOT, "examples", isolated=False), "examples/")
    whole = _found(_rows(ROOT, ".", isolated=False), "examples/")
    assert len(alone) == 4
    assert whole == alone


def test_a_write_to_an_object_of_unknown_type_changes_nothing(tmp_path: Path) -> None:
    """The three lines of issue 29 beside ``megatron_style.py``: ``m`` may be anything, so it
    re-arms no known flag; the evidence names it as unknown."""
    shutil.copy(ROOT / "examples" / "megatron_style.py", tmp_path / "megatron_style.py")
    before = _rows(tmp_path, ".")
    (tmp_path / "recorder.py").write_text(RECORDER)
    after = _rows(tmp_path, ".")
    assert _found(after) == _found(before) and len(before) == 2
    notes = [e["message"] for row in after for e in row["evidence"]]
    assert any("not known to be this one (unknown)" in note for note in notes)


def _model(rearm_body: str) -> str:
    return (
        "import transformer_engine.pytorch as te\nfrom torch import nn\n\n\n"
        "class TELinear(te.Linear):\n    def __init__(self, hidden):\n"
        "        super().__init__(hidden, hidden)\n        self.is_first_microbatch = True\n\n"
        "    def forward(self, x):\n"
        "        out = super().forward(x, is_first_microbatch=self.is_first_microbatch)\n"
        "        self.is_first_microbatch = False\n        return out\n\n\n"
        "class Model(nn.Module):\n    def set_is_first_microbatch(self):\n"
        f"{rearm_body}\n\n\n"
        "def train(model, batches):\n    for i, b in enumerate(batches):\n        if i == 0:\n"
        "            model.set_is_first_microbatch()\n        model(b).sum().backward()\n"
    )


REARM = "            for m in self.modules():\n                m.is_first_microbatch = True"


def test_a_re_arm_after_return_never_runs() -> None:
    """(reliability-4 #11) the same re-arm is kept when it runs, and not after ``return``."""
    assert analyze_source(_model("        if True:\n" + REARM)) == []
    (finding,) = analyze_source(_model("        return\n        if True:\n" + REARM))
    assert finding.verdict == "stale"
    assert "nothing in the files seen re-arms" in finding.evidence[-1].message


def test_a_condition_read_through_a_local_is_a_condition_of_the_run() -> None:
    """(reliability-4 #12) ``fp8 = self.config.fp8`` then ``if fp8 is not None:`` is
    megatron-core 0.10's condition, spelled through a local: conditional, naming both."""
    direct = "        if self.config.fp8 is not None:\n" + REARM.replace("    ", "  ", 0)
    local = "        fp8 = self.config.fp8\n        if fp8 is not None:\n" + REARM
    for body, condition in (
        (direct, "self.config.fp8 is not None"),
        (local, "fp8 is not None (fp8 = self.config.fp8)"),
    ):
        (finding,) = analyze_source(_model(body))
        assert finding.verdict == "conditional"
        assert any(f"only if `{condition}`" in e.message for e in finding.evidence)


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        # conditions of the run, whatever their spelling
        ("self.config.fp8 is not None", When.RUN),
        ("fp8 is not None", When.RUN),  # fp8 = self.config.fp8
        ("isinstance(self.config.fp8_recipe, Recipe)", When.RUN),
        ("hasattr(config, 'fp8')", When.RUN),
        ("self.config.training", When.RUN),
        ("self.config.pp_size % 2 == 0", When.RUN),
        ("self.is_pipeline_first_stage", When.RUN),
        ("rank == 0", When.RUN),
        # per-step control flow
        ("hasattr(m, 'is_first_microbatch')", When.PER_STEP),
        ("self.training", When.PER_STEP),
        ("torch.is_grad_enabled()", When.PER_STEP),
        ("found", When.PER_STEP),  # a local that only holds constants
        ("decoder is not None", When.PER_STEP),  # not read from the configuration
        # the step's first microbatch
        ("is_first_microbatch", When.FIRST),
        ("self.count % self.n == 0", When.FIRST),
        ("not (self.count % self.n)", When.FIRST),
        ("self.count % self.n < 1", When.FIRST),
        ("self.left == 0", When.FIRST),  # a countdown refilled outside __init__
        ("mb == 0", When.FIRST),  # over the microbatch loop
        ("step % accum == 0", When.FIRST),  # over the loop that changes the weights
        # the first pass of the loop that changes the weights: once per process
        ("step == 0", When.ONCE),
    ],
)
def test_each_spelling_of_a_test_is_read_as_the_run_reads_it(test: str, expected: When) -> None:
    locals_ = {
        "fp8": ast.parse("self.config.fp8", mode="eval").body,
        "decoder": ast.parse("get_attr_wrapped_model(model, 'decoder')", mode="eval").body,
    }
    loops = {"mb": "micro", "step": "step", "i": "loop"}
    reading = Reading(
        lambda: locals_,
        lambda: frozenset({"found"}),
        loops.get,
        lambda: frozenset({"count", "refill:left", "left"}),
    )
    assert classify(ast.parse(test, mode="eval").body, reading) is expected
