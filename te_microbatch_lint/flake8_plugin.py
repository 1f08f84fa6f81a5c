"""The flake8 plugin ``TEM`` (the entry point), under a name a project cannot shadow: with
``python -m flake8`` the current directory comes first on ``sys.path``. The same checker as
``lint_rules.flake8_plugin.TEMicrobatchChecker`` (see that module)."""

from __future__ import annotations

import te_microbatch_lint  # noqa: F401  # loads this tool's own lint_rules first
from lint_rules.flake8_plugin import TEMicrobatchChecker as _Checker


class TEMicrobatchChecker(_Checker):
    __doc__ = _Checker.__doc__


__all__ = ["TEMicrobatchChecker"]
