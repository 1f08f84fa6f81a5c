"""What calls of library functions (outside the file and TE) return: containers, wrappers,
pass-through callables, torch classes' instances; else an unknown value with its provenance."""

from __future__ import annotations

import ast

from lint_rules.analysis.kinds import (
    GRAPHED,
    NOT_TE,
    Container,
    Kind,
    LocalFunction,
    LocalMethod,
    NonTE,
    Pending,
    QualName,
    Unknown,
    container,
)
from lint_rules.analysis.provenance import origin_of
from lint_rules.analysis.symbols import Scope, constant_str, optional_import
from lint_rules.te import PASS_THROUGH, TE_GRAPH_FACTORY, TE_ROOT

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.resolve import Resolver

_CONTAINER_FACTORIES = frozenset(
    {
        "torch.nn.ModuleList",
        "torch.nn.Sequential",
        "torch.nn.ModuleDict",
        "torch.nn.modules.container.ModuleList",
        "torch.nn.modules.container.Sequential",
        "torch.nn.modules.container.ModuleDict",
        "list",
        "tuple",
    }
)
_WRAPPED_FUNCTIONS = (LocalFunction, LocalMethod)
"""What a call's first argument is when the call wraps a function (not a module)."""


def wrapper_of(wrapped: Kind, argument: ast.expr) -> Kind | None:
    """What ``wrapper(f, ...)`` of a library is when ``f`` is a function that is not TE
    (``fwd_bwd_wrapper(forward_step, "fwd")`` calls ``forward_step``): not TE, as what it
    wraps; the wrapper of a name being resolved (``f = wrap(f)``) is that name (pending, so
    its other bindings decide). None: the call is not known to wrap such a function."""
    named = isinstance(argument, (ast.Name, ast.Attribute))
    if isinstance(wrapped, Pending) and named:
        return wrapped
    if isinstance(wrapped, _WRAPPED_FUNCTIONS) or (isinstance(wrapped, NonTE) and named):
        return NOT_TE
    if isinstance(wrapped, QualName) and not wrapped.name.startswith(TE_ROOT):
        return NOT_TE
    return None


_TORCH_MODULE_WRAPPERS = ("torch.nn.DataParallel", "torch.nn.parallel.", "torch.distributed.")
"""torch classes that call a module they are given: what they hold decides, so not known."""


def torch_class(qual: str) -> bool:
    """A class of ``torch`` (``torch.nn.Linear``, however imported): known not to be TE."""
    if not qual.startswith("torch.") or qual.startswith(_TORCH_MODULE_WRAPPERS):
        return False
    return qual.rsplit(".", 1)[-1][:1].isupper()


def library_call(resolver: Resolver, qual: str, call: ast.Call, scope: Scope | None) -> Kind:
    """What a call of the library function ``qual`` (outside the file and TE) returns."""
    symbols = resolver.symbols
    if symbols.helpers:  # `X, HAVE_X = safe_import_from("pkg", "X")` inside a function
        imported = optional_import(call, symbols.helpers, symbols.alias_choices)
        if imported is not None:
            return container([resolver.qualname_kind(imported), NOT_TE])
    short = qual.rsplit(".", 1)[-1]
    if qual == "importlib.import_module" and call.args:
        module = constant_str(call.args[0])
        if module is not None and not module.startswith("."):
            return QualName(module)  # the module, as if imported
    if qual.startswith(TE_ROOT + ".") and short == TE_GRAPH_FACTORY:
        return GRAPHED
    if qual in PASS_THROUGH and call.args:
        return resolver.resolve(call.args[0], scope)
    if qual in ("enumerate", "zip", "reversed") and call.args:
        parts = [resolver.element_of(resolver.resolve(a, scope)) for a in call.args]
        if qual == "enumerate":
            return Container(container([NOT_TE, parts[0]]))
        if qual == "zip":
            return Container(container(parts))
        return Container(parts[0])
    if qual in _CONTAINER_FACTORIES or short in ("ModuleList", "Sequential", "ModuleDict"):
        elements = [resolver.resolve(a, scope) for a in call.args]
        if short in ("ModuleList", "list", "tuple", "ModuleDict") and elements:
            first = elements[0]
            if isinstance(first, Container):
                return first
            return Container(resolver.element_of(first))
        return container(elements)
    if torch_class(qual):
        return NOT_TE  # torch.nn.Linear(...) and the like
    if call.args and not isinstance(call.args[0], ast.Starred):
        wrapped = wrapper_of(resolver.resolve(call.args[0], scope), call.args[0])
        if wrapped is not None:
            return wrapped
    origin = origin_of(qual)
    return Unknown(f"the result of `{qual}`", origin)
