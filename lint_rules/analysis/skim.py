"""The first pass's quick look: a file the prefilter rules out, known from its bytes.

Most files of a tree never spell the flag nor TE's package name (every file of transformers
and torch). ``skim`` reads such a file with a few system calls, without the Python file object,
the coding detection, the decoded text or the ``SourceFile`` that ``fileio.read_source``
builds. It answers only where ``read_source`` would read the same bytes without an error and
decode them as UTF-8 (a regular file, no NUL byte, no BOM, no coding cookie but UTF-8's in its
first two lines, valid UTF-8) and the prefilter rules the text out
(``prefilter.rules_out_bytes``: never with the gates off); the first pass then records what
that implies (``plan.Known``, the state words searched in the bytes:
``prefilter.mentions_state_bytes``). Every other file, and every doubt, goes the usual way,
which reports what is wrong with it. (Bytes are searched with ``find``, not ``in``:
``prefilter``.)
"""

from __future__ import annotations

import os
from stat import S_ISREG

from lint_rules.analysis import prefilter

_BOM = b"\xef\xbb\xbf"
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO that took the file's place: opened, never waited on
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_PIECE = 1 << 12
"""The bytes decoded at once to check that a file is UTF-8 (``_utf8``)."""

Skimmed = tuple[bytes, tuple[int, int, int, int]]
"""The file's bytes and its identity (device, inode, size, mtime_ns), as ``read_source``
gives them."""


def _read(path: str) -> tuple[bytes, tuple[int, int, int, int]] | None:
    """The bytes of a regular file and its identity, or None (the usual reading then says
    why). Opened without waiting (a FIFO's open would wait for a writer), then asked what it
    is: only a regular file is read."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not S_ISREG(info.st_mode):
            return None
        raw = os.read(fd, info.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) != info.st_size:  # a short read, or written to while read: not ours to decide
        return None
    return raw, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _utf8(raw: bytes) -> bool:
    """Whether ``raw.decode("utf-8")`` succeeds, a piece at a time: pieces cut just before a
    line break, each decoded only where it is not ASCII. A character of more than one byte
    is made of bytes >= 0x80 only, so no valid one spans the cut, and an invalid one is
    invalid in its piece too (it ends where the ASCII line break begins). The whole text at
    once is a string of up to four times the file's size in fresh memory (one emoji in a
    header makes it four bytes a character): on transformers, more than the searches. (Asked
    of bytes known not to be ASCII: the whole is not checked again first.)"""
    start, size = 0, len(raw)
    try:
        while start < size:
            end = raw.find(b"\n", start + _PIECE)
            if end < 0:
                end = size
            piece = raw[start:end]
            if not piece.isascii():
                str(piece, "utf-8")
            start = end
    except UnicodeDecodeError:
        return False
    return True


def skim(path: str, gates: prefilter.Gates = prefilter.ON) -> Skimmed | None:
    """A file the prefilter rules out, read; None where only the usual reading can tell (or
    the gates are off)."""
    read = _read(path)
    if read is None:
        return None
    raw = read[0]
    if not gates.rules_out_bytes(raw) or 0 in raw or raw.startswith(_BOM):  # 0: a NUL byte
        return None
    first = raw.find(b"\n")
    end = -1 if first < 0 else raw.find(b"\n", first + 1)
    head = raw if end < 0 else raw[:end]  # the first two lines, as ``decode_source`` looks
    if head.replace(b"\n", b"", 1).find(b"coding") >= 0 and not _read_as_utf8(raw):
        return None
    if not (raw.isascii() or _utf8(raw)):
        return None
    return read


def _read_as_utf8(raw: bytes) -> bool:
    """Whether Python's detection (``tokenize.detect_encoding``, what ``read_source`` asks
    where the first two lines spell ``coding``) reads ``raw`` as UTF-8 all the same: a
    ``coding: utf-8`` cookie, or the word in other words (``Decoding``, a ``# cod`` line then
    ``ing``). Then the reader's module, and all it imports, stays unloaded."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError:
        return False
    return encoding == "utf-8"
