"""The guard strategy's import: one text-level insertion, and when the module already has it.

Every byte outside the inserted lines (or the name merged into an existing import) stays as
it is: comments, the shebang and coding cookie, newlines (LF, CRLF or CR), form feeds. The
import goes after the docstring, the ``__future__`` imports and the first block of imports;
where megatron is an optional dependency, in its own ``try`` block with a fallback ``def``.
The guard counts as imported only where a real ``from <guard module> import <name>`` runs
wherever the module runs; a name bound to something else or deleted is refused.
"""

from __future__ import annotations

import ast
import warnings
from typing import Protocol, cast

from lint_rules.findings import char_column, char_offset, line_offsets, split_lines


def _binds(stmt: ast.stmt, name: str) -> str | None:
    """How the module-level statement ``stmt`` itself binds or deletes ``name``: ``"import
    MODULE"`` for ``from MODULE import name``, ``"del"``, ``"other"``; None when it does not
    (its nested blocks are not looked at here)."""
    if isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if alias.name == "*":
                return "other"
            if (alias.asname or alias.name) == name:
                if alias.name != name:  # `from m import other as name`
                    return "other"
                return f"import {'.' * stmt.level}{stmt.module or ''}"
        return None
    if isinstance(stmt, ast.Import):
        bound = (alias.asname or alias.name.split(".", 1)[0] for alias in stmt.names)
        return "other" if name in bound else None
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "other" if stmt.name == name else None
    if isinstance(stmt, ast.Delete):
        deleted = (n for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        return "del" if any(n.id == name for n in deleted) else None
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)) or (
        isinstance(stmt, (ast.If, ast.While)) and stmt.test is not None
    ):
        value = getattr(stmt, "value", None) or getattr(stmt, "test", None)
        if value is not None:
            targets += [n.target for n in ast.walk(value) if isinstance(n, ast.NamedExpr)]
    names = (n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return "other" if any(n.id == name for n in names) else None


class _TryLike(Protocol):
    """What a ``try`` statement has, ``try``/``except*`` (Python 3.11+) included."""

    body: list[ast.stmt]
    orelse: list[ast.stmt]
    finalbody: list[ast.stmt]
    handlers: list[ast.ExceptHandler]


def _as_try(stmt: ast.stmt) -> _TryLike | None:
    """``stmt`` when it is a ``try`` or ``try``/``except*`` statement, else None."""
    if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        return cast(_TryLike, stmt)
    return None


def _blocks(stmt: ast.stmt) -> list[tuple[str, list[ast.stmt]]]:
    """The statement lists run at module level inside ``stmt``: (kind, body)."""
    if isinstance(stmt, ast.If):
        if _is_type_checking(stmt.test):
            return [("else", stmt.orelse)]
        return [("if", stmt.body), ("else", stmt.orelse)]
    try_stmt = _as_try(stmt)
    if try_stmt is not None:
        blocks = [
            ("try", try_stmt.body),
            ("else", try_stmt.orelse),
            ("finally", try_stmt.finalbody),
        ]
        return blocks + [("except", handler.body) for handler in try_stmt.handlers]
    if isinstance(stmt, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
        return [("body", stmt.body), ("else", getattr(stmt, "orelse", []))]
    if hasattr(ast, "Match") and isinstance(stmt, ast.Match):  # pragma: no cover - 3.10+
        return [("case", case.body) for case in stmt.cases]
    return []


def guard_binding(module: ast.Module, module_name: str, name: str) -> str | None:
    """Whether the guard ``from module_name import name`` is bound wherever the module runs.

    ``"bound"``: that import runs unconditionally at module level (directly, or in a ``try``
    whose ``except ImportError`` branches define a fallback ``def name``). None: it is not, and
    nothing else at module level binds ``name`` except fallbacks in the ``except`` branches of
    a ``try`` that imports it (the import can then be added). Otherwise, why it cannot be:
    ``name`` is bound to something else or deleted (adding the import would change what that
    name means, or the module would still delete it).
    """
    wanted = f"import {module_name}"
    bound = False
    for top in module.body:
        how = _binds(top, name)
        if how == wanted:
            bound = True
            continue
        if how is not None:
            what = "deleted" if how == "del" else "bound to something else"
            return f"`{name}` is {what} at line {top.lineno} of this module"
        top_try = _as_try(top)
        imports_it = top_try is not None and any(
            _binds(sub, name) == wanted for sub in top_try.body
        )
        fallbacks = []
        todo = [(kind, stmt) for kind, body in _blocks(top) for stmt in body]
        while todo:
            kind, stmt = todo.pop()
            how = _binds(stmt, name)
            fallback = imports_it and kind == "except"
            if how == "del" or (how not in (None, wanted) and not fallback):
                what = "deleted" if how == "del" else "bound to something else"
                return f"`{name}` is {what} at line {stmt.lineno} of this module"
            if kind == "except" and how is not None:
                fallbacks.append(stmt)
            todo.extend((kind, sub) for _, body in _blocks(stmt) for sub in body)
        if imports_it and fallbacks and top_try is not None:  # imports_it: it is a try
            defined = all(
                any(isinstance(s, ast.FunctionDef) and s.name == name for s in h.body)
                for h in top_try.handlers
            )
            if defined and not top_try.orelse and not top_try.finalbody:
                bound = True
    return "bound" if bound else None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class GuardImportError(ValueError):
    """The guard's import cannot be added without changing what the module means."""


def _header_end(lines: list[str], module: ast.Module) -> int:
    """The line after which a module's first statement may be preceded by an import: after
    the docstring and the ``__future__`` imports, else after the leading comment lines (the
    shebang, the coding cookie, a licence header), which must stay first."""
    body = module.body
    index = 0
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        index = 1
    while (
        index < len(body)
        and isinstance(stmt := body[index], ast.ImportFrom)
        and stmt.module == "__future__"
    ):
        index += 1
    if index:
        return body[index - 1].end_lineno or body[index - 1].lineno
    first = body[0] if body else None
    limit = len(lines)
    if first is not None:
        decorators = getattr(first, "decorator_list", [])
        limit = min([first.lineno, *(d.lineno for d in decorators)]) - 1
    after = 0
    while after < limit and lines[after].lstrip(" \t\f").startswith("#"):
        after += 1
    return after


def _import_position(text: str, module: ast.Module) -> int:
    """The line after which the guard's import goes: after the last import of the first block
    of module-level imports (after the header when the module has no import there)."""
    lines = split_lines(text)
    header = _header_end(lines, module)
    body = [stmt for stmt in module.body if stmt.lineno > header]
    start = next(
        (i for i, stmt in enumerate(body) if isinstance(stmt, (ast.Import, ast.ImportFrom))), None
    )
    if start is None:
        return header
    after = header
    for stmt in body[start:]:
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            break
        after = stmt.end_lineno or stmt.lineno
    return after


def add_guard_import(text: str, dotted: str) -> str:
    """Add ``from module import name`` unless that import runs wherever the module runs.

    Text-level insertions only (every other byte, comment and newline stays as it is):
    where the guard's top-level package is imported only inside ``try: ... except
    ImportError`` (an optional dependency), the import gets its own ``try`` block right after
    that one (and after any fallback the module binds to the name there), with a fallback
    guard that returns False (None is passed): inside the first block its ImportError would
    run that block's ``except`` branch. Otherwise it joins an existing ``from module import
    ...`` in the order its names already follow, or goes among that package's sorted ``from``
    imports, or after the last import of the first import block. Raises
    ``GuardImportError`` where the name is bound to something else or deleted.
    """
    module_name, _, name = dotted.rpartition(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = ast.parse(text)
    state = guard_binding(module, module_name, name)
    if state == "bound":
        return text
    if state is not None:
        raise GuardImportError(f"the guard's import would change the module: {state}")
    line = f"from {module_name} import {name}"
    optional = _optional_import_block(text, module, module_name.split(".", 1)[0])
    if optional is not None:
        after, indent = optional
        for stmt in module.body:  # after any fallback binding of the name too
            if (
                isinstance(stmt, ast.Try)
                and (stmt.end_lineno or 0) > after
                and any(
                    _binds(sub, name)
                    for handler in stmt.handlers
                    for sub in ast.walk(handler)
                    if isinstance(sub, ast.stmt)
                )
            ):
                after = stmt.end_lineno or after
        block = (
            "",
            "try:",
            f"{indent}{line}",
            "except ImportError:  # the guard is not available: never tracked, so None is passed",
            f"{indent}def {name}(*args, **kwargs):",
            f"{indent}{indent}return False",
        )
        return _insert_line(text, after, block)
    merged = _merge_import(text, module, module_name, name)
    if merged is not None:
        return merged
    sorted_after = _sorted_position(module, module_name)
    if sorted_after is None:
        sorted_after = _import_position(text, module)
    return _insert_line(text, sorted_after, (line,))


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        kind is None or (isinstance(kind, ast.Name) and kind.id in _IMPORT_ERRORS) for kind in kinds
    )


def _imports_root(stmt: ast.stmt, root: str) -> bool:
    if isinstance(stmt, ast.Import):
        return any(alias.name.split(".", 1)[0] == root for alias in stmt.names)
    return (
        isinstance(stmt, ast.ImportFrom)
        and not stmt.level
        and (stmt.module or "").split(".", 1)[0] == root
    )


def _optional_import_block(text: str, module: ast.Module, root: str) -> tuple[int, str] | None:
    """(the last line of, the body's indentation unit in) the first module-level ``try`` whose
    body imports ``root`` and whose handlers catch ImportError, when the module imports
    ``root`` nowhere else at its top level; else None."""
    found = None
    lines = split_lines(text)
    for stmt in module.body:
        if _imports_root(stmt, root):
            return None  # a required dependency: the usual place
        if (
            found is None
            and isinstance(stmt, ast.Try)
            and any(_imports_root(sub, root) for sub in stmt.body)
            and any(_catches_import_error(handler) for handler in stmt.handlers)
        ):
            last = [sub for sub in stmt.body if isinstance(sub, (ast.Import, ast.ImportFrom))][-1]
            row = lines[last.lineno - 1]
            indent = row[: char_column(row, last.col_offset)]
            if last.lineno == stmt.lineno or indent.strip(" \t"):
                indent = "    "  # `try: from megatron... import X` on one line
            found = (stmt.end_lineno or last.end_lineno or last.lineno, indent)
    return found


def _insert_line(text: str, after: int, block: tuple[str, ...]) -> str:
    """The lines of ``block`` after line ``after``, with the file's newline."""
    lines = split_lines(text)
    newline = next(
        (ln[len(ln.rstrip("\r\n")) :] for ln in lines if ln.endswith(("\n", "\r"))), "\n"
    )
    if after and not lines[after - 1].endswith(("\n", "\r")):
        lines[after - 1] += newline
    lines[after:after] = [line + newline if line else newline for line in block]
    return "".join(lines)


def _sorted_position(module: ast.Module, module_name: str) -> int | None:
    """The line after which ``from module_name import ...`` stands in isort's (and ruff's)
    order among the first import block's ``from`` imports of the same top-level package, when
    there are some and they are sorted; else None."""
    body = module.body
    start = next((i for i, s in enumerate(body) if isinstance(s, (ast.Import, ast.ImportFrom))), 0)
    root = module_name.split(".", 1)[0]
    group: list[ast.ImportFrom] = []
    for stmt in body[start:]:
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            break
        if isinstance(stmt, ast.ImportFrom) and not stmt.level and _imports_root(stmt, root):
            group.append(stmt)
    keys = [(s.module or "").lower() for s in group]
    if not group or keys != sorted(keys):
        return None
    key = module_name.lower()
    before = [s for s, k in zip(group, keys) if k <= key]
    if before:
        return before[-1].end_lineno
    return group[0].lineno - 1


def _type_order(name: str) -> tuple[int, str, str]:
    """isort's and ruff's default order of imported names: constants, classes, the rest."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower(), name


def _plain_order(name: str) -> tuple[int, str, str]:
    return 0, name.lower(), name


def _merge_import(text: str, module: ast.Module, module_name: str, name: str) -> str | None:
    """``name`` added to the first module-level ``from module_name import ...``, where the
    order of its names (isort's default, else case-insensitive) puts it; None when there is
    no such import, its names follow neither order, or positions are unknown (Python 3.9)."""
    node = next(
        (
            stmt
            for stmt in module.body
            if isinstance(stmt, ast.ImportFrom)
            and not stmt.level
            and stmt.module == module_name
            and all(alias.name != "*" for alias in stmt.names)
        ),
        None,
    )
    if node is None or getattr(node.names[0], "lineno", None) is None:
        return None
    names = [alias.name for alias in node.names]
    order = next(
        (key for key in (_type_order, _plain_order) if names == sorted(names, key=key)), None
    )
    if order is None:
        return None
    lines = split_lines(text)
    starts = line_offsets(lines)
    index = next((i for i, other in enumerate(names) if order(other) > order(name)), len(names))
    before = index < len(names)
    alias = node.names[index if before else -1]
    row = alias.lineno if before else alias.end_lineno
    col = alias.col_offset if before else alias.end_col_offset
    if row is None or col is None:  # an alias without an end position: unknown
        return None
    line = lines[row - 1]
    at = char_offset(lines, starts, (row, col))
    continued = row > 1 and lines[row - 2].rstrip("\r\n").endswith("\\")
    own_line = (
        node.lineno != node.end_lineno
        and not continued  # `import A, \` then `    B`: a new line would end the statement
        and not line[: char_column(line, alias.col_offset)].strip(" \t")
    )
    if own_line:
        indent = line[: char_column(line, alias.col_offset)]
        newline = line[len(line.rstrip("\r\n")) :] or "\n"
        insert = f"{name},{newline}{indent}" if before else f",{newline}{indent}{name}"
    else:
        insert = f"{name}, " if before else f", {name}"
    return text[:at] + insert + text[at:]
