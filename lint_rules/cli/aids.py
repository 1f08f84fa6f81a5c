"""Adoption aids of ``check``: ``--show-settings``, ``--show-files``, ``--add-noqa``, ``--watch``
and the ``explain PATH:LINE`` command. Each reuses what ``check`` does (the configuration, the
discovery, ``running.check_file``): none decides anything ``check`` would not."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from lint_rules.cli.discovery import Discovery
from lint_rules.cli.formats import PROG
from lint_rules.cli.options import Configuration
from lint_rules.settings import OPTIONS, RULES

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _toml(value: object) -> str:
    """``value`` as a TOML value: a basic string escaped as TOML reads it back (JSON's string
    escapes are a subset of TOML's), a boolean, or an array of strings."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) for v in value):
        return "{" + ", ".join(f'"{glob}" = {_toml(codes)}' for glob, codes in value) + "}"
    if isinstance(value, (tuple, list, frozenset)):
        items = sorted(value) if isinstance(value, frozenset) else value
        return "[" + ", ".join(json.dumps(str(item), ensure_ascii=False) for item in items) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def show_settings(config: Configuration, path: str) -> int:
    """The settings that apply to ``path``, one ``key = value  # from WHERE`` per line (TOML
    values), then the codes reported once every layer is applied."""
    settings = config.settings_of(path)
    sources = dict(settings.sources)
    print(f"# settings for {path}")
    print(f"# configuration file: {settings.config_file or 'none (defaults)'}")
    for option in OPTIONS:
        value = getattr(settings, option.field)
        where = sources.get(option.field, "default")
        shown = "{}" if option.key.endswith("per-file-ignores") and not value else _toml(value)
        print(f"{option.key} = {shown}  # {where}")
    reported = [code for code in RULES if settings.reports(code)]
    print(
        f"reported = {_toml(reported)}  # select, extend-select, ignore, extend-ignore"
        + (", per-file-ignores" if settings.file_ignored else "")
    )
    from lint_rules.analysis.root import NO_ROOT, root_of

    root = root_of(path, settings)
    shown = f"{root.path}  ({root.reason})" if root else NO_ROOT
    print(f"# project root: {shown}")
    return EXIT_CLEAN


def show_files(discovery: Discovery) -> int:
    """Every file ``check`` would read, one per line, in the order it reads them."""
    from lint_rules.cli.running import shown_path

    for path in discovery.files:
        print(shown_path(path))
    for path, reason in discovery.errors:
        print(f"{shown_path(path)}: error: {reason}", file=sys.stderr)
    return EXIT_ERROR if discovery.errors else EXIT_CLEAN


def add_noqa(
    findings: Sequence,
    quiet: bool,
    checked: dict[str, str] | None = None,
    settings_of: Callable[[str], Any] | None = None,
    job: Any = None,
) -> tuple[int, list[tuple[str, str]]]:
    """Write ``# noqa: CODE`` on the lines of ``findings`` (``check``'s, after selection), with
    the atomic write ``fix`` uses: (lines changed, errors). ``checked``: the digest of the text
    each file was checked in (``running.content_digest``); a file whose text differs now was
    edited since, its line numbers are stale, and it is reported, not written."""
    from lint_rules.cli.running import content_digest
    from lint_rules.fileio import SourceError, read_source, signals_held, write_source_atomic
    from lint_rules.noqa import add_noqa as with_noqa

    by_path: dict[str, list[tuple[int, str]]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append((f.line, f.code))
    total = 0
    errors = []
    for path, found in by_path.items():
        try:
            source = read_source(path)
            digest = (checked or {}).get(path)
            if digest is not None and settings_of is not None and job is not None:
                now = content_digest(settings_of(path), job.disable_noqa, source.raw)
                if now != digest:
                    raise SourceError(
                        path, "file changed on disk since it was checked; no `# noqa` added"
                    )
            text, changed = with_noqa(source.text, found)
            if changed:
                with signals_held():
                    write_source_atomic(source, text)
        except SourceError as error:
            errors.append((path, error.reason))
            continue
        total += changed
        if changed and not quiet:
            print(
                f"added `# noqa` to {path} ({changed} line{'' if changed == 1 else 's'})",
                file=sys.stderr,
            )
    return total, errors


def watch(
    run: Callable[[], int],
    paths: Sequence[str],
    stop_after: int | None = None,
    stop_event: Any = None,
) -> int:
    """``check --watch``: run, then run again each time a Python file or a ``pyproject.toml``
    under ``paths`` changes, until Ctrl-C (``stop_after`` re-runs or ``stop_event`` set: for
    tests). Uses ``watchfiles`` (``pip install te-microbatch-lint[watch]``), imported only
    here."""
    try:
        from watchfiles import watch as changes
    except ImportError:
        print(
            f"{PROG}: error: --watch needs the watchfiles package "
            "(pip install 'te-microbatch-lint[watch]')",
            file=sys.stderr,
        )
        return EXIT_ERROR

    def relevant(_change: object, path: str) -> bool:
        return path.endswith((".py", "pyproject.toml"))

    status = run()
    roots = [p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p)) for p in paths]
    print(f"{PROG}: watching for changes (Ctrl-C stops)", file=sys.stderr, flush=True)
    runs = 0
    marks = _identities(roots)
    while True:
        # A watch lives on the directories it started on: one deleted and made again (a branch
        # switch, a regenerated folder) is a new directory, so the roots are compared every
        # second and the watch started again on the new ones (a run first: files may have
        # changed in between).
        if not _wait_for(roots, stop_event):
            return status
        if marks != _identities(roots):
            marks = _identities(roots)
            runs += 1
            print(f"{PROG}: change seen, checking again", file=sys.stderr, flush=True)
            status = run()
            if stop_after is not None and runs >= stop_after:
                return status
        seen = changes(
            *roots,
            watch_filter=relevant,
            raise_interrupt=False,
            stop_event=stop_event,
            rust_timeout=1000,
            yield_on_timeout=True,
        )
        moved = False
        for found in seen:
            if marks != _identities(roots):
                moved = True
                break
            if not found:
                continue
            runs += 1
            print(f"{PROG}: change seen, checking again", file=sys.stderr, flush=True)
            status = run()
            if stop_after is not None and runs >= stop_after:
                return status
        if not moved:
            return status  # Ctrl-C, or ``stop_event``


