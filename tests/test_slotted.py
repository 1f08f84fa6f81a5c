"""The records built before any file is analysed (``lint_rules.slotted``) behave as the frozen
dataclasses they replace: fields, ``repr``, equality, hash, no assignment, pickling, ``replace``
with its checks; and the settings' cache key is the one the dataclass made."""

from __future__ import annotations

import copy
import pickle

import pytest

from lint_rules.analysis.records import settings_key
from lint_rules.cli.discovery import Discovery, ExcludePattern
from lint_rules.cli.formats import Problem, Style
from lint_rules.rules import RULES
from lint_rules.selection import Layer
from lint_rules.settings import DEFAULT_SETTINGS, Settings, SettingsError
from lint_rules.slotted import NamedTuple, field_names, replace

CONFIGURED = Settings(
    select=("TEM001",),
    per_file_ignores=(("tests/*", ("TEM002",)),),
    config_file="/project/pyproject.toml",
    sources=(("select", "/project/pyproject.toml"),),
)


def test_repr_names_every_field_in_order() -> None:
    assert repr(ExcludePattern("fixtures/*", "/p")) == (
        "ExcludePattern(glob='fixtures/*', anchor='/p')"
    )
    assert repr(Problem("a.py", "bad", 3)) == (
        "Problem(path='a.py', reason='bad', line=3, column=None)"
    )
    assert repr(Discovery(["a.py"], [])) == "Discovery(files=['a.py'], errors=[], notes=[])"
    shown = repr(CONFIGURED)
    assert shown.startswith("Settings(guard_functions=")
    assert shown.endswith(", sources=(('select', '/project/pyproject.toml'),))")
    assert [part.split("=")[0] for part in shown[9:].split(", ") if "=" in part][:3] == [
        "guard_functions",
        "tracked_functions",
        "import_helpers",
    ]


def test_equality_and_hash_skip_where_the_values_came_from() -> None:
    plain = Settings(select=("TEM001",), per_file_ignores=(("tests/*", ("TEM002",)),))
    assert plain == CONFIGURED and hash(plain) == hash(CONFIGURED)
    assert CONFIGURED != DEFAULT_SETTINGS
    assert Style() == Style(False) and hash(Style()) == hash(Style(False))
    assert Style() != Problem("a", "b") and Layer("x") != ("x", None, (), (), ())
    assert len({ExcludePattern("g", "/a"), ExcludePattern("g", "/a")}) == 1


def test_frozen_records_refuse_assignment_and_mutable_ones_have_no_hash() -> None:
    with pytest.raises(AttributeError, match="cannot assign to field 'select'"):
        CONFIGURED.select = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del RULES["TEM001"].code
    with pytest.raises(AttributeError):
        Style().other = 1  # type: ignore[attr-defined]
    found = Discovery([], [])
    found.files.append("a.py")
    found.notes = [("a", "b")]
    assert found == Discovery(["a.py"], [], [("a", "b")])
    with pytest.raises(TypeError):
        hash(found)
    assert Discovery([], []).notes is not Discovery([], []).notes


@pytest.mark.parametrize(
    "record",
    [CONFIGURED, DEFAULT_SETTINGS, RULES["TEM001"], Layer("cli", ("TEM",)), Problem("a", "b")],
)
def test_pickle_and_copy_round_trip(record: object) -> None:
    for again in (pickle.loads(pickle.dumps(record)), copy.copy(record), copy.deepcopy(record)):
        assert type(again) is type(record) and again == record and repr(again) == repr(record)


def test_replace_runs_the_checks_and_refuses_unknown_fields() -> None:
    guarded = replace(CONFIGURED, fix_strategy="guard")
    assert guarded.fix_strategy == "guard" and guarded.config_file == CONFIGURED.config_file
    assert CONFIGURED.fix_strategy == "none"
    with pytest.raises(SettingsError):
        replace(DEFAULT_SETTINGS, unresolved="sometimes")
    with pytest.raises(TypeError):
        replace(DEFAULT_SETTINGS, no_such_field=1)


