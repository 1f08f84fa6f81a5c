"""Test support that ships with the package (imports nothing heavy at package import).

- :mod:`lint_rules.testing.reference_te`: a pure-torch *reference of the TE fused-wgrad
  contract* (not Transformer Engine), so the runtime suite runs on CPU.
- :mod:`lint_rules.testing.shared_layer`: builds the runtime suite's shared-layer model
  (unguarded fixture, or the codemod's fixed version) on either backend, for the resume
  check and the runtime monitor.

Both need torch; this ``__init__`` does not import them so that ``lint_rules`` stays usable
without torch.
"""
