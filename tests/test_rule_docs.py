"""Messages and rule docs come from one table (``lint_rules.rules.RULES``).

- each finding's message is one line of at most 100 characters for realistic callees, starts with
  the rule's stable text, names the callee and the fix, and never doubles a word;
- ``te-microbatch-lint rule CODE`` / ``rule --all`` print the explanation;
- the generated blocks of docs/rules.md and docs/config.md equal what the tables give;
- SARIF's rule descriptions come from the same table.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

from lint_rules.analysis import analyze_source
from lint_rules.docgen import TARGETS, explain, replace_block
from lint_rules.rules import MESSAGE_LIMIT, RULES, callee_text, format_message

PROJECT = Path(__file__).resolve().parent.parent
REALISTIC_CALLEES = [
    "TE Linear `self.fc`",
    "TE Linear `super().forward`",
    "TE GroupedLinear `super().forward`",
    "TE LayerNormLinear `self.linear_qkv`",
    "TE TransformerLayer `self.layers[i]`",
    "TE module `self.mlp`",
    "unresolved `self.decoder.fc`",
    "unresolved `self.cuda_graphs[index][mb]`",
    "TE `te.fp8_autocast`",
    "TE LayerNormMLP `te_checkpoint(self.mlp)`",
    "TE Linear `functools.partial(self.fc)`",
]
VALUES = {"guard": "is_first_microbatch_tracked", "mapping": "kwargs", "why": "for loop, line 22"}


@pytest.mark.parametrize("code", list(RULES))
@pytest.mark.parametrize("callee", REALISTIC_CALLEES)
def test_messages_are_short_and_name_the_callee(code: str, callee: str) -> None:
    """TEM001 and TEM002 (most findings) name every realistic callee in full; the others name
    one of up to 36 characters in full and cut a longer one's spelling to fit."""
    message = format_message(code, callee, **VALUES)
    assert message.startswith(code + " ")
    assert len(message) <= 100, (len(message), message)
    assert "\n" not in message
    if code in ("TEM001", "TEM002") or len(callee) <= 36:
        assert callee in message
    else:
        assert callee in message or "..." in message.split("`")[1], message


@pytest.mark.parametrize("code", list(RULES))
@pytest.mark.parametrize("te_class", ["MultiheadAttention", "LayerNormLinear", None])
@pytest.mark.parametrize("resolved", [True, False])
def test_a_long_spelling_is_cut_to_fit(code: str, te_class: str | None, resolved: bool) -> None:
    spelling = "self.decoder.layers[layer_number].self_attention.core"  # 52 characters
    callee = callee_text(spelling, te_class, resolved, via="tensor_parallel.checkpoint")
    message = format_message(code, callee, **VALUES)
    assert len(message) == MESSAGE_LIMIT == 100, message
    kept = message.split("`")[1]
    assert "..." in kept and kept.startswith("tens") and kept.endswith("ore)"), message
    rule = RULES[code]
    template = rule.message if resolved else rule.unresolved_message or rule.message
    assert message.endswith(template.rsplit("}", 1)[-1])  # the advice is whole


def test_unresolved_callee_advice_is_conditional() -> None:
    """A CUDA-graphed callable needs a bool: for a callee that may not be TE, 'pass None' is
    advice only if it is TE."""
    source = """\
import transformer_engine.pytorch as te


class Block:
    def __init__(self):
        self.fc = te.Linear(4, 4)
        self.flag = True

    def forward(self, x, other, graphed):
        a = self.fc(x, is_first_microbatch=self.flag)
        b = graphed(x, is_first_microbatch=self.flag)
        kw = {"is_first_microbatch": self.flag}
        return other.run(x, **kw)
"""
    messages = sorted(f.message for f in analyze_source(source))
    assert messages == [
        "TEM001 untracked flag to TE Linear `self.fc`: pass None or guard it",
        "TEM001 untracked flag to unresolved `graphed`: if TE, pass None or guard it",
        "TEM003 untracked flag in **kw to unresolved `other.run`: if TE, store None or guard it",
    ], messages


def test_explanation_says_how_to_silence_an_unresolved_callee() -> None:
    text = RULES["TEM001"].explanation
    for way in ('unresolved = "ignore"', "# noqa: TEM001", "tracked-functions"):
        assert way in text, way


