"""The one entry point of every face: judge files with their whole project.

A face (the CLI's ``check FILE``/``fix FILE``, the pre-commit hooks, flake8, the libcst runner,
stdin with ``--stdin-filename``) names files; ``ProjectJudge`` finds each file's project
(``root.find_root``), lists the project's files (its excludes applied), and runs the run over
the project (``run.run_crossfile``) with the on-disk index (``store.ResultCache``): the named
file gets the verdict ``check ROOT`` gives it, whichever files were named. What a face calls::

    judge = ProjectJudge(settings_of, cache=open_cache(False, None))
    outcomes = judge.outcomes(["pkg/layers.py"], check_file, Job())  # one per named file
    fixed = judge.outcomes(["pkg/layers.py"], fix_file, Job(mode="stdout"))  # its fixed text
    judge.save()                        # the index, written atomically

A file is judged alone (its verdicts provisional, ``why_alone`` says why) when it has no
project root, when the project excludes it, when the project holds more than
``MAX_PROJECT_FILES`` files, or with ``isolated`` (nothing around the file is read).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lint_rules.analysis.filework import Work, check_file
from lint_rules.analysis.plan import plan_files
from lint_rules.analysis.records import Job, Outcome
from lint_rules.analysis.root import (  # noqa: F401 - MAX_PROJECT_FILES: re-exported
    MAX_PROJECT_FILES,
    NO_ROOT,
    Root,
    project_files,
    root_of,
    shown_root,
)
from lint_rules.analysis.run import Parse, in_process, run_crossfile
from lint_rules.settings import Settings
from lint_rules.slotted import replace

Progress = Callable[[int], Callable[[], None]]
"""``progress(total)``: the function to call as each of ``total`` files is done."""

Excludes = Callable[..., Any]
"""``excludes(path, is_dir=False)``: the exclude patterns that govern ``path``
(``cli.discovery.discover``'s)."""


class ProjectJudge:
    """Judges named files with their projects (``settings_of``: each file's settings;
    ``excludes``: the exclude patterns of a path, else the settings' own ``exclude``)."""

    def __init__(
        self,
        settings_of: Callable[[str], Settings],
        excludes: Excludes | None = None,
        cache: Any = None,
        isolated: bool = False,
        members: dict[str, list[str]] | None = None,
    ) -> None:
        self.settings_of = settings_of
        self.excludes = excludes or self._settings_excludes
        self.cache = cache
        self.isolated = isolated
        self._members: dict[str, list[str] | None] = dict(members or {})
        """Each project's files by its root (``members``: those listed already)."""
        self._done: dict[tuple[str, Job], dict[int | None, Outcome]] = {}
        """The outcomes of a project's run, kept while nothing is written (flake8 and the
        libcst runner name the files of a project one by one)."""
        self._views: dict[str, Callable[[str, Settings], Any]] = {}
        self._places: dict[str, dict[str, int]] = {}
        self._real_places: dict[str, dict[str, int]] = {}
        self.alone: dict[str, str] = {}
        """Why each named file judged alone was (by path as named)."""
        self._roots: dict[tuple[str, str, str | None, str | None], Root | None] = {}

    def _settings_excludes(self, path: str, is_dir: bool = False) -> tuple:
        from lint_rules.cli.discovery import ExcludePattern

        folder = os.path.dirname(os.path.abspath(path)) if is_dir else path
        settings = self.settings_of(folder)
        anchor = settings.root or os.getcwd()
        return tuple(ExcludePattern(glob, anchor) for glob in settings.excludes)

    def root_of(self, path: str) -> Root | None:
        """``root.root_of``, found once per folder and project-root setting for this judge's
        run (a project's files share their folders: the walk up is not repeated per file)."""
        settings = self.settings_of(path)
        full = os.path.abspath(path)
        if os.path.isdir(full):
            return root_of(path, settings)
        given = dict(settings.sources).get("project_root")
        key = (os.path.dirname(full), settings.project_root, settings.config_file, given)
        if key not in self._roots:
            self._roots[key] = root_of(path, settings)
        return self._roots[key]

    def members(self, root: str) -> list[str] | None:
        """The project's Python files (its excludes applied), spelled relative to the current
        directory when below it; None when the project cannot be listed or is too large."""
        if root not in self._members:
            self._members[root] = project_files(root, self.excludes)
        return self._members[root]

    def why_alone(self, path: str) -> str | None:
        """Why ``path`` is judged alone, or None when it is judged with its project."""
        if self.isolated:
            return "judged alone: --isolated reads nothing around the file"
        root = self.root_of(path)
        if root is None:
            return NO_ROOT
        files = self.members(root.path)
        if files is None:
            return f"judged alone: the project at {root.path} cannot be read or is too large"
        if self._place(root.path, path) is None:
            return f"judged alone: the project at {root.path} ({root.reason}) excludes it"
        return None

    def outcomes(
        self,
        paths: Sequence[str],
        work: Work = check_file,
        job: Job | None = None,
        parse: Parse = in_process,
        workers: int = 1,
        progress: Progress | None = None,
    ) -> list[Outcome]:
        """One outcome per named file, in order: each judged with its project (or alone).
        ``progress(total)``: what to call as each of ``total`` files read is done."""
        return list(self.stream(paths, work, job, parse, workers, progress))

    def stream(
        self,
        paths: Sequence[str],
        work: Work = check_file,
        job: Job | None = None,
        parse: Parse = in_process,
        workers: int = 1,
        progress: Progress | None = None,
    ) -> Iterator[Outcome]:
        """``outcomes``, each given as soon as it and those before it are known (files of
        one project named in its order: a file that cannot depend on the others comes
        before the project's index has settled)."""
        job = job or Job()
        results: dict[int, Outcome] = {}
        groups: dict[str, list[int]] = {}
        alone = []
        for at, path in enumerate(paths):
            why = self.why_alone(path)
            found = self.root_of(path)
            if why is None and found is not None:
                groups.setdefault(found.path, []).append(at)
            else:
                self.alone[path] = why or NO_ROOT
                alone.append(at)
        if alone:
            cache = self.cache if job.mode == "check" else None
            advance = progress(len(alone)) if progress else None
            plan = plan_files(job, [paths[a] for a in alone], self.settings_of, cache, advance)
            parsed = parse(work, job, plan.to_parse, workers)
            for at, done in zip(alone, plan.done):
                results[at] = done if done is not None else next(parsed)
                if done is None and advance is not None:
                    advance()
        given = 0
        for root, places in groups.items():
            table = self._done.get((root, job))
            spots = [self._place(root, paths[a]) for a in places]
            if table is not None and all(spot in table for spot in spots):
                run: Iterator[tuple[int, Outcome]] = iter(table.items())  # type: ignore[arg-type]
            else:
                named = [paths[a] for a in places]
                run = self._judge(root, named, work, job, parse, workers, progress)
            wanted: dict[int | None, list[int]] = {}
            for at, spot in zip(places, spots):
                wanted.setdefault(spot, []).append(at)
            for spot, outcome in run:
                for at in wanted.get(spot, ()):
                    results[at] = _named(outcome, paths[at])
                while given in results:  # in order, as soon as known
                    yield results.pop(given)
                    given += 1
        for at in range(given, len(paths)):
            yield results.pop(at) if at in results else Outcome(paths[at])

    def _judge(
        self,
        root: str,
        named: list[str],
        work: Work,
        job: Job,
        parse: Parse,
        workers: int,
        progress: Progress | None = None,
    ) -> Iterator[tuple[int, Outcome]]:
        """The outcomes of a run over the project at ``root``, by place: of every file when
        nothing is written (kept for the next named files of the project), else of ``named``
        only (the others are read for their facts, never written). Processes sharing the
        index run a project one at a time, each reading what the previous one wrote
        (``store.ResultCache.run_once``)."""
        once = getattr(self.cache, "run_once", None)
        with once() if once is not None else contextlib.nullcontext():
            yield from self._run(root, named, work, job, parse, workers, progress)

    def _run(
        self,
        root: str,
        named: list[str],
        work: Work,
        job: Job,
        parse: Parse,
        workers: int,
        progress: Progress | None = None,
    ) -> Iterator[tuple[int, Outcome]]:
        files = list(self.members(root) or [])
        for path in named:  # the files named go by the names they were given
            at = self._place(root, path)
            if at is not None:
                files[at] = path
        keep = job.mode in ("check", "stdout")
        spots = (self._place(root, p) for p in named)
        only = None if keep else {spot for spot in spots if spot is not None}
        advance = progress(len(files)) if progress else None
        plan = plan_files(job, files, self.settings_of, self.cache, advance, crossfile=True)
        shown = shown_root(root)
        settled: dict[str, Any] = {}
        stream = run_crossfile(work, job, plan, workers, [shown], advance, parse, only, settled)
        table: dict[int | None, Outcome] = {}
        for n, outcome in enumerate(stream):
            if self.cache is not None and job.mode == "check":
                self.cache.put(outcome)
            if only is None or n in only:
                table[n] = outcome
                yield n, outcome
        if keep:
            self._done[(root, job)] = table
        if "view" in settled:
            self._views[root] = settled["view"]

    def view(self, path: str) -> Any:
        """The ``analysis.Project`` a text standing for ``path`` is judged with (stdin with
        ``--stdin-filename``): its project's index and the facts of the project's other files.
        None when ``path`` is judged alone (``why_alone``)."""
        why = self.why_alone(path)
        found = self.root_of(path)
        if why is not None or found is None:
            if not os.path.exists(path) and found is not None and why and "excludes" in why:
                why = None  # a new file, not on disk yet: judged with its project
            else:
                self.alone[path] = why or NO_ROOT
                return None
        root = found.path
        if root not in self._views:
            for _ in self._judge(root, [], check_file, Job(), in_process, 1):
                pass
        view = self._views.get(root)
        if view is None:
            return None
        files = self.members(root) or []
        at = self._place(root, path)
        spelled = files[at] if at is not None else os.path.normpath(path)
        return view(spelled, self.settings_of(path))

    def _place(self, root: str, path: str) -> int | None:
        """Where ``path`` is in the project's files (by its absolute path, else by the file it
        resolves to), or None."""
        places = self._places.get(root)
        if places is None:
            files = self.members(root) or []
            places = self._places[root] = {_key(f): n for n, f in enumerate(files)}
        at = places.get(_key(path))
        if at is None:
            real = self._real_places.get(root)
            if real is None:
                files = self.members(root) or []
                real = self._real_places[root] = {_real(f): n for n, f in enumerate(files)}
            at = real.get(_real(path))
        return at

    def save(self) -> None:
        if self.cache is not None:
            self.cache.save()


def _named(outcome: Outcome, path: str) -> Outcome:
    """``outcome`` under the name the face gave its file."""
    if outcome.path == path:
        return outcome
    return replace(outcome, path=path, findings=tuple(f.moved(path) for f in outcome.findings))


def _key(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _below(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
