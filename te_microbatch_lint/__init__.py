"""te-microbatch-lint under a name a project's own folders cannot shadow.

``python -m libcst.tool`` and ``python -m flake8`` put the current directory first on
``sys.path``, so a project with a ``lint_rules/`` folder of its own would be imported in place
of this tool's package (and its code run). Importing ``te_microbatch_lint`` first loads
``lint_rules`` from beside it, whatever ``sys.path`` says, and refuses a ``lint_rules`` already
loaded from anywhere else. Its modules ``codemod`` and ``flake8_plugin`` are the entry points::

    python -m libcst.tool codemod -x te_microbatch_lint.codemod.TEMicrobatchCodemod --no-format src/
"""

from __future__ import annotations

import os
import sys

_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OWN = os.path.realpath(os.path.join(_HOME, "lint_rules"))


def _load_own_lint_rules() -> None:
    loaded = sys.modules.get("lint_rules")
    if loaded is None:
        saved = list(sys.path)
        sys.path.insert(0, _HOME)
        try:
            import lint_rules as loaded  # noqa: F401  # its submodules follow its __path__
        finally:
            sys.path[:] = saved
    where = os.path.realpath(os.path.dirname(getattr(loaded, "__file__", None) or ""))
    if where != _OWN:
        raise ImportError(
            f"te_microbatch_lint: a different `lint_rules` package is loaded ({where}); "
            f"expected the one installed with this tool ({_OWN})"
        )


_load_own_lint_rules()

from lint_rules import __version__  # noqa: E402

__all__ = ["__version__"]
