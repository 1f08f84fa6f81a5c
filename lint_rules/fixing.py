"""Apply the core's fixes to source text: exact edits, everything else byte-identical.

Edits are applied to the text in place (positions come from ``ast``), so blank lines, quoting,
trailing commas, line breaks inside calls, the encoding cookie and CRLF newlines are untouched
by construction. Comments inside a replaced value are kept (after the new value, then on their
own lines). A fix is applied only when it is ``safe`` or unsafe fixes were asked for, and never
when a ``# noqa`` for its code sits on any line its edits span. libcst is imported only when an
import must be added (the ``guard`` strategy), and the result is re-parsed before it is returned.
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


def _runtime_names(tree: ast.Module) -> set[str]:
    """Names bound when the module runs: module-level statements, through ``if``/``try``/
    ``with`` blocks, but not under ``if TYPE_CHECKING:`` and not inside functions or classes."""
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".", 1)[0])
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names.update(n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                todo.extend(stmt.body)
            todo.extend(stmt.orelse)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            todo.extend(stmt.body)
            todo.extend(stmt.orelse)
            todo.extend(stmt.finalbody)
            for handler in stmt.handlers:
                todo.extend(handler.body)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            todo.extend(stmt.body)
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


LIBCST_DEPTH = 500
"""Trees deeper than this get the import without libcst (whose parser recurses natively)."""


def _deeper_than(tree: ast.AST, limit: int) -> bool:
    todo = [(tree, 0)]
    while todo:
        node, depth = todo.pop()
        if depth > limit:
            return True
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _insert_import(text: str, module: ast.Module, line: str) -> str:
    """``line`` after the first block of imports (after the docstring when there is none)."""
    body = module.body
    index = (
        1
        if body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
        else 0
    )
    while (
        index < len(body)
        and isinstance(body[index], ast.ImportFrom)
        and (
            body[index].module == "__future__"  # type: ignore[union-attr]
        )
    ):
        index += 1
    after = body[index - 1].end_lineno if index else 0
    imports = index
    while imports < len(body) and isinstance(body[imports], (ast.Import, ast.ImportFrom)):
        after = body[imports].end_lineno
        imports += 1
    lines = split_lines(text)
    newline = next(
        (ln[len(ln.rstrip("\r\n")) :] for ln in lines if ln.endswith(("\n", "\r"))), "\n"
    )
    if after and after <= len(lines) and not lines[after - 1].endswith(("\n", "\r")):
        lines[after - 1] += newline
    lines.insert(after or 0, line + newline)
    return "".join(lines)


def add_guard_import(text: str, dotted: str) -> str:
    """Add ``from module import name`` unless ``name`` is bound when the module runs.

    Where the guard's top-level package is imported only inside ``try: ... except
    ImportError`` (an optional dependency), the import gets its own ``try`` block right after
    that one, with a fallback guard that returns False (None is passed): inside the first block
    its ImportError would run that block's ``except`` branch. Otherwise it joins an existing
    ``from module import ...`` in the order its names already follow, or libcst's
    AddImportsVisitor puts it after the last import of the first import block.
    """
    module_name, _, name = dotted.rpartition(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = ast.parse(text)
    if name in _runtime_names(module):
        return text
    line = f"from {module_name} import {name}"
    optional = _optional_import_block(text, module, module_name.split(".", 1)[0])
    if optional is not None:
        after, indent = optional
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
    if after is not None:
        return _insert_line(text, after, (line,))
    if _deeper_than(module, LIBCST_DEPTH):  # libcst's parser would exhaust the C stack
        return _insert_import(text, module, line)
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    tree = cst.parse_module(text)
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, module_name, name)
    return AddImportsVisitor(context).transform_module(tree).code


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
            indent = lines[last.lineno - 1][: last.col_offset]
            if last.lineno > stmt.lineno and not indent.strip(" \t"):
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
    own_line = (
        node.lineno != node.end_lineno
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


@deep
def fix_source(
    text: str,
    settings: Settings = DEFAULT_SETTINGS,
    disable_noqa: bool = False,
    project: Project | None = None,
) -> FixResult:
    """Fix every finding that has a fix (safe ones; unsafe ones too with ``unsafe_fixes``) and
    that no ``# noqa`` covers, on its line or on any line the fix spans. Raises SyntaxError.
    ``project``: the other files of a CLI run (``analysis.project``)."""
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
        before, new_text = new_text, add_guard_import(new_text, dotted)
        if new_text != before:
            added.append(dotted)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(new_text)
    except SyntaxError as error:
        raise FixError(f"the fixed text does not parse ({error}); nothing was changed") from error
    return FixResult(new_text, applied, notes, remaining, unsafe, skipped, added)
