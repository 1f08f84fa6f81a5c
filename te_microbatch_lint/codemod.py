"""The libcst codemod, reachable under a name a project cannot shadow::

    python -m libcst.tool codemod -x te_microbatch_lint.codemod.TEMicrobatchCodemod --no-format src/

The same command as ``lint_rules.codemod.TEMicrobatchCodemod`` (see that module); the class is
defined here so that a worker process that unpickles it imports this module first.
"""

from __future__ import annotations

import te_microbatch_lint  # noqa: F401  # loads this tool's own lint_rules first
from lint_rules.codemod import TEMicrobatchCodemod as _Codemod


class TEMicrobatchCodemod(_Codemod):
    __doc__ = _Codemod.__doc__


__all__ = ["TEMicrobatchCodemod"]
