"""Records with ``__slots__``: what the start-up path uses of a (frozen) dataclass.

Importing ``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis`` and ``tokenize``):
about a fifth of the instructions of ``check`` on an empty folder. So the classes built before
any file is analysed (``Settings``, ``Rule``, ``Layer``, ``Configuration``, the discovery and
output records, and the records of a run, ``analysis.records``, which a warm run served from
the cache builds without analysing anything) derive from ``Record`` or ``Frozen`` instead.
Each one lists its fields in ``__slots__`` (in the order of its constructor) and writes its
``__init__``, whose signature is the type checker's, starting with ``self._fill(locals())``.

Behaviour kept from the dataclass each replaces: ``repr`` (field by field, by qualified name),
``==`` on the same class over the compared fields (``_uncompared`` names the others), and for
``Frozen`` a hash over the same fields and no assignment after ``__init__`` (an
``AttributeError``); pickling and ``copy`` (``__getstate__``/``__setstate__``); ``replace`` and
``field_names`` for ``dataclasses.replace`` and ``dataclasses.fields``.

A record made by the thousand where most fields keep their default (``records.Outcome``, one
per file of a run) lists ``__dict__`` in its ``__slots__`` beside the fields it always sets,
names every field in ``_fields`` and gives the others a class-level default: an instance holds
only what differs (setting a field of a frozen record is a call of ``object.__setattr__``,
~1.5K instructions; sixteen of them per file were a sixth of a cold run where nothing passes).
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    R = TypeVar("R", bound="Record")


class FrozenRecordError(AttributeError):
    """A field of a ``Frozen`` record assigned or deleted (``dataclasses.FrozenInstanceError``)."""


class Record:
    """Slotted fields with a dataclass's ``repr``, ``==`` and pickling (no hash: mutable)."""

    __slots__: tuple[str, ...] = ()
    _fields: tuple[str, ...] = ()
    """Every field, in the order of the constructor: ``__slots__``, unless the class names
    them here (those not in ``__slots__`` have a class-level default)."""
    _defaults: dict[str, Any] = {}
    """The class-level defaults, by field: a value that is its default is not stored."""
    _always: tuple[str, ...] = ()
    _defaulted: tuple[tuple[str, Any], ...] = ()
    _uncompared: frozenset[str] = frozenset()
    """Fields left out of ``==`` and the hash (a dataclass's ``field(compare=False)``)."""
    _compared: tuple[str, ...] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if "_fields" not in cls.__dict__:
            cls._fields = cls.__slots__
        slots = cls.__slots__
        cls._defaults = {n: getattr(cls, n) for n in cls._fields if n not in slots}
        cls._always = tuple(n for n in cls._fields if n not in cls._defaults)
        cls._defaulted = tuple(cls._defaults.items())
        cls._compared = tuple(n for n in cls._fields if n not in cls._uncompared)

    def _fill(self, values: dict[str, Any]) -> None:
        """Set every field from ``values`` (the ``locals()`` of ``__init__``); a value that is
        (``is``) its class-level default is left to it."""
        for name in self._always:
            object.__setattr__(self, name, values[name])
        for name, default in self._defaulted:
            value = values[name]
            if value is not default:
                object.__setattr__(self, name, value)

    def _key(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._compared])

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key() == other._key()  # type: ignore[attr-defined, no-any-return]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def __getstate__(self) -> list[Any]:
        return [getattr(self, name) for name in self._fields]

    def __setstate__(self, state: list[Any]) -> None:
        self._fill(dict(zip(self._fields, state)))


class Frozen(Record):
    """A ``Record`` whose fields are not assigned after ``__init__``, hashed by their values."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._key())


def field_names(record: Record | type[Record]) -> tuple[str, ...]:
    """The fields of ``record``, in the order of its constructor (``dataclasses.fields``)."""
    kind = record if isinstance(record, type) else type(record)
    return kind._fields


def replace(record: R, **changes: Any) -> R:
    """A copy of ``record`` with ``changes``, through ``__init__`` so that its checks run
    (``dataclasses.replace``); a name that is not a field is a ``TypeError``."""
    values = {name: getattr(record, name) for name in record._fields}
    return type(record)(**{**values, **changes})


if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:

    class _TupleMaker(type):
        """What ``class X(NamedTuple)`` does, without importing ``typing``: a
        ``collections.namedtuple`` with the fields and defaults the class body annotates and
        assigns, and the body's methods and docstring (``typing.NamedTuple`` also evaluates
        each annotation, a ``compile`` apiece: a fifth of its cost)."""

        def __new__(mcls, name, bases, namespace):  # noqa: N804 - a metaclass
            if not bases:
                return super().__new__(mcls, name, bases, namespace)
            from collections import namedtuple

            fields = tuple(namespace.get("__annotations__", {}))
            defaults = [namespace[f] for f in fields if f in namespace]
            for before, field in zip(fields, fields[1:]):  # ``namedtuple`` gives the last ones
                if before in namespace and field not in namespace:  # the defaults: refused
                    raise TypeError(  # as ``typing.NamedTuple`` does
                        f"Non-default namedtuple field {field} cannot follow default field {before}"
                    )
            made = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            made.__annotations__ = namespace.get("__annotations__", {})
            made.__qualname__ = namespace.get("__qualname__", name)  # pickled by it
            for key, value in namespace.items():
                if key not in fields and key not in _OWN:
                    setattr(made, key, value)
            return made

    _OWN = frozenset({"__module__", "__qualname__", "__annotations__", "__slots__", "__new__"})

    class NamedTuple(metaclass=_TupleMaker):
        """``typing.NamedTuple`` for ``class X(NamedTuple)`` (``_TupleMaker``)."""
