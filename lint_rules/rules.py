"""The rule table: each rule's code, name, message, explanation and fix, in one place.

Everything a user reads about a rule comes from ``RULES``: the one-line message of a finding
(flake8, the CLI, the libcst runner), ``te-microbatch-lint rule CODE``, SARIF's rule
descriptions and the generated part of ``docs/rules.md`` (``python -m lint_rules.docgen --write``).
The TE facts behind them are in ``docs/te-facts.md``; the linter never imports TE.

Messages are one line of at most ``MESSAGE_LIMIT`` characters, the rule's stable text first
(``flake8 --statistics`` prints one finding's message per code, so the part before the callee
says what the rule is). ``format_message`` fills a rule's template (``unresolved_message`` when
the callee could not be resolved) and shortens an overlong spelling to fit. Placeholders:

- ``{callee}``: what was called, from ``callee_text``, e.g. ``TE Linear `self.fc``` (a TE
  module of a known class), ``TE `fp8_autocast``` (the spelling already says what it is),
  ``TE module `self.mlp``` (class unknown), ``TE Linear `checkpoint(self.fc)``` (through a
  forwarding wrapper) or ``unresolved `self.decoder.fc```;
- ``{guard}``: the last part of ``guard-import`` (kept for templates that name it);
- ``{mapping}``: the splatted mapping's name (TEM003);
- ``{why}``: why a module may run more than once, short (``loop at line 22``).
"""

from __future__ import annotations

import functools

from lint_rules.slotted import Frozen

__all__ = [
    "DEFAULT_GUARD_CONFIG",
    "DEFAULT_GUARD_FUNCTIONS",
    "DEFAULT_GUARD_IMPORT",
    "FIXABLE_CODES",
    "MESSAGES",
    "RULES",
    "SUMMARIES",
    "Rule",
    "callee_text",
    "format_message",
    "repeat_text",
]

MESSAGE_LIMIT = 160
"""The longest message a finding gets (flake8 and ruff users read one line), unless its callee's
spelling would have to be cut below ``CALLEE_KEEP`` characters."""

CALLEE_KEEP = 60
"""A callee's spelling is never cut below this many characters, nor inside its last name or
index (``self.cuda_graphs[...][self.current_microbatch]`` keeps ``[self.current_microbatch]``)."""

UNRESOLVED = "unresolved"
"""How ``{callee}`` starts for a callee that could not be resolved."""

DOCS_URL = "https://example.invalid/te-microbatch-lint/blob/main/docs/rules.md"
"""Where docs/rules.md is published (SARIF ``helpUri``); anchors are ``#tem001-NAME``."""


class Rule(Frozen):
    """One rule, as every face and every doc describes it."""

    __slots__ = (
        "code",
        "name",
        "summary",
        "message",
        "fix",
        "fix_title",
        "text",
        "unresolved_message",
    )

    code: str
    name: str
    summary: str
    """One line, no placeholders (listings, SARIF ``shortDescription``)."""
    message: str
    """The finding's text, a ``str.format`` template starting with the code."""
    fix: str
    """Applicability of the fix for a resolved TE module: ``safe``, ``unsafe`` or ``none``."""
    fix_title: str
    """What the fix writes, in a few words (rule tables)."""
    text: str
    """``explanation`` as written here: ``{lookalikes}``, ``{release_table}`` and ``{newest}``
    stand for TE's tables (``te``), read only when an explanation is."""
    unresolved_message: str
    """The template for an unresolved callee (a CUDA-graphed callable, for one, needs a bool, so
    the advice is conditional); empty when the rule only reports resolved callees."""

    def __init__(
        self,
        code: str,
        name: str,
        summary: str,
        message: str,
        fix: str,
        fix_title: str,
        text: str,
        unresolved_message: str = "",
    ) -> None:
        self._fill(locals())

    @property
    def explanation(self) -> str:
        """Markdown: why it matters, what is reported, how to fix it, with examples."""
        return _filled(self.text)

    @property
    def anchor(self) -> str:
        return f"{self.code.lower()}-{self.name}"

    @property
    def help_uri(self) -> str:
        return f"{DOCS_URL}#{self.anchor}"


