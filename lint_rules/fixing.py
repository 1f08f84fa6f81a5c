"""Apply the core's fixes to source text: exact edits, everything else byte-identical.

Edits are applied to the text in place (positions come from ``ast``), so blank lines, quoting,
trailing commas, line breaks inside calls, the encoding cookie and CRLF newlines are untouched
by construction. Comments inside a replaced value are kept (after the new value, then on their
own lines). A fix is applied only when it is ``safe`` or unsafe fixes were asked for, and never
when a ``# noqa`` for its code sits on any line its edits span. The guard strategy's import is
inserted as text too. The result is verified before it is returned: it parses (as the bytes it
will be written as, when the file's encoding is given) and keeps every comment in order.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from lint_rules.analysis import Project, analyze_source
from lint_rules.deep import deep
from lint_rules.findings import Finding, char_column, split_lines
from lint_rules.noqa import filter_noqa, noqa_checker
from lint_rules.settings import DEFAULT_SETTINGS, Settings


class FixError(RuntimeError):
    """The fixed text would not parse: nothing is written (a bug; please report it)."""


@dataclass
class FixResult:
    """The new text, what was fixed, what was left, and notes for the user."""

    text: str
    applied: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    """Unsuppressed findings left in place: no fix (TEM004), an unsafe fix not asked for, or
    a fix skipped (see ``skipped``)."""
    unsafe: list[Finding] = field(default_factory=list)
    """Remaining because their fix is unsafe and unsafe fixes were not asked for."""
    skipped: list[Finding] = field(default_factory=list)
    """Remaining because their fix was skipped: a ``# noqa`` on a line it spans, an overlap."""
    added_imports: list[str] = field(default_factory=list)
    """The dotted guards whose import the fix added (the ``guard`` strategy)."""

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def _offsets(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def _char_offset(lines: list[str], starts: list[int], position: tuple[int, int]) -> int:
    """Absolute str index of an ``ast`` (line, UTF-8 byte column) position."""
    line_no, byte_col = position
    return starts[line_no - 1] + char_column(lines[line_no - 1], byte_col)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Touching counts: an insertion at a replaced value's edge would garble it."""
    return a[0] <= b[1] and b[0] <= a[1]


def _comments(old: str) -> list[tuple[int, str]] | None:
    """(line index within ``old``, comment) for each comment token; None if it won't tokenize.

    ``old`` is the source of an expression (a replaced value), so inside parentheses it is one
    logical line whatever its line breaks.
    """
    flat = old.replace("\r\n", "\n").replace("\r", "\n")
    found: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(f"({flat})").readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0] - 1, token.string))
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def keep_comments(old: str, new: str, after: str = "") -> str | None:
    """``new`` followed by the comments of the replaced text ``old``, in order.

    The first comment goes after the new value, each further one on its own line with the
    indentation of the line it was on; the text after the replaced span starts on a new line
    with the indentation of the span's last line (a comment always ends its line, and inside a
    call the line break is free), less the blanks that ``after`` (the rest of that line) starts
    with before its own comment. None when ``old`` cannot be read (the fix is then skipped).
    """
    if "#" not in old:
        return new
    comments = _comments(old)
    if comments is None:
        return None
    if not comments:
        return new
    lines = split_lines(old)

    def ending(index: int) -> str:
        line = lines[index]
        return line[len(line.rstrip("\r\n")) :] or "\n"

    def indent(index: int) -> str:
        line = lines[index]
        return line[: len(line) - len(line.lstrip(" \t"))]

    pieces = [new]
    for number, (index, comment) in enumerate(comments):
        if number == 0:
            pieces.append(f"  {comment}")
        else:
            pieces.append(f"{ending(comments[number - 1][0])}{indent(index)}{comment}")
    last_indent = indent(len(lines) - 1)
    blanks = len(after) - len(after.lstrip(" \t"))
    if after.lstrip(" \t").startswith("#") and last_indent.endswith(after[:blanks]):
        last_indent = last_indent[: len(last_indent) - blanks]
    pieces.append(f"{ending(comments[-1][0])}{last_indent}")
    return "".join(pieces)


