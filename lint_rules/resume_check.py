"""Old name of :mod:`lint_rules.runtime.resume`, kept so that ``python -m lint_rules.resume_check``
and ``from lint_rules import resume_check`` go on working. New code: ``lint_rules.runtime.resume``.
"""

import sys

from lint_rules.runtime.resume import *  # noqa: F403
from lint_rules.runtime.resume import __all__, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
