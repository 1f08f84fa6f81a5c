"""``python -m lint_rules.cli``: the same as the ``te-microbatch-lint`` command."""

from lint_rules.cli import console

console()