@dataclass
class _Plan:
    accepted: list[tuple[int, int, str]] = field(default_factory=list)
    applied: list[Finding] = field(default_factory=list)
    skipped: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def apply_edits(
    text: str,
    findings: list[Finding],
    suppressed: Callable[[str, int], bool] | None = None,
) -> tuple[str, list[Finding], list[str], list[Finding]]:
    """Apply each finding's edits: (new text, applied, notes, skipped).

    A fix is skipped when it collides with an earlier one, when ``suppressed(code, line)`` says
    a ``# noqa`` covers a line its edits span, or when a replaced value's comments cannot be
    read (they would be lost).
    """
    lines = split_lines(text)
    starts = _offsets(lines)
    # Findings on one value carry one fix (the core shares TEM005's None), applied once.
    taken: list[tuple[int, int]] = []
    plan = _Plan()
    seen_edits: set[tuple] = set()
    for finding in sorted(findings, key=lambda f: f.sort_key):
        fix = finding.fix
        if fix is None:
            continue
        if fix.edits in seen_edits:
            plan.applied.append(finding)
            continue
        first = min(e.start[0] for e in fix.edits)
        last = max(e.end[0] for e in fix.edits)
        if suppressed is not None and any(
            suppressed(finding.code, line) for line in range(first, last + 1)
        ):
            plan.skipped.append(finding)
            plan.notes.append(
                f"line {finding.line}: {finding.code} not fixed, a `# noqa` covers a line "
                "the fix would change"
            )
            continue
        spans = []
        for e in fix.edits:
            begin = _char_offset(lines, starts, e.start)
            end = _char_offset(lines, starts, e.end)
            after = lines[e.end[0] - 1][end - starts[e.end[0] - 1] :]
            replacement = keep_comments(text[begin:end], e.replacement, after)
            if replacement is None:
                break
            spans.append((begin, end, replacement))
        else:
            whole = (min(s[0] for s in spans), max(s[1] for s in spans))
            if any(_overlaps(whole, other) for other in taken):
                plan.skipped.append(finding)
                plan.notes.append(
                    f"line {finding.line}: {finding.code} not fixed here, it overlaps another fix"
                )
                continue
            taken.append(whole)
            plan.accepted.extend(spans)
            seen_edits.add(fix.edits)
            plan.applied.append(finding)
            if fix.note:
                plan.notes.append(f"line {finding.line}: {fix.note}")
            continue
        plan.skipped.append(finding)
        plan.notes.append(
            f"line {finding.line}: {finding.code} not fixed, its comments are unclear"
        )
    pieces: list[str] = []
    cursor = len(text)
    for begin, end, replacement in sorted(plan.accepted, key=lambda s: (s[0], s[1]), reverse=True):
        pieces.append(text[end:cursor])
        pieces.append(replacement)
        cursor = begin
    pieces.append(text[:cursor])
    applied = sorted(plan.applied, key=lambda f: f.sort_key)
    return "".join(reversed(pieces)), applied, plan.notes, plan.skipped


def _binds(stmt: ast.stmt, name: str) -> str | None:
    """How the module-level statement ``stmt`` itself binds or deletes ``name``: ``"import
    MODULE"`` for ``from MODULE import name``, ``"del"``, ``"other"``; None when it does not
    (its nested blocks are not looked at here)."""
    if isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if (alias.asname or alias.name) == name:
                return (
                    f"import {'.' * stmt.level}{stmt.module or ''}"
                    if alias.asname
                    in (
                        None,
                        name,
                    )
                    and alias.name == name
                    else "other"
                )
            if alias.name == "*":
                return "other"
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


