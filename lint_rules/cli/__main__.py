"""``python -m lint_rules.cli``: the same as the ``te-microbatch-lint`` command."""

import sys

from lint_rules.cli import main

sys.exit(main())