_RESUME = """\
With `fuse_wgrad_accumulation=True`, TE's weight-gradient GEMM *overwrites* `weight.main_grad`
when the flag is `True`, and accumulates when it is `False` or `None`. Frameworks keep the flag
as process-local state (`True` in `__init__`, `False` after the first forward) and re-arm it
every step only under FP8. Without FP8 nothing re-arms it: an uninterrupted run passes `True`
once, but a run resumed from a checkpoint passes `True` again on its first microbatch, and a
module that runs more than once in that step loses a gradient. Under FP8 a flag stuck at
`False` after an optimizer step makes TE reuse last step's quantized weight.
"""

_TRACKED = """\
A value is *tracked* (not reported) when it is `None`; a parameter of the enclosing function
passed on unchanged (the caller is responsible); a conditional whose `None` branch is taken
whenever a guard call is false (`flag if is_first_microbatch_tracked(config) else None`); a call
inside `if is_first_microbatch_tracked(config):`; the result of a function listed in
`tracked-functions`; or a local whose every assignment is tracked. The guards are
`is_first_microbatch_tracked` and the functions listed in `guard-functions`.
"""

_FIX = """\
`fix` replaces the value with `None` (TE then always accumulates, and under FP8 quantizes the
weight on every call: slower, always correct). With `fix-strategy = "guard"` it writes
`(value if is_first_microbatch_tracked(self.config) else None)` instead and imports the guard
(`guard-import`, `guard-config`). The fix is safe when the callee resolved to a TE module; for an
unresolved callee it is unsafe (applied only with `--unsafe-fixes`): a CUDA-graphed callable, for
one, requires a bool.
"""

_SEE_TEM001 = "[TEM001](#tem001-untracked-flag) (`te-microbatch-lint rule TEM001`)"
"""Where TEM002 and TEM003 point for the text they share with TEM001 (said once, there)."""

RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        Rule(
            code="TEM001",
            name="untracked-flag",
            summary="Untracked is_first_microbatch passed by keyword to a TE module",
            message="TEM001 is_first_microbatch given to {callee} is not re-armed every step: "
            "pass None or guard it",
            unresolved_message="TEM001 is_first_microbatch given to {callee} is not re-armed "
            "every step: if it is TE, pass None or guard it",
            fix="safe",
            fix_title="value -> `None` (or guarded)",
            text=f"""\
An `is_first_microbatch=` keyword whose value nothing keeps up to date reaches a TE module
(`Linear`, `LayerNormLinear`, `LayerNormMLP`, `GroupedLinear`, `MultiheadAttention`,
`TransformerLayer`, a subclass; with `unresolved = "report"`, also a callee that cannot be
shown to be TE).

**Why.** {_RESUME}
**What counts as tracked.** {_TRACKED}
**Example.**

```python
class Block(torch.nn.Module):
    def forward(self, x):
        out = self.fc(x, is_first_microbatch=self.is_first_microbatch)  # TEM001
        # fixed:
        out = self.fc(x, is_first_microbatch=None)
        # or, where the flag is re-armed every step under FP8:
        flag = self.is_first_microbatch if is_first_microbatch_tracked(self.config) else None
        out = self.fc(x, is_first_microbatch=flag)
```

**Callees nobody can show is TE are quiet by default.** A call is reported when its callee is
TE by evidence (a TE import reaches it). A callee the analysis cannot resolve, or one that
comes from a package that is not TE (`from megatron.training import get_model`), from a known
TE look-alike ({{lookalikes}}), is not reported unless you ask for it:
`unresolved = "report"` (`--unresolved report`) reports every such callee, its message
saying `unresolved` and where it comes from (`unresolved `self.fc` (from `my_project`, not
TE)`), and the advice "if it is TE", with an unsafe fix (a CUDA-graphed callable needs a bool,
and `None` breaks it). Aliases, conditional choices between imported functions and wrappers
of them (`step = forward_step if a else backward_step`) have the provenance of what they
alias: functions, never reported; nor are the callables `make_graphed_callables` returns (they
need a bool). In a strict project, silence one with `# noqa: TEM001` on its line, or list the
function that computes the flag in `tracked-functions`. docs/rules.md, "Which callees are
reported", has the families.

**Fix.** {_FIX}""",
        ),
        Rule(
            code="TEM002",
            name="untracked-positional-flag",
            summary="Untracked is_first_microbatch passed positionally to a TE module",
            message="TEM002 is_first_microbatch given by position to {callee} is not re-armed "
            "every step: pass None or guard it",
            fix="safe",
            fix_title="keyword `is_first_microbatch=None` (or guarded)",
            text=f"""\
The same as TEM001, for a flag passed by position. TE's module `forward`s take the flag at
index 1 (`Linear`, `LayerNormLinear`, `LayerNormMLP`) or 2 (`GroupedLinear`) after `self`, in
TE 1.x and 2.x alike; one more for the unbound `Linear.forward(module, x, flag)`. It is reported
only when the class is known (a positional argument of an unknown callee could be anything).
`MultiheadAttention` (5 in TE 1.13, 6 in 2.x) and `TransformerLayer` (8, then 10) moved theirs
between releases, so their positional arguments are never taken for the flag.

**Why, what counts as tracked, and the fix strategies:** as for {_SEE_TEM001}.

**Example.**

```python
out = super().forward(x, m_splits, self.is_first_microbatch)  # TEM002 (GroupedLinear)
# fixed:
out = super().forward(x, m_splits, is_first_microbatch=None)
```

**Fix.** The flag becomes the keyword `is_first_microbatch=None` when no positional argument
follows it, else `None` in place (or the guarded value, with `fix-strategy = "guard"`).""",
        ),
        Rule(
            code="TEM003",
            name="untracked-flag-in-kwargs",
            summary="Untracked is_first_microbatch reaches a TE module through **kwargs",
            message="TEM003 is_first_microbatch stored in **{mapping} for {callee} is not "
            "re-armed every step: store None or guard it",
            unresolved_message="TEM003 is_first_microbatch stored in **{mapping} for {callee} is "
            "not re-armed every step: if it is TE, store None or guard it",
            fix="safe",
            fix_title="stored value -> `None` (or guarded)",
            text=f"""\
The flag is stored in a mapping that is splatted (`**kwargs`) into a TE module call in the
same function: `{{"is_first_microbatch": v}}`, `dict(is_first_microbatch=v)`,
`kwargs["is_first_microbatch"] = v` or `kwargs.update(is_first_microbatch=v)`. It is reported
where the value is stored.

**Why, what counts as tracked, and the fix strategies:** as for {_SEE_TEM001}.

**Example.**

```python
kwargs = {{"is_first_microbatch": self.is_first_microbatch}}  # TEM003
return self.fc(x, **kwargs)
# fixed:
kwargs = {{"is_first_microbatch": None}}
```

**Fix.** The stored value becomes `None` (or the guarded value, with
`fix-strategy = "guard"`); for an unresolved callee the fix is unsafe.""",
        ),
        Rule(
            code="TEM004",
            name="flag-rejected",
            summary="is_first_microbatch passed to a TE callable that does not accept it",
            message="TEM004 is_first_microbatch is not a parameter of {callee} (TypeError at run "
            "time): remove it",
            fix="none",
            fix_title="none",
            text="""\
`is_first_microbatch` is given (by keyword, or through a splatted dict literal) to a TE callable
that has no such parameter, so the call raises `TypeError` when it runs: the constructors of the
six module classes, `fp8_autocast`, `autocast`, `fp8_model_init`, `quantized_model_init`,
`LayerNorm`, `RMSNorm`, `DotProductAttention` (in the releases where it rejects it: see below),
anything in `transformer_engine.pytorch.ops` (the fusible ops use `accumulate_into_main_grad`
instead), and a subclass of a TE module defined in the file whose own `forward` has neither the
parameter nor `**kwargs`, or takes it only by keyword and is given it positionally. The value
does not matter: even `None` is an error.

**The TE release.** What TE accepts depends on its release (`te-version`, inferred from the
project's pins, else the newest, {newest}):

{release_table}

**Example.**

```python
with te.fp8_autocast(enabled=True, is_first_microbatch=True):  # TEM004
    out = self.fc(x)
# fixed: pass the flag to the module, not to the context manager
with te.fp8_autocast(enabled=True):
    out = self.fc(x, is_first_microbatch=None)
```

**Fix.** None automatic: removing an argument changes what the author meant; move the flag to
the module call by hand.
""",
        ),
        Rule(
            code="TEM005",
            name="flag-to-repeated-module",
            summary="Non-None is_first_microbatch passed to a TE module called more than once "
            "per step",
            message="TEM005 is_first_microbatch given to {callee}, which runs more than once per "
            "step ({why}): pass None",
            unresolved_message="TEM005 is_first_microbatch given to {callee}, which runs more than "
            "once per step ({why}): if it is TE, pass None",
            fix="safe",
            fix_title="value -> `None`",
            text="""\
A flag that is not `None` (even a tracked one, even a forwarded parameter) reaches a TE module
that can run more than once within one backward pass: the call is in a `for`/`while` loop or a
comprehension and the callee does not depend on the loop's variables, or the same module is
called at two places of one function that are not exclusive branches, with a flag at both or
with a flag first and none (or `None`) after it; the call with the flag is reported.

**The gradient model.** Two calls of one module lose a gradient only when one backward pass runs
through the outputs of both:

- in a module's code (a method of a class that defines `forward` or derives from
  `torch.nn.Module`, a TE module or another module class, and the functions nested in one), the
  caller runs backward through what it returns: reported as above
  (`tem005_module_code.py`);
- elsewhere (tests, benchmarks, scripts, training loops), only when a backward can follow both
  calls with none between them: a backward (`.backward()`, `torch.autograd.backward`,
  `torch.autograd.grad`, a call named `backward_step` or the like, or an in-file function that
  runs one) later in the function or in a loop around the later call, or the later call's
  output returned to the caller; a backward that always runs between the calls separates them,
  one in an `if` does not (`tem005_backward_follows.py`);
- never under `torch.no_grad()`, `torch.inference_mode()` or `torch.set_grad_enabled(False)`,
  in a `with` block or as a decorator of the function (`tem005_no_grad.py`), nor for a call
  whose output is discarded (a bare expression statement, `_ = ...`) or detached on the spot
  (`.detach()`, `.item()`, `.tolist()`): no backward runs through it (`tem005_dropped_output.py`);
- a loop whose body runs backward is a microbatch loop (each iteration is its own forward and
  backward) and is not reported; a loop that runs none, followed by a backward, is
  (`tem005_microbatch_loop.py`).

**A repeated stateful TE wrapper.** A class whose method passes its own attribute to TE as the
flag (`super().forward(x, is_first_microbatch=self.is_first_microbatch)`, a local computed
from it as Megatron's `TELinear` does, or the attribute passed positionally) is a stateful TE
wrapper: no flag appears where the
module holding it is called. A call, in a module's code, of a module the class holds (`self.x`,
`self.layers[0]`) that is or holds such a wrapper, through attributes, `ModuleList`s and
classes of the file (and, in a CLI run over several files, TE subclasses of the other files),
is TEM005 when it runs more than once per forward: in a loop that does not pick another module
each time (also `self.layers[0 if repeated else i]`, directly or through a local), or twice in
one function. It is reported at the first such call, with the chain from it to the wrapper as
evidence, and no fix there: the fix (`None`) belongs in the wrapper
(`tem005_stateful_wrapper.py`). Layers built from specs the analysis cannot follow (Megatron's
`ModuleSpec`s) are not tied statically: the runtime monitor catches those.

**Why.** Backward runs in reverse, so the first call's weight gradient is written last. When
that call's flag is `True` (the first microbatch after a resume, or every step under FP8, where
the tracked flag is re-armed), it overwrites what the other calls accumulated into `main_grad`.
A tracking guard does not make a shared module safe; only `None` does.

**Example.**

```python
for _ in range(self.depths):
    h = self.layer(h, is_first_microbatch=self.is_first_microbatch)  # TEM005 (and TEM001)
# fixed:
for _ in range(self.depths):
    h = self.layer(h, is_first_microbatch=None)
```

**Fix.** The value becomes `None`, with either fix strategy. Safe when the callee resolved to a
TE module and the value is not a parameter of the enclosing function; replacing a forwarded
parameter changes what the caller asked for, so that fix is unsafe (`--unsafe-fixes`).
""",
        ),
    )
}


