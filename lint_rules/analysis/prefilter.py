"""Every text-level shortcut the analysis takes for speed, behind one switch.

The byte prefilter (``Gates.mentions_flag``) says which files can have a finding at all, from
their text alone: every other file costs a search or two and is never parsed. ``_TE_IMPORT``
and ``_TE_CLASS_WORD`` are the specification; the ``str.find`` searches are what runs.

Bytes are searched with ``find``, never ``in``: ``bytes.__contains__`` first takes its operand
for an integer (``65 in b"A"``) and formats the ``TypeError`` it then drops, a thousand
instructions and more for each search (three a file on a tree the prefilter rules out).

The switch is a value passed into the analysis and the run, never a module global: ``ON``
(the default: every shortcut taken) or ``OFF`` (each gives its permissive answer), an
instance of ``Gates`` or of ``Open``. A face, a run or a test hands it to ``analyze_source``
/ ``analyze_tree`` (``gates=``) or in its ``records.Job``; each piece of the analysis asks the
object it was given. ``tests/test_gates.py`` runs the catalogue and the lifecycle packages
with ``OFF`` and gets the same findings.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence

from lint_rules.te import FLAG, TE_MODULE_CLASSES, TE_ROOT

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where nothing passes)
if TYPE_CHECKING:
    import ast
    from typing import Any, AnyStr

_SEPARATED = r"(?:[ \t\f]|\\(?:\r\n|\r|\n))"
_TE_IMPORT = (
    rf"(?:(?<![\w])(?:import|from){_SEPARATED}+|,{_SEPARATED}*|\([\"'])transformer_engine\b"
)
"""(A pattern, compiled only by the test that holds the searches to it: compiling the patterns
of this module was a seventh of its imports' instructions.) ``transformer_engine`` named where
an import names a module: after ``import`` or ``from``, or after a comma (``import torch,
transformer_engine``), spaces, tabs, form feeds and backslash-continued line breaks between (so
also ``try: import ...``, ``x; import ...``). A superset of every import of TE (a comma in a
call matches too), whatever the line endings; the string a call opens with
(``safe_import_from("transformer_engine.pytorch", "Linear")``) counts too, for optional-import
helpers."""
_TE_CLASS_WORD = r"(?<![\w])(?:{})\b".format("|".join(sorted(TE_MODULE_CLASSES)))
"""A TE class that takes the flag, as a word (not ``TELinear`` or ``ColumnParallelLinear``; but
``nn.Linear`` too: ``nn`` may be any module, TE's included)."""


def mentions_flag(text: str) -> bool:
    """The byte prefilter (``Gates.mentions_flag``): only files that spell the flag, or that
    import TE and name a class that takes it (a positional flag may be named anything), can
    have a finding.

    Every other file costs a byte search or two and is never parsed.
    """
    return FLAG in text or te_file(text)


_FLAG_BYTES, _TE_ROOT_BYTES = FLAG.encode(), TE_ROOT.encode()


def rules_out_bytes(raw: bytes) -> bool:
    """Whether ``mentions_flag`` and ``imports_te`` are False for the text that UTF-8 bytes
    decode to, from the bytes alone: neither the flag nor TE's package name is in them (the
    first pass's quick look, ``analysis.skim``)."""
    return raw.find(_FLAG_BYTES) < 0 and raw.find(_TE_ROOT_BYTES) < 0


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # what ``\w`` matches in a str pattern


def words(text: str, word: str) -> Iterator[int]:
    """Where ``word`` stands in ``text`` as a word (what ``\bword\b`` finds), by ``str.find``
    (a regex with look-behinds tries every position: ten times slower here)."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if not (at and _is_word(text[at - 1])) and not (end < len(text) and _is_word(text[end])):
            yield at
        at = text.find(word, at + 1)


def _imports_te(text: str) -> bool:
    """``_TE_IMPORT.search(text)``, by ``str.find`` (the regex costs ~0.1 ms per 10 KB)."""
    return any(_after_import(text, at) for at in words(text, TE_ROOT))


def _after_import(text: str, at: int) -> bool:
    """Whether what comes before ``at`` is ``import`` or ``from`` and a separator, or a comma
    (separators: spaces, tabs, form feeds, backslash-continued line breaks)."""
    if at >= 2 and text[at - 1] in "\"'" and text[at - 2] == "(":
        return True  # `safe_import_from("transformer_engine.pytorch", ...)`: an optional import
    start = at
    while True:
        if start and text[start - 1] in " \t\f":
            start -= 1
        elif text.endswith("\\\r\n", 0, start):
            start -= 3
        elif text.endswith("\\\n", 0, start) or text.endswith("\\\r", 0, start):
            start -= 2
        else:
            break
    if start and text[start - 1] == ",":
        return True
    if start == at:
        return False  # a keyword must be followed by a separator
    for keyword in ("import", "from"):
        before = start - len(keyword)
        if text.endswith(keyword, 0, start) and not (before and _is_word(text[before - 1])):
            return True
    return False


def imports_te(text: str) -> bool:
    """Whether the text may import TE (``_TE_IMPORT``): a file that may define a TE subclass
    or factory without the index (a run over several files analyses these first)."""
    return TE_ROOT in text and _imports_te(text)


def _names_te_class(text: str) -> bool:
    """``_TE_CLASS_WORD.search(text)``, by ``str.find`` (~45 ms by the regex on megatron-core's
    files that import TE, ~5 ms so)."""
    return any(next(words(text, word), -1) >= 0 for word in TE_MODULE_CLASSES)


def te_file(text: str) -> bool:
    """Whether a positional flag can reach a TE module in this file: it imports TE and names a
    class that takes the flag (resolution stays in the file, so a TE module called here is
    constructed, declared or subclassed here by such a name)."""
    return TE_ROOT in text and _imports_te(text) and _names_te_class(text)


STATE_WORDS = ("microbatch", "micro_batch")
"""A run over several files shares the writes and calls of the statements whose lines spell
one of these (any case): ``self.is_first_microbatch = True``, ``set_is_first_microbatch()``,
``decoder.current_microbatch = i``, ``_IS_FIRST_MICROBATCH = v``. The file's own verdicts read
every statement of the file."""


def may_declare_global(text: str) -> bool:
    """Whether a function of the file may declare a ``global`` (it spells the word)."""
    return "global" in text


def state_lines(text: str) -> list[int]:
    """The lines (1-based, ascending) whose statements a run shares as lifecycle facts."""
    if "\r" not in text:  # lowered as UTF-8 bytes: the same answer (``mentions_state_bytes``)
        return hit_lines(_utf8(text).lower(), _STATE_BYTES)
    lowered = text.lower()
    if "\r" in lowered:  # lines as ``ast`` numbers them (a lone CR ends one too)
        from lint_rules.findings import split_lines

        return [
            n
            for n, line in enumerate(split_lines(lowered), start=1)
            if any(word in line for word in STATE_WORDS)
        ]
    return hit_lines(lowered, STATE_WORDS)


def hit_lines(text: AnyStr, needles: Sequence[AnyStr]) -> list[int]:
    """The lines (1-based, ascending, each once) of a text with no carriage return that hold
    one of ``needles``, by ``find`` (line numbers counted once through the text); a ``str``
    and ``str`` needles, or ``bytes`` and ``bytes`` needles."""
    newline: Any = b"\n" if isinstance(text, bytes) else "\n"
    hits: list[int] = []
    for needle in needles:
        at = text.find(needle)
        while at >= 0:
            hits.append(at)
            at = text.find(needle, at + 1)
    numbers: list[int] = []
    line, counted = 1, 0
    for at in sorted(hits):
        line += text.count(newline, counted, at)
        counted = at
        if not numbers or numbers[-1] != line:
            numbers.append(line)
    return numbers


def interesting_lines(text: str, lines: Callable[[], list[str]], te_file: bool) -> list[int]:
    """The lines (as ``ast`` numbers them, ascending) whose statements can hold a call a rule
    looks at, from the text alone; ``lines()`` splits the text when that is needed.

    A call passing the flag by keyword spells it, a splat spells ``**``, and a call with two
    positional arguments (a positional flag, only looked for in files that import TE) has a
    comma: a simple statement whose lines have none of these is not walked at all. Where only
    the rare spellings count, they are searched in the whole text, not line by line.
    """
    if te_file:
        return [
            n for n, line in enumerate(lines(), 1) if "," in line or FLAG in line or "**" in line
        ]
    if "\r" in text:
        return [n for n, line in enumerate(lines(), 1) if FLAG in line or "**" in line]
    return hit_lines(text, (FLAG, "**"))


def mentions_state(text: str) -> bool:
    """Whether a run over several files may share lifecycle facts of this file: some line
    spells a state word (``state_lines``)."""
    return mentions_state_bytes(_utf8(text))


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates too: encoding and lowering the bytes costs a quarter
    of ``str.lower`` (which maps every character through the Unicode tables)."""
    return text.encode("utf-8", "surrogatepass")


def spells_any(text: str | None, names: Iterable[str]) -> bool:
    """Whether ``text`` spells one of ``names`` (None: no text, so it may)."""
    return text is None or any(name in text for name in names)


_STATE_BYTES = tuple(word.encode() for word in STATE_WORDS)


def mentions_state_bytes(raw: bytes) -> bool:
    """``mentions_state`` of the text that valid UTF-8 bytes decode to, from the bytes lowered
    (ASCII letters only: 2.5x faster than lowering the text). The same answer: of the
    characters outside ASCII only U+0130 and U+212A lower to something with an ASCII letter
    (``i`` and a combining dot; ``k``), never to one a state word can use
    (``tests/test_skim.py``), and an ASCII byte of UTF-8 is always that character."""
    lowered = raw.lower()
    return any(lowered.find(word) >= 0 for word in _STATE_BYTES)


def spans_a_mark(marks: list[int] | None, node: ast.stmt) -> bool:
    """Whether one of ``marks`` (ascending line numbers; None: every line) falls within the
    lines of a statement, its decorators included."""
    if marks is None:
        return True
    decorators = getattr(node, "decorator_list", ())
    first = decorators[0].lineno if decorators else node.lineno
    at = bisect_left(marks, first)
    return at < len(marks) and marks[at] <= (node.end_lineno or node.lineno)


def lines_spelling(data: bytes, needle: bytes) -> list[int] | None:
    """The lines (as ``ast`` numbers them, ascending) of a file's bytes where ``needle``
    occurs: only the statements spanning them can read a name (``builds``). None when a lone
    carriage return may end a line: every statement is walked."""
    if data.find(b"\r") >= 0:
        return None
    lines, at = [], data.find(needle)
    while at != -1:
        lines.append(data.count(b"\n", 0, at) + 1)
        at = data.find(needle, at + 1)
    return lines


_HANDED = (
    r"(?:apply|register_\w*hook)\s*\(\s*(?:(?:functools\s*\.\s*)?partial\s*\(\s*)?"
    r"(?:\w+\s*\.\s*)*(\w+)"
)
"""(A pattern, compiled when first asked: ``handed_names``.) A function handed to ``.apply()``
or a hook registration by name (``model.apply(fn)``, ``register_forward_pre_hook(self._hook)``,
``apply(partial(fn, ...))``)."""


def handed_names(text: str) -> frozenset[str]:
    """The names a file hands to ``apply``/a hook registration, from its text (with the
    gates off the tree is read instead, ``treefacts.TreeFacts.applied``). The pattern is
    tried only where ``apply(`` or ``hook(`` may start (``str.find``)."""
    names: set[str] = set()
    handed = re.compile(_HANDED)  # (``re`` keeps it compiled)
    for word in ("apply", "register_"):
        at = text.find(word)
        while at >= 0:
            if not (at and _is_word(text[at - 1])):
                found = handed.match(text, at)
                if found is not None:
                    names.add(found.group(1))
            at = text.find(word, at + 1)
    return frozenset(names)


def lines_of(text: str, words: Sequence[str]) -> list[int]:
    """The lines (as ``ast`` numbers them, ascending) that spell one of ``words``: the only
    statements that can call or write them."""
    if "\r" in text:
        from lint_rules.findings import split_lines

        return [
            n for n, line in enumerate(split_lines(text), start=1) if any(w in line for w in words)
        ]
    return hit_lines(text, words)


def spelled_in(data: bytes, names: Sequence[str]) -> list[str]:
    """The ``names`` a file's bytes spell (ASCII names, searched without decoding)."""
    return [name for name in names if data.find(name.encode("ascii", "ignore")) >= 0]


def lines_naming(lines: Sequence[str], names: Iterable[str]) -> list[int]:
    """The lines (numbered from 1, ascending) of ``lines`` that spell one of ``names``."""
    return [n for n, line in enumerate(lines, start=1) if any(name in line for name in names)]


def _lines_naming(
    text: str | None, lines: Callable[[], list[str]], names: Iterable[str]
) -> list[int]:
    """``lines_naming``: by ``str.find`` over ``text`` where it has no carriage return (a
    search per name, not a test per line and name), else line by line."""
    names = tuple(names)
    if text is not None and "\r" not in text and all(names):
        return hit_lines(text, names)
    return lines_naming(lines(), names)


def may_nest_class(text: str) -> bool:
    """Whether a ``class`` statement may stand below the top of the module: some line starts
    with an indented ``class`` (a ``class`` statement always starts its line)."""
    if "\r" in text or "\\\n" in text:
        return True  # lines that end in a carriage return alone, or continued: not searched here
    at = text.find("class")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        if at > start and not text[start:at].strip(" \t\f"):
            return True
        at = text.find("class", at + 5)
    return False


def spelled_only_as_call(source: str | None, name: str) -> bool:
    """Every occurrence of ``name`` as a word in ``source`` is ``.name(``."""
    if source is None or not source.isascii():
        return False  # an identifier may be spelled with characters that normalise to it
    return all(
        source[at - 1 : at] == "." and source.startswith("(", at + len(name))
        for at in words(source, name)
    )


def walrus_lines(text: str) -> list[int]:
    """The lines (as ``ast`` numbers them, ascending) that spell ``:=``: only a function that
    spans one can bind a name in an expression (a string may spell it too: only a maybe)."""
    if ":=" not in text:
        return []
    if "\r" not in text:
        return hit_lines(text, (":=",))
    from lint_rules.findings import ast_lines

    return [n for n, line in enumerate(ast_lines(text), start=1) if ":=" in line]


_NO_POSITIONAL = 1 << 30
"""``Walker``'s ``positional`` where no call can pass the flag positionally (it does not
import TE): only keyword flags and splats are looked at."""


class Gates:
    """The switch, on: every text-level shortcut is taken. Each method is one shortcut (what
    a piece of the analysis asks of a text), and ``Open`` overrides each with its permissive
    answer; nothing outside this module asks whether the gates are on. Pass ``ON`` or
    ``OFF``."""

    on = True
    caches = True
    """Whether a run may read and write the project index and the result cache (what they
    keep was found with the gates on)."""

    def __reduce__(self) -> str:
        return "ON" if self.on else "OFF"  # one object per setting, in a worker too

    def __repr__(self) -> str:
        return f"prefilter.{self.__reduce__()}"

    def mentions_flag(self, text: str) -> bool:
        """The byte prefilter: whether a file can have a finding at all (``mentions_flag``)."""
        return mentions_flag(text)

    def te_file(self, text: str) -> bool:
        """Whether a positional flag can reach a TE module in this file (``te_file``)."""
        return te_file(text)

    def interesting_lines(
        self, text: str, lines: Callable[[], list[str]], te_file: bool
    ) -> list[int] | None:
        """The lines whose statements the walk visits (``interesting_lines``); None: all."""
        return interesting_lines(text, lines, te_file)

    def positional(self, te_file: bool) -> int | None:
        """How many positional arguments a call the walk hands over has at least (a
        positional flag is looked for where TE is imported); None: every call."""
        return 2 if te_file else _NO_POSITIONAL

    def guesses_callees(self) -> bool:
        """Whether a call may be told no TE module from its name, without resolving it
        (``sites.may_be_module``)."""
        return True

    def spelled_twice(self, text: str, names: Iterable[str]) -> bool:
        """Whether a function's text spells one of ``names`` more than once: a callee named
        once is called once (``checks.SharedModule``)."""
        return any(text.count(name) > 1 for name in names)

    def lines_naming(
        self, lines: Callable[[], list[str]], names: Iterable[str], text: str | None = None
    ) -> list[int] | None:
        """The lines (ascending) that spell one of ``names`` (``lines()``: the text's lines
        as ``ast`` numbers them; ``text``: the text, searched whole where it can be): the only
        statements that can use them; None: every one."""
        return _lines_naming(text, lines, names)

    def may_nest_class(self, text: str) -> bool:
        """Whether a class may be defined below the module's top level (``may_nest_class``)."""
        return may_nest_class(text)

    def imports_te(self, text: str) -> bool:
        """Whether the text may import TE (``imports_te``): analysed first in a run."""
        return imports_te(text)

    def may_import(self, text: str | bytes) -> bool:
        """Whether a text (or its UTF-8 bytes) may hold an import: it spells ``import``."""
        return text.find("import" if isinstance(text, str) else b"import") >= 0  # type: ignore[arg-type]

    def only_called(self, text: str | None, name: str) -> bool:
        """Whether the text spells ``name`` only as ``.name(`` (``spelled_only_as_call``):
        then no class of the file stores a value under it; False: read the classes."""
        return spelled_only_as_call(text, name)

    def walrus_lines(self, text: str) -> list[int] | None:
        """The lines that spell ``:=`` (``walrus_lines``); None: every function may bind a
        name in an expression."""
        return walrus_lines(text)

    def spells(self, data: bytes, needle: bytes) -> bool | None:
        """Whether a file's bytes spell ``needle`` (a byte search: the files ``builds``
        parses, and counts against its budget); None: parse it and see whether it reads it."""
        return data.find(needle) >= 0

    def may_declare_global(self, text: str) -> bool:
        """Whether a function of the file may declare a ``global``."""
        return may_declare_global(text)

    def handed_names(self, text: str) -> frozenset[str] | None:
        """The names a file hands to ``apply``/a hook registration (``handed_names``);
        None: read the tree."""
        return handed_names(text)

    def state_lines(self, text: str) -> list[int] | None:
        """The lines whose statements a run shares as lifecycle facts; None: every one."""
        return state_lines(text)

    def mentions_state(self, text: str) -> bool:
        """Whether a run over several files may share lifecycle facts of this file."""
        return mentions_state(text)

    def spells_any(self, text: str | None, names: Iterable[str]) -> bool:
        """Whether ``text`` spells one of ``names`` (``spells_any``)."""
        return spells_any(text, names)

    def rules_out_bytes(self, raw: bytes) -> bool:
        """Whether a file's UTF-8 bytes alone rule it out (``rules_out_bytes``: ``skim``)."""
        return rules_out_bytes(raw)

    def mentions_state_bytes(self, raw: bytes) -> bool:
        """``mentions_state`` from a file's UTF-8 bytes (``mentions_state_bytes``)."""
        return mentions_state_bytes(raw)

    def lines_spelling(self, data: bytes, needle: bytes) -> list[int] | None:
        """The lines of a file's bytes where ``needle`` occurs (``lines_spelling``)."""
        return lines_spelling(data, needle)

    def lines_of(self, text: str, words: Sequence[str]) -> list[int] | None:
        """The lines that spell one of ``words`` (``lines_of``); None: every one."""
        return lines_of(text, words)

    def spelled_in(self, data: bytes, names: Sequence[str]) -> list[str]:
        """The ``names`` a file's bytes spell (``spelled_in``)."""
        return spelled_in(data, names)


class Open(Gates):
    """The switch, off: every gate open, each shortcut's permissive answer (every file may
    have a finding, every line and statement is walked, every name is spelled)."""

    on = False
    caches = False

    def mentions_flag(self, text: str) -> bool:
        return True

    def te_file(self, text: str) -> bool:
        return TE_ROOT in text  # (no "may" here: a file taken to import TE is analysed with
        # what it imports itself, before the run's index; a file that never spells TE's
        # package imports nothing of it but through another file of the run: ``project``)

    def interesting_lines(
        self, text: str, lines: Callable[[], list[str]], te_file: bool
    ) -> list[int] | None:
        return None

    def positional(self, te_file: bool) -> int | None:
        return None if te_file else _NO_POSITIONAL

    def guesses_callees(self) -> bool:
        return False

    def spelled_twice(self, text: str, names: Iterable[str]) -> bool:
        return True

    def lines_naming(
        self, lines: Callable[[], list[str]], names: Iterable[str], text: str | None = None
    ) -> list[int] | None:
        return None

    def may_nest_class(self, text: str) -> bool:
        return True

    def imports_te(self, text: str) -> bool:
        return TE_ROOT in text  # (see ``te_file``)

    def may_import(self, text: str | bytes) -> bool:
        return True

    def only_called(self, text: str | None, name: str) -> bool:
        return False

    def walrus_lines(self, text: str) -> list[int] | None:
        return None

    def spells(self, data: bytes, needle: bytes) -> bool | None:
        return None

    def may_declare_global(self, text: str) -> bool:
        return True

    def handed_names(self, text: str) -> frozenset[str] | None:
        return None

    def state_lines(self, text: str) -> list[int] | None:
        return None

    def mentions_state(self, text: str) -> bool:
        return True

    def spells_any(self, text: str | None, names: Iterable[str]) -> bool:
        return True

    def rules_out_bytes(self, raw: bytes) -> bool:
        return False

    def mentions_state_bytes(self, raw: bytes) -> bool:
        return True

    def lines_spelling(self, data: bytes, needle: bytes) -> list[int] | None:
        return None

    def lines_of(self, text: str, words: Sequence[str]) -> list[int] | None:
        return None

    def spelled_in(self, data: bytes, names: Sequence[str]) -> list[str]:
        return list(names)


ON = Gates()
"""The gates on: the default of every entry point."""
OFF = Open()
"""The gates off (``tests/test_gates.py``): the findings must be the same as with ``ON``."""
