"""The evidence of a finding on its own line (flake8, ``check --output-format concise``).

flake8 and scripts read one line per finding, so the evidence follows the message in
brackets: ``TEM001 ... (set True in __init__ (:12); cleared after forward (:20))`` (when steps
must be left out, a re-arm's condition first). A place in
the finding's own file is ``:LINE``, in another file ``PATH:LINE``. The line stays readable:
at most ``MAX_STEPS`` steps and ``MAX_CHARS`` characters of evidence, then ``+N more`` and the
command that prints them all.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_STEPS = 4
MAX_CHARS = 240


def step_text(message: str, where: str) -> str:
    return f"{message} ({where})" if where else message


def with_evidence(message: str, steps: Iterable[str], explain: str = "") -> str:
    """``message (step; step; ...)``; ``explain`` (``te-microbatch-lint explain P:L``) is named
    when steps were left out. A re-arm's condition (``only if ...``) decides the verdict: when
    steps must be left out, it comes first, so that the line never cuts it off."""
    steps = list(steps)
    if not _fits(steps):
        steps.sort(key=lambda step: " only if " not in step)
    if not steps:
        return message
    shown: list[str] = []
    size = 0
    for step in steps:
        if len(shown) == MAX_STEPS or (shown and size + len(step) > MAX_CHARS):
            break
        shown.append(step)
        size += len(step) + 2
    left = len(steps) - len(shown)
    if left:
        more = f"+{left} more"
        shown.append(f"{more}: `{explain}`" if explain else more)
    return f"{message} ({'; '.join(shown)})"


def _fits(steps: list[str]) -> bool:
    """Whether every step is shown (the bounds of ``with_evidence``'s loop)."""
    size = 0
    for n, step in enumerate(steps):
        if n == MAX_STEPS or (n and size + len(step) > MAX_CHARS):
            return False
        size += len(step) + 2
    return True
