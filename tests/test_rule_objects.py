"""The rules' one interface: one object per code of the rule table, each owning its state.

``lint_rules.analysis.checks.RULES`` holds one ``Rule`` subclass per code, in the table's order;
an analysis makes one of each, and what a rule remembers (TEM003's reported entries, TEM005's
calls by function) lives on that object, so that two analyses never share it and the analysis
itself keeps no rule's state.
"""

from __future__ import annotations

import ast

from lint_rules.analysis import checks
from lint_rules.analysis.core import Analysis
from lint_rules.rules import RULES as TABLE
from lint_rules.settings import DEFAULT_SETTINGS

SOURCE = """\
import transformer_engine.pytorch as te


class Block:
    def __init__(self):
        self.fc = te.Linear(4, 4)
        self.is_first_microbatch = True

    def forward(self, x):
        kw = {"is_first_microbatch": self.is_first_microbatch}
        y = self.fc(x, **kw)
        for _ in range(2):
            y = self.fc(y, is_first_microbatch=self.is_first_microbatch)
        self.is_first_microbatch = False
        return y
"""


def _analysis() -> Analysis:
    return Analysis(ast.parse(SOURCE), DEFAULT_SETTINGS, SOURCE)


def test_one_rule_object_per_code_of_the_table_in_its_order() -> None:
    assert [rule.code for rule in checks.RULES] == list(TABLE)
    assert all(issubclass(rule, checks.Rule) for rule in checks.RULES)


def test_each_analysis_makes_its_own_rules_and_keeps_none_of_their_state() -> None:
    first, second = _analysis(), _analysis()
    codes = {f.code for f in first.run()}
    assert codes == {"TEM001", "TEM003", "TEM005"}
    shared = next(r for r in first.rules if isinstance(r, checks.SharedModule))
    mapping = next(r for r in first.rules if isinstance(r, checks.MappingFlag))
    assert shared.sites and shared.in_loop and mapping.reported
    assert second.rules == []  # made only when the walk hands over a call
    second.run()
    assert not {id(r) for r in first.rules} & {id(r) for r in second.rules}
    for name in ("sites", "reported_keys", "reported_shared"):
        assert not hasattr(first, name)


def test_close_lets_the_rules_go() -> None:
    a = _analysis()
    a.run()
    a.close()
    assert a.rules == []