def test_the_settings_cache_key_is_the_dataclass_one() -> None:
    """``records.keyed_digest`` keys the on-disk cache by the settings' fields in order:
    the text below is what the frozen dataclass's ``dataclasses.fields`` gave."""
    names = field_names(Settings)
    assert names[:3] == ("guard_functions", "tracked_functions", "import_helpers")
    assert names[-4:] == ("file_ignored", "config_file", "enabled", "sources")
    key = settings_key(Settings(fix_strategy="guard"), True).decode()
    assert key.startswith(f"([('guard_functions', {DEFAULT_SETTINGS.guard_functions!r}), ")
    assert "('te_version', ''), ('fix_strategy', 'guard'), " in key and key.endswith("], True)")


def test_an_outcome_holds_only_what_differs_from_its_defaults() -> None:
    """``records.Outcome`` (one per file of a run) keeps its defaults on the class: the same
    fields, ``repr``, equality, hash, pickling and ``replace`` as a record that stores them."""
    from lint_rules.analysis.records import Outcome

    unread = Outcome.unread("a.py")
    assert unread == Outcome("a.py") and hash(unread) == hash(Outcome("a.py"))
    assert repr(unread) == repr(Outcome("a.py")) and unread.__dict__ == {}
    failed = Outcome("b.py", error="cannot parse", error_line=2, digest="d")
    assert failed.__dict__ == {"error": "cannot parse", "error_line": 2, "digest": "d"}
    assert field_names(Outcome)[:3] == ("path", "findings", "error") and len(failed._fields) == 16
    assert failed != replace(failed, error_line=3) and replace(failed, error_line=2) == failed
    for record in (unread, failed):
        for again in (pickle.loads(pickle.dumps(record)), copy.copy(record), copy.deepcopy(record)):
            assert type(again) is Outcome and again == record and repr(again) == repr(record)
    with pytest.raises(AttributeError, match="cannot assign to field 'error'"):
        unread.error = "x"  # type: ignore[misc]


class Globally(NamedTuple):
    """Pickled by name: a module-level class."""

    x: int


def test_the_named_tuple_stand_in_is_typing_s() -> None:
    """``slotted.NamedTuple`` (a ``collections.namedtuple`` underneath) gives what
    ``typing.NamedTuple`` gives: fields, defaults, methods, docstring, pickling."""
    import typing

    def made(base: type) -> type:
        class Point(base):  # type: ignore[misc, valid-type]
            """A point."""

            x: int
            y: int = 2

            def total(self) -> int:
                return self.x + self.y

        return Point

    ours, theirs = made(NamedTuple), made(typing.NamedTuple)
    assert ours._fields == theirs._fields == ("x", "y")
    assert ours._field_defaults == theirs._field_defaults == {"y": 2}
    assert ours(1) == theirs(1) == (1, 2)
    assert ours(1).total() == 3
    assert ours.__doc__ == "A point."
    assert pickle.loads(pickle.dumps(Globally(1))) == Globally(1)


def test_the_named_tuple_stand_in_refuses_a_field_without_default_after_one_with() -> None:
    """As ``typing.NamedTuple`` does: ``namedtuple``'s defaults go to the last fields, so
    ``a: int = 1`` then ``b: int`` would give ``b`` the ``1`` and leave ``a`` required."""

    with pytest.raises(TypeError, match="cannot follow default field"):

        class Wrong(NamedTuple):  # type: ignore[misc]
            a: int = 1
            b: int  # type: ignore[misc]


class _Outer:
    class Inner(NamedTuple):
        x: int


def test_a_named_tuple_in_a_class_is_pickled_by_its_qualified_name() -> None:
    """``typing.NamedTuple`` keeps the class body's ``__qualname__``: pickle finds a class
    nested in another by it (``namedtuple`` alone names it ``Inner``: not found)."""
    assert _Outer.Inner.__qualname__ == "_Outer.Inner"
    assert pickle.loads(pickle.dumps(_Outer.Inner(1))) == _Outer.Inner(1)
