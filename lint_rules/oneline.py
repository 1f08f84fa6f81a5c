"""The evidence of a finding on its own line (flake8, ``check --output-format concise``).

flake8 and scripts read one line per finding, so the evidence follows the message in
brackets: ``TEM001 ... (set True in __init__ (:12); cleared after forward (:20))`` (when steps
must be left out, a re-arm's condition first). A place in
the finding's own file is ``:LINE``, in another file ``PATH:LINE``. The line stays readable:
at most ``LINE_LIMIT`` characters in all and ``MAX_STEPS`` steps, then ``+N more`` and the
command that prints them all, where it fits (``te-microbatch-lint rule CODE`` explains the rule,
``te-microbatch-lint explain PATH:LINE`` prints the flag's whole life).
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_STEPS = 4
MAX_CHARS = 240
LINE_LIMIT = 160
"""A flake8 line (``path:line:col: message (evidence)``) stops at about this many characters:
the evidence steps that fit, then ``+N more`` and the ``explain`` command that prints them all
(the message itself is never cut)."""


def step_text(message: str, where: str) -> str:
    return f"{message} ({where})" if where else message


def with_evidence(message: str, steps: Iterable[str], explain: str = "", prefix: int = 0) -> str:
    """``message (step; step; ...)``, within ``LINE_LIMIT`` characters counting the ``prefix``
    flake8 prints before it (``path:line:col: ``); ``explain`` (``te-microbatch-lint explain
    P:L``) is named when steps were left out and it fits. A re-arm's condition (``only if ...``)
    decides the verdict: when steps must be left out, it comes first, and when even it does not
    fit, its first clause is shown anyway (the one thing a line may pass ``LINE_LIMIT`` for)."""
    steps = list(steps)
    if not steps:
        return message
    room = LINE_LIMIT - prefix - len(message) - len(" ()")
    if not _fits(steps, room):
        steps.sort(key=lambda step: " only if " not in step)
    shown: list[str] = []
    size = 0
    for step in steps:
        cost = len(step) + (2 if shown else 0)
        if len(shown) == MAX_STEPS or size + cost > min(room, MAX_CHARS):
            break
        shown.append(step)
        size += cost
    left = len(steps) - len(shown)
    while left:  # the pointer to the whole life comes before one more step
        tail = f"+{left} more: `{explain}`" if shown else f"evidence: `{explain}`"
        if not explain:
            tail = f"+{left} more"
        if size + len(tail) + 2 * bool(shown) <= room:
            shown.append(tail)
            break
        if not shown:
            break  # not even the pointer fits: `explain` and the text face show all
        size -= len(shown.pop()) + 2 * bool(shown)
        left += 1
    condition = next((step for step in steps if " only if " in step), None)
    if condition is not None and not any(" only if " in step for step in shown):
        # The condition decides the verdict: never dropped, but said short (its first clause).
        more = len(steps) - 1
        return f"{message} ({_short_condition(condition)}" + (f"; +{more} more)" if more else ")")
    return f"{message} ({'; '.join(shown)})" if shown else message


def _short_condition(step: str) -> str:
    """``re-armed only if `A …``` from a re-arm step ``... only if `A or B` (WHERE)``: the first
    clause of the condition (``explain`` says where, and the whole of it)."""
    condition = step.split(" only if ", 1)[1]
    if condition.endswith(")") and " (" in condition:
        condition = condition.rsplit(" (", 1)[0]
    body = condition.strip("`")
    for joint in (" or ", " and "):
        if joint in body:
            body = body.split(joint, 1)[0] + " …"
            break
    return f"re-armed only if `{body}`"


def _fits(steps: list[str], room: int) -> bool:
    """Whether every step is shown (the bounds of ``with_evidence``'s loop)."""
    size = 0
    for n, step in enumerate(steps):
        cost = len(step) + (2 if n else 0)
        if n == MAX_STEPS or size + cost > min(room, MAX_CHARS):
            return False
        size += cost
    return True
