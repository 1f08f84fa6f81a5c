"""What resolution gives: a small typed value per family, told apart by its class.

Each expectation is what the expression is at run time: ``te.Linear(...)`` builds a TE module,
``Block()`` an instance of a plain in-file class, ``self`` in a TE subclass is that subclass.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from lint_rules.analysis import kinds
from lint_rules.analysis.kinds import (
    GRAPHED,
    NOT_TE,
    PENDING,
    UNKNOWN,
    Container,
    Forwarder,
    Kind,
    LocalClass,
    LocalFunction,
    LocalInstance,
    LocalKind,
    LocalMethod,
    LocalSelf,
    NonTE,
    OpaqueKind,
    QualName,
    Reject,
    TEClass,
    TEInstance,
    TEKind,
    TEUnbound,
    Unknown,
    container,
    join,
    te_instance,
)
from lint_rules.analysis.resolve import Resolver
from lint_rules.analysis.symbols import ModuleSymbols

SOURCE = textwrap.dedent(
    """
    import functools
    import torch
    import transformer_engine.pytorch as te

    class Block:
        def forward(self, x):
            return x

    class MyLinear(te.Linear):
        def forward(self, x, is_first_microbatch=None):
            return x

    def build():
        return te.Linear(4, 4)

    proj = te.Linear(4, 4)
    block = Block()
    mine = MyLinear(4, 4)
    layers = [te.Linear(4, 4), te.LayerNormLinear(4, 4)]
    made = build()
    plain = torch.nn.Linear(4, 4)
    wrapped = functools.partial(proj, 1)
    """
)


def _kind(expr: str) -> Kind:
    tree = ast.parse(SOURCE)
    resolver = Resolver(ModuleSymbols(tree, SOURCE))
    return resolver.resolve(ast.parse(expr, mode="eval").body, None)


@pytest.mark.parametrize(
    ("expr", "family", "name"),
    [
        ("te.Linear", TEClass, "Linear"),
        ("proj", TEInstance, "Linear"),
        ("made", TEInstance, "Linear"),  # a factory's product
        ("te.Linear.forward", TEUnbound, "Linear"),
        ("Block", LocalClass, "Block"),
        ("block", LocalInstance, "Block"),
        ("block.forward", LocalMethod, "forward"),
        ("build", LocalFunction, "build"),
        ("torch.nn.Linear", QualName, "torch.nn.Linear"),
        ("functools.partial", Forwarder, "partial"),
    ],
)
def test_each_value_is_of_its_family(expr: str, family: type, name: str) -> None:
    kind = _kind(expr)
    assert type(kind) is family
    assert kind.name == name  # type: ignore[attr-defined]


def test_families_group_their_members() -> None:
    assert isinstance(_kind("proj"), TEKind) and isinstance(_kind("te.Linear"), TEKind)
    assert isinstance(_kind("Block"), LocalKind) and not isinstance(_kind("Block"), TEKind)
    assert isinstance(_kind("plain"), OpaqueKind) and _kind("plain") == NOT_TE
    assert isinstance(_kind("undefined_name"), Unknown)


def test_a_te_subclass_defined_in_the_file_reads_its_own_forward() -> None:
    mine = _kind("mine")
    assert isinstance(mine, TEInstance)
    assert mine.node is not None and mine.node.name == "MyLinear"
    assert (mine.name, mine.index, mine.rejects) == ("", 1, False)  # after `x`


def test_a_container_holds_its_items_and_what_any_item_is() -> None:
    layers = _kind("layers")
    assert isinstance(layers, Container) and layers.items is not None
    assert [type(k) for k in layers.items] == [TEInstance, TEInstance]
    assert layers.element == te_instance("")  # two TE classes: a TE module, class unknown
    assert _kind("layers[1]") == te_instance("LayerNormLinear")


def test_values_of_two_families_are_never_equal() -> None:
    node = ast.ClassDef(name="A", bases=[], keywords=[], body=[], decorator_list=[])
    assert LocalClass("A", node) != LocalInstance("A", node)
    assert LocalClass("A", node) != LocalSelf("A", node)
    assert TEClass("Linear") != TEInstance("Linear") != TEUnbound("Linear")
    assert QualName("x") != Unknown("x")
    other = ast.ClassDef(name="A", bases=[], keywords=[], body=[], decorator_list=[])
    assert LocalClass("A", node) == LocalClass("A", other)  # nodes are not compared
    assert Unknown("why", None) == Unknown("why", object())  # type: ignore[arg-type]


def test_join_keeps_whatever_may_be_te() -> None:
    node = ast.ClassDef(name="A", bases=[], keywords=[], body=[], decorator_list=[])
    assert join([NOT_TE, te_instance("Linear")]) == te_instance("Linear")
    assert join([te_instance("Linear"), te_instance("LayerNormLinear")]) == te_instance("")
    assert join([PENDING, TEClass("Linear")]) == TEClass("Linear")
    assert join([PENDING]) is PENDING
    assert join([LocalInstance("A", node), NOT_TE, QualName("os.path.join")]) is NOT_TE
    assert join([Reject("x"), LocalInstance("A", node)]) == Reject("x")
    assert join([container([te_instance("Linear")]), container([NOT_TE])]) == Container(
        te_instance("Linear")
    )
    assert join([GRAPHED, UNKNOWN]) is UNKNOWN


def test_values_are_cheap_slots_without_a_string_tag() -> None:
    leaves = [TEInstance("Linear"), Container(None), Unknown("why"), NOT_TE, GRAPHED]
    for kind in leaves:
        assert not hasattr(kind, "__dict__")
        assert not hasattr(kind, "tag")
    assert not hasattr(kinds, "Tag")
    assert isinstance(NOT_TE, NonTE)