def _lookalikes() -> str:
    from lint_rules.te import LOOKALIKES

    packages: dict[str, list[str]] = {}
    for family in LOOKALIKES.values():
        packages.setdefault(family.name, []).append(f"`{family.package}`")
    return "; ".join(f"{name}: {', '.join(found)}" for name, found in packages.items())


def _release_table() -> str:
    from lint_rules.te import TAKES_FLAG_SINCE

    rows = ["| callable | takes the flag | rejects it (TEM004) |", "|---|---|---|"]
    for name, fact in TAKES_FLAG_SINCE.items():
        first = f"{fact.first[0]}.{fact.first[1]}"
        last = f"{fact.last[0]}.{fact.last[1]}" if fact.last else "on"
        after = f"from {fact.last[0] + 1}.0" if fact.last else ""
        rows.append(f"| `{name}` | {first} to {last} | before {first}, {after} |")
    return "\n".join(rows)


@functools.cache
def _filled(text: str) -> str:
    """An explanation that reads TE's tables (look-alikes, releases) filled from them."""
    if "{lookalikes}" in text or "{release_table}" in text:
        from lint_rules.te import NEWEST

        text = text.replace("{lookalikes}", _lookalikes())
        text = text.replace("{newest}", f"{NEWEST[0]}.{NEWEST[1]}")
        return text.replace("{release_table}", _release_table())
    return text


