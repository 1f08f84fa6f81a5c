"""Messages and rule docs come from one table (``lint_rules.rules.RULES``).

- each finding's message is one line of at most ``MESSAGE_LIMIT`` characters for realistic
  callees, starts with the rule's stable text, names ``is_first_microbatch`` and says in plain
  words what is wrong, names the callee and the fix, and never doubles a word; a long callee is
  cut in the middle, never below ``CALLEE_KEEP`` characters nor inside its last name or index;
- no paragraph of an explanation is repeated in another rule's;
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
from lint_rules.rules import (
    CALLEE_KEEP,
    MESSAGE_LIMIT,
    RULES,
    callee_text,
    format_message,
    shorten,
)
from lint_rules.settings import Settings

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
    """Every realistic callee is named in full, and every message names the flag."""
    message = format_message(code, callee, **VALUES)
    assert message.startswith(code + " is_first_microbatch ")
    assert len(message) <= MESSAGE_LIMIT, (len(message), message)
    assert "\n" not in message
    assert callee in message


@pytest.mark.parametrize("code", list(RULES))
@pytest.mark.parametrize("te_class", ["MultiheadAttention", "LayerNormLinear", None])
@pytest.mark.parametrize("resolved", [True, False])
def test_a_long_spelling_is_cut_to_fit(code: str, te_class: str | None, resolved: bool) -> None:
    spelling = "self.decoder.layers[layer_number].self_attention.core_attention.linear_proj"
    callee = callee_text(spelling, te_class, resolved, via="tensor_parallel.checkpoint")
    message = format_message(code, callee, **VALUES)
    kept = message.split("`")[1]
    assert "..." in kept and kept.startswith("tens") and kept.endswith(".linear_proj)"), message
    assert len(message) <= MESSAGE_LIMIT or len(kept) <= CALLEE_KEEP, message
    assert len(kept) >= CALLEE_KEEP
    rule = RULES[code]
    template = rule.message if resolved else rule.unresolved_message or rule.message
    assert message.endswith(template.rsplit("}", 1)[-1])  # the advice is whole


@pytest.mark.parametrize(
    ("spelling", "tail"),
    [
        (
            "self.cuda_graphs[self.current_layer_number_in_this_stage][self.current_microbatch]",
            "[self.current_microbatch]",
        ),
        (
            "self.decoder.layers[layer_number].self_attention.core_attention.linear_projection",
            ".linear_projection",
        ),
        (
            "tensor_parallel.checkpoint(self.decoder.layers[layer_number].self_attention.qkv)",
            ".qkv)",
        ),
    ],
)
def test_a_cut_keeps_sixty_characters_and_the_last_name_or_index(spelling: str, tail: str) -> None:
    """The graphed callable of megatron-core 0.8.0 once read ``self.cuda_graph...nt_microbatch]``:
    what it is was cut away. Now the cut keeps at least ``CALLEE_KEEP`` characters and the last
    name or index whole (a call, whose last part is the whole call, is not cut at all)."""
    cut = shorten(spelling, 20)
    assert len(cut) >= CALLEE_KEEP or cut == spelling
    assert cut.endswith(tail)
    assert shorten(spelling, len(spelling)) == spelling


def test_messages_say_what_is_wrong_in_plain_words() -> None:
    for code in ("TEM001", "TEM002", "TEM003"):
        for template in (RULES[code].message, RULES[code].unresolved_message):
            assert "is not re-armed every step" in template or not template, template
            assert "untracked" not in template
    assert "more than once per step" in RULES["TEM005"].message
    assert "not a parameter of" in RULES["TEM004"].message


def test_no_explanation_paragraph_is_repeated_across_rules() -> None:
    """Text two rules share is said once (TEM001's) and linked from the other."""
    seen: dict[str, str] = {}
    for code, rule in RULES.items():
        for paragraph in re.split(r"\n\s*\n", rule.explanation):
            words = " ".join(paragraph.split())
            if len(words) < 80 or "(#tem001-untracked-flag)" in words:  # a link to the text
                continue
            assert words not in seen, f"{code} repeats a paragraph of {seen.get(words)}: {words}"
            seen[words] = code


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
    strict = Settings(unresolved="report")  # unresolved callees are quiet by default
    messages = sorted(f.message for f in analyze_source(source, strict))
    assert messages == [
        "TEM001 is_first_microbatch given to TE Linear `self.fc` is not re-armed every step: "
        "pass None or guard it",
        "TEM001 is_first_microbatch given to unresolved `graphed` is not re-armed every step: "
        "if it is TE, pass None or guard it",
        "TEM003 is_first_microbatch stored in **kw for unresolved `other.run` is not re-armed "
        "every step: if it is TE, store None or guard it",
    ], messages


def test_explanation_says_how_to_see_or_silence_an_unresolved_callee() -> None:
    text = RULES["TEM001"].explanation
    for way in ("quiet by default", 'unresolved = "report"', "# noqa: TEM001", "tracked-functions"):
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
    assert done.returncode == 1, done.stderr
    messages = {row["message"] for row in json.loads(done.stdout)}
    assert messages
    doubled = [m for m in messages if re.search(r"\b([\w.]+) `(?:[\w.]+\.)?\1`", m)]
    assert not doubled, doubled
    longest = max(messages, key=len)
    assert len(longest) <= MESSAGE_LIMIT, longest
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
        assert "helpUri" not in by_id[code]  # no `docs-url`: no link (tests/test_ruff_user.py)
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
        "TEM001 is_first_microbatch given to TE Mine `self.a` is not re-armed every step: "
        "pass None or guard it",
        "TEM002 is_first_microbatch given by position to TE Mine `self.a` is not re-armed every "
        "step: pass None or guard it",
        "TEM002 is_first_microbatch given by position to TE Kept `self.k` is not re-armed every "
        "step: pass None or guard it",
        "TEM004 is_first_microbatch is not a parameter of TE NoFlag `self.b` (TypeError at run "
        "time): remove it",
    ], messages