def _blocks(stmt: ast.stmt) -> list[tuple[str, list[ast.stmt]]]:
    """The statement lists run at module level inside ``stmt``: (kind, body)."""
    if isinstance(stmt, ast.If):
        if _is_type_checking(stmt.test):
            return [("else", stmt.orelse)]
        return [("if", stmt.body), ("else", stmt.orelse)]
    if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        blocks = [("try", stmt.body), ("else", stmt.orelse), ("finally", stmt.finalbody)]
        return blocks + [("except", handler.body) for handler in stmt.handlers]
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
        imports_it = isinstance(top, (ast.Try, getattr(ast, "TryStar", ast.Try))) and any(
            _binds(sub, name) == wanted for sub in top.body
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
        if imports_it and fallbacks:
            handlers = top.handlers  # type: ignore[attr-defined]
            defined = all(
                any(isinstance(s, ast.FunctionDef) and s.name == name for s in h.body)
                for h in handlers
            )
            if defined and not top.orelse and not top.finalbody:  # type: ignore[attr-defined]
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
        and isinstance(body[index], ast.ImportFrom)
        and body[index].module == "__future__"  # type: ignore[union-attr]
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
    after = _sorted_position(module, module_name)
    if after is None:
        after = _import_position(text, module)
    return _insert_line(text, after, (line,))


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
    starts = _offsets(lines)
    index = next((i for i, other in enumerate(names) if order(other) > order(name)), len(names))
    before = index < len(names)
    alias = node.names[index if before else -1]
    row = alias.lineno if before else alias.end_lineno  # type: ignore[attr-defined]
    col = alias.col_offset if before else alias.end_col_offset  # type: ignore[attr-defined]
    line = lines[row - 1]
    at = _char_offset(lines, starts, (row, col))
    continued = row > 1 and lines[row - 2].rstrip("\r\n").endswith("\\")
    own_line = (
        node.lineno != node.end_lineno
        and not continued  # `import A, \` then `    B`: a new line would end the statement
        and not line[
            : char_column(
                line, alias.col_offset
            )  # type: ignore[attr-defined]
        ].strip(" \t")
    )
    if own_line:
        indent = line[: char_column(line, alias.col_offset)]  # type: ignore[attr-defined]
        newline = line[len(line.rstrip("\r\n")) :] or "\n"
        insert = f"{name},{newline}{indent}" if before else f",{newline}{indent}{name}"
    else:
        insert = f"{name}, " if before else f", {name}"
    return text[:at] + insert + text[at:]


def comment_tokens(text: str) -> list[str] | None:
    """Every comment of ``text``, in order (None when it does not tokenize)."""
    try:
        return [
            token.string
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return None


def _kept_in_order(old: list[str], new: list[str]) -> bool:
    """Whether ``old`` is a subsequence of ``new`` (the fix may add its own comment)."""
    remaining = iter(new)
    return all(any(comment == other for other in remaining) for comment in old)


def verify_fixed(old: str, new: str, encoding: str | None = None) -> None:
    """Raise FixError unless ``new`` parses (as the bytes it will be written as, under the
    file's own declared encoding, when ``encoding`` is given) and keeps every comment of
    ``old`` in order."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if encoding is None:
                ast.parse(new)
            else:
                try:
                    data = new.encode(encoding)
                except UnicodeEncodeError:
                    data = None  # the write refuses it with its own message
                ast.parse(new if data is None else data)
    except SyntaxError as error:
        raise FixError(f"the fixed text does not parse ({error}); nothing was changed") from error
    before, after = comment_tokens(old), comment_tokens(new)
    if before is not None and (after is None or not _kept_in_order(before, after)):
        raise FixError("the fixed text would lose a comment; nothing was changed")


@deep
def fix_source(
    text: str,
    settings: Settings = DEFAULT_SETTINGS,
    disable_noqa: bool = False,
    project: Project | None = None,
    encoding: str | None = None,
) -> FixResult:
    """Fix every finding that has a fix (safe ones; unsafe ones too with ``unsafe_fixes``) and
    that no ``# noqa`` covers, on its line or on any line the fix spans. Raises SyntaxError,
    or FixError when the result would not parse (as bytes in ``encoding``, the file's, when
    given) or would lose a comment. ``project``: the other files of a CLI run
    (``analysis.project``)."""
    findings = analyze_source(text, settings, project=project)
    if not findings:
        return FixResult(text)
    kept, _ = filter_noqa(findings, text, disable_noqa)
    kept = [f for f in kept if settings.reports(f.code)]  # select / ignore
    allowed = ("safe", "unsafe") if settings.unsafe_fixes else ("safe",)
    fixable = [f for f in kept if f.fix is not None and f.fix.applicability in allowed]
    unsafe = [f for f in kept if f.fix is not None and f.fix.applicability not in allowed]
    new_text, applied, notes, skipped = apply_edits(text, fixable, noqa_checker(text, disable_noqa))
    done = {id(f) for f in applied}
    remaining = [f for f in kept if id(f) not in done]
    if not applied:
        return FixResult(text, [], notes, remaining, unsafe, skipped)
    imports = sorted({f.fix.guard_import for f in applied if f.fix and f.fix.guard_import})
    added = []
    for dotted in imports:
        try:
            before, new_text = new_text, add_guard_import(new_text, dotted)
        except GuardImportError as error:
            raise FixError(f"{error}; nothing was changed") from None
        if new_text != before:
            added.append(dotted)
    verify_fixed(text, new_text, encoding)
    return FixResult(new_text, applied, notes, remaining, unsafe, skipped, added)