def __getattr__(name: str) -> str:
    """``FLAG``, re-exported from ``te`` when asked for: the rule table alone (settings,
    the command line) does not load TE's tables."""
    if name == "FLAG":
        from lint_rules.te import FLAG

        return FLAG
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def callee_text(
    spelling: str,
    te_class: str | None = None,
    resolved: bool = True,
    via: str = "",
    origin: str = "",
) -> str:
    """The ``{callee}`` of a message, from the call's spelling and what it resolved to.

    ``TE Linear `self.fc``` (a TE class), ``TE `te.fp8_autocast``` (the spelling already names
    the class: no doubled word; an in-file subclass passes its own name, ``TE MyLinear
    `self.a```), ``TE module `self.mlp``` (a TE module of unknown class),
    ``unresolved `self.decoder.fc``` (the callee could not be resolved; ``origin`` says where
    it comes from: ``unresolved `self.fc` (from `nvidia_kitchen`, a TE look-alike)``); ``via``
    names a wrapper that forwards the call, written as the call
    (``TE Linear `checkpoint(self.fc)```).
    """
    shown = f"{via}({spelling})" if via else spelling
    if not resolved:
        return f"{UNRESOLVED} `{shown}` ({origin})" if origin else f"{UNRESOLVED} `{shown}`"
    if te_class is None:
        return f"TE module `{shown}`"
    if not via and spelling.rsplit(".", 1)[-1] == te_class:
        return f"TE `{shown}`"
    return f"TE {te_class} `{shown}`"