@pytest.mark.parametrize("code", list(RULES))
def test_messages_start_with_the_rules_own_text(code: str) -> None:
    """flake8 --statistics shows one finding's message per code: the part before the site
    must already say what the rule is."""
    stable = RULES[code].message.split("{", 1)[0]
    assert len(stable) >= len(code) + 15, stable


def test_messages_on_the_catalogue(tmp_path: Path) -> None:
    """What the analysis really writes: one line each, no doubled words, and short."""
    done = subprocess.run(
        [*cli(), "check", "--isolated", "--format", "json", "fixtures/catalogue"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr
    messages = {row["message"] for row in json.loads(done.stdout)}
    assert messages
    doubled = [m for m in messages if re.search(r"\b([\w.]+) `(?:[\w.]+\.)?\1`", m)]
    assert not doubled, doubled
    longest = max(messages, key=len)
    assert len(longest) <= 100, longest
    cut = [m for m in messages if "..." in m.split("`")[1]]
    assert not cut, cut  # every catalogue callee fits in full


def test_rule_subcommand_prints_the_explanation() -> None:
    done = subprocess.run([*cli(), "rule", "TEM001"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == explain(RULES["TEM001"])
    every = subprocess.run([*cli(), "rule", "--all"], capture_output=True, text=True, timeout=60)
    assert every.returncode == 0
    for code in RULES:
        assert f"# {code} ({RULES[code].name})" in every.stdout
    unknown = subprocess.run([*cli(), "rule", "TEM999"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "TEM999" in unknown.stderr


@pytest.mark.parametrize(("name", "kind"), list(TARGETS.items()))
def test_generated_docs_are_in_sync(name: str, kind: str) -> None:
    text = (PROJECT / name).read_text(encoding="utf-8")
    assert replace_block(text, kind) == text, (
        f"{name} is outdated: run `python -m lint_rules.docgen --write`"
    )


def test_docgen_check_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lint_rules.docgen", "--check"], cwd=PROJECT, capture_output=True
    )
    assert done.returncode == 0, done.stderr


def test_sarif_descriptions_come_from_the_table(tmp_path: Path) -> None:
    done = subprocess.run(
        [*cli(), "check", "--isolated", "--format", "sarif", "--exit-zero", "examples"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    rules = json.loads(done.stdout)["runs"][0]["tool"]["driver"]["rules"]
    by_id = {rule["id"]: rule for rule in rules}
    for code, rule in RULES.items():
        assert by_id[code]["shortDescription"]["text"] == rule.summary
        assert by_id[code]["name"] == rule.name
        assert by_id[code]["help"]["markdown"] == rule.explanation.strip()
        assert by_id[code]["helpUri"] == rule.help_uri
        assert rule.help_uri.endswith("#" + rule.anchor)
    # the anchor is the generated heading's, as GitHub spells it
    generated = (PROJECT / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in RULES.values():
        assert f"### {rule.code} {rule.name}\n" in generated


def test_an_in_file_te_subclass_is_named_by_its_class_in_every_rule() -> None:
    """TEM001/TEM002 and TEM004 name an in-file TE subclass alike: by its own class name, whether
    it overrides ``forward`` or not (not "TE module" for one and the class for the other)."""
    source = """
import transformer_engine.pytorch as te
from torch import nn

class Mine(te.Linear):
    def forward(self, x, scale, is_first_microbatch=None):
        return super().forward(x, is_first_microbatch=is_first_microbatch) * scale

class Kept(te.Linear):
    pass

class NoFlag(te.Linear):
    def forward(self, x):
        return super().forward(x)

class M(nn.Module):
    def __init__(self):
        self.a = Mine(4, 4)
        self.k = Kept(4, 4)
        self.b = NoFlag(4, 4)
        self.flag = True

    def keyword(self, x):
        return self.a(x, 2.0, is_first_microbatch=self.flag)

    def positional(self, x):
        return self.a(x, 2.0, self.flag)

    def kept(self, x):
        return self.k(x, self.flag)

    def rejected(self, x):
        return self.b(x, is_first_microbatch=self.flag)
"""
    messages = [f.message for f in sorted(analyze_source(source), key=lambda f: f.line)]
    assert messages == [
        "TEM001 untracked flag to TE Mine `self.a`: pass None or guard it",
        "TEM002 untracked positional flag to TE Mine `self.a`: pass None or guard it",
        "TEM002 untracked positional flag to TE Kept `self.k`: pass None or guard it",
        "TEM004 is_first_microbatch rejected by TE NoFlag `self.b` (TypeError): remove it",
    ], messages