def _identities(roots: Sequence[str]) -> list[tuple[int, int] | None]:
    out: list[tuple[int, int] | None] = []
    for root in roots:
        try:
            info = os.stat(root)
        except OSError:
            out.append(None)
            continue
        out.append((info.st_dev, info.st_ino))
    return out


def _wait_for(roots: Sequence[str], stop_event: Any) -> bool:
    """Wait until every root exists again (False: stopped first, by Ctrl-C or the event)."""
    import time

    try:
        while not all(os.path.isdir(root) for root in roots):
            if stop_event is not None and stop_event.is_set():
                return False
            time.sleep(0.5)
    except KeyboardInterrupt:
        return False
    return True


def project_root(path: str) -> str:
    """The directory ``explain`` checks for ``path``: the repository root above it (``.git``),
    else the directory of the configuration file that applies, else the directory above the
    file's top package (the file's directory when it is in no package)."""
    from lint_rules.cli.discovery import repository_root
    from lint_rules.settings import find_pyproject

    folder = os.path.dirname(os.path.abspath(path))
    root = repository_root(folder)
    if root:
        return root
    pyproject = find_pyproject(folder)  # type: ignore[arg-type]
    if pyproject is not None:
        return str(pyproject.parent)
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


def parse_place(place: str) -> tuple[str, int]:
    """``PATH:LINE``, or ``PATH:LINE:COL`` as flake8 and ruff print a finding (the column is
    not needed: every finding on the line is explained)."""
    path, sep, line = place.rpartition(":")
    if sep and line.isdigit() and path:
        head, sep2, first = path.rpartition(":")
        if sep2 and first.isdigit() and head and not os.path.isfile(path):
            path, line = head, first  # PATH:LINE:COL
    if not sep or not line.isdigit() or not path:
        raise ValueError(f"expected PATH:LINE (or PATH:LINE:COL), not {place!r}")
    return path, int(line)


def explain_text(findings: Sequence, path: str, line: int) -> str:
    """Each finding at ``line`` and every step of its evidence, as ``check`` prints them, then
    the rule's name and where it is explained."""
    here = [f for f in findings if os.path.samefile(f.path, path) and f.line == line]
    if not here:
        return ""
    out = []
    for f in here:
        out.append(f"{path}:{f.line}:{f.column}: {f.message}")
        rule = RULES.get(f.code)
        if f.evidence:
            out.append("  the flag's life:")
            for number, (where, step_line, _, text) in enumerate(f.evidence, 1):
                place = f"{where}:{step_line}: " if step_line else ""
                out.append(f"  {number}. {place}{text}")
        else:
            out.append("  (no evidence: the value is judged at this call alone)")
        if rule is not None:
            out.append(f"  rule: {rule.code} {rule.name} (`{PROG} rule {rule.code}`)")
    return "\n".join(out) + "\n"


def rule_codes(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(codes, unknown) for rule codes or names (``TEM001``, ``untracked-flag``)."""
    by_name = {rule.name: code for code, rule in RULES.items()}
    codes: list[str] = []
    unknown: list[str] = []
    for name in names:
        code = name.upper() if name.upper() in RULES else by_name.get(name.lower())
        (codes if code else unknown).append(code or name)
    return codes, unknown