def last_part(spelling: str) -> int:
    """Where the last name or index of ``spelling`` starts: ``[mb]`` of ``self.g[l][mb]``,
    ``fc`` of ``self.fc``, ``proj)`` of ``checkpoint(self.a.proj)``, ``forward()`` of
    ``super().forward()``."""
    end = len(spelling)
    if spelling.endswith(("]", ")")):
        opening = "[" if spelling.endswith("]") else "("
        depth = 0
        for index in range(end - 1, -1, -1):
            char = spelling[index]
            depth += char in "])"
            depth -= char in "[("
            if depth == 0 and char == opening:
                if opening == "(":  # a wrapper's call: the last part of its argument
                    inner = spelling[index + 1 : end - 1]
                    if inner:
                        return index + 1 + last_part(inner)
                    return last_part(spelling[:index]) if index else 0
                return index
        return 0
    cut = max(spelling.rfind("."), spelling.rfind("]"), spelling.rfind(")"))
    return cut + 1


def shorten(spelling: str, keep: int) -> str:
    """``spelling`` in about ``keep`` characters (never fewer than ``CALLEE_KEEP``): the start,
    ``...``, and the last name or index whole."""
    keep = max(keep, CALLEE_KEEP)
    if len(spelling) <= keep:
        return spelling
    tail = spelling[last_part(spelling) :]
    head = max(keep - len(tail) - 3, 12)
    if head + 3 + len(tail) >= len(spelling):
        return spelling
    return spelling[:head] + "..." + tail


def format_message(code: str, callee: str, **values: str) -> str:
    """A finding's message: the rule's template filled, at most ``MESSAGE_LIMIT`` characters.

    ``callee`` comes from ``callee_text``; ``values`` fill ``{guard}``, ``{mapping}`` and
    ``{why}``. A spelling too long to fit is cut in the middle, never below ``CALLEE_KEEP``
    characters nor inside its last name or index (``self.cuda_graphs[...][mb]``).
    """
    rule = RULES[code]
    unresolved = callee.startswith(UNRESOLVED + " ")
    template = rule.unresolved_message if unresolved and rule.unresolved_message else rule.message
    message = template.format(callee=callee, **values)
    excess = len(message) - MESSAGE_LIMIT
    start, end = callee.find("`") + 1, callee.rfind("`")
    if excess > 0 and 0 < start < end:
        spelling = callee[start:end]
        cut = shorten(spelling, len(spelling) - excess)
        message = template.format(callee=callee[:start] + cut + callee[end:], **values)
    return message


def names_unresolved(message: str) -> bool:
    """Whether a finding's message is about a callee nobody showed is TE (reported only with
    ``unresolved = "report"``): its ``{callee}`` says ``unresolved``."""
    return f" {UNRESOLVED} `" in message


def repeat_text(kind: str, line: int) -> str:
    """The ``{why}`` of TEM005 for a loop: ``for loop, line 22``."""
    return f"{kind}, line {line}"


MESSAGES: dict[str, str] = {code: rule.message for code, rule in RULES.items()}
"""Message templates by code (what the analysis formats)."""

SUMMARIES: dict[str, str] = {code: rule.summary for code, rule in RULES.items()}
"""One line per rule, for rule listings (SARIF ``shortDescription``, docs)."""

FIXABLE_CODES = frozenset(code for code, rule in RULES.items() if rule.fix != "none")
"""TEM004 has no automatic fix: removing an argument changes what the user meant."""

DEFAULT_GUARD_FUNCTIONS: tuple[str, ...] = ("is_first_microbatch_tracked",)
DEFAULT_GUARD_IMPORT = "megatron.core.transformer.module.is_first_microbatch_tracked"
DEFAULT_GUARD_CONFIG = "self.config"
