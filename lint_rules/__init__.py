"""te-microbatch-lint: find and fix untracked `is_first_microbatch` flags passed to TE modules.

Importing this package is cheap: the analysis, the codemod (libcst) and the runtime monitor
(torch) are imported only by the face that needs them.
"""

__version__ = "0.2.0"
