"""Reading and writing users' source files without ever losing a byte.

Reading (``read_source``) decodes exactly like Python does (``tokenize.detect_encoding``: a UTF-8
BOM gives ``utf-8-sig``, else a PEP 263 coding cookie, else UTF-8), strictly, and WITHOUT newline
translation: the bytes are decoded directly, so CRLF, CR-only and mixed newlines survive into
``SourceFile.text`` and back out again. Anything Python itself could not read (undecodable bytes,
an unknown or non-ASCII-compatible encoding, a NUL byte) and anything that is not a readable
regular file raises ``SourceError(path, reason)`` whose ``str`` is one line naming both.

Writing (``write_source_atomic``) re-encodes with the encoding the file was read with (a BOM is
written back for ``utf-8-sig``), writes a temporary file ``.<name>.<random>.tmp`` in the same
directory, fsyncs it, gives it the original's permission bits (and owner, where allowed), renames
it over the target with ``os.replace`` and fsyncs the directory. Any failure removes the temporary
file, so the target is always either the old or the new content. A symlink is written through: the
file it points to is replaced, the link itself stays. A file with no write bit for anyone
(``chmod a-w``) is reported as read-only and never forced, even when running as root (root's
``os.access`` says every file is writable, so the mode bits are checked too). A write whose bytes
equal what was read does nothing at all (mtime unchanged). A file that changed on disk after it
was read is not overwritten.

Interruption: a process that writes should call ``install_cleanup_handlers()`` once in its main
thread (the CLI in its ``main`` and in every worker process's initializer). Then SIGINT, SIGTERM and
SIGHUP are held back for the few system calls of each write, and a pending temporary file is
removed before the process exits on one of them; the previous handler (for SIGINT,
``KeyboardInterrupt``) still runs. Only SIGKILL (or a power cut) can leave a ``.*.tmp`` behind, and
even then the target is intact and the leftover never ends in ``.py``.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import errno
import io
import os
import re
import signal
import stat
import threading
import tokenize
from collections.abc import Iterator
from pathlib import Path

from lint_rules.exchange import Writer, _identity, _read_fd, install, is_ours
from lint_rules.slotted import Frozen

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any, Union

if TYPE_CHECKING:
    PathLike = Union[str, "os.PathLike[str]"]
else:  # the alias is the type checker's: at run time, its classes
    PathLike = (str, os.PathLike)

TEMP_PREFIX = "."
TEMP_SUFFIX = ".tmp"

# PEP 263, as in CPython's tokenizer: only the first two lines may carry a cookie.
_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_RE = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)")
_ASCII_PROBE = "#\tx = 1\r\n"


class SourceError(Exception):
    """A file that cannot be read, decoded or written; ``str`` is ``"<path>: <reason>"``."""

    def __init__(self, path: PathLike, reason: str) -> None:
        self.path = str(path)
        # One line, always: a reason built from an OS or codec message must not break output.
        self.reason = " ".join(str(reason).split())
        super().__init__(f"{self.path}: {self.reason}")

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across a process pool
        return (SourceError, (self.path, self.reason))


class SourceFile(Frozen):
    """One file as read: ``raw`` is the exact bytes, ``text`` the decoded text (newlines as in
    the file, BOM removed), ``encoding`` the codec name to write it back with."""

    __slots__ = ("path", "raw", "text", "encoding", "identity")
    path: Path
    raw: bytes
    text: str
    encoding: str
    identity: tuple[int, int, int, int] | None
    """(device, inode, size, mtime_ns) of the file when it was read (None: not read from a
    file); the write compares it with the file on disk right before the rename."""

    def __init__(
        self,
        path: Path,
        raw: bytes,
        text: str,
        encoding: str,
        identity: tuple[int, int, int, int] | None = None,
    ) -> None:
        self._fill(locals())

    def __repr__(self) -> str:  # never dump a 50 MB file into a traceback
        return (
            f"SourceFile(path={str(self.path)!r}, encoding={self.encoding!r}, size={len(self.raw)})"
        )


# --------------------------------------------------------------------------------------- reading


def _os_reason(error: OSError) -> str:
    code = error.errno
    if code == errno.ENOENT:
        return "does not exist"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if code == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links)"
    if code == errno.EISDIR:
        return "not a file (it is a directory)"
    if code == errno.ENOTDIR:
        return "does not exist (a parent is not a directory)"
    if code == errno.ENAMETOOLONG:
        return "file name too long"
    return f"cannot read: {error.strerror or error}"


def _line_of(raw: bytes, offset: int) -> int:
    head = raw[:offset]
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


def _first_lines(raw: bytes) -> list[bytes]:
    """The first two lines as ``tokenize.detect_encoding`` sees them (split at ``\\n`` only)."""
    reader = io.BytesIO(raw)
    return [reader.readline(), reader.readline()]


def _find_cookie(raw: bytes) -> str | None:
    """The coding cookie's name in the first two lines (PEP 263), or None."""
    for number, line in enumerate(_first_lines(raw)):
        if number == 0 and line.startswith(codecs.BOM_UTF8):
            line = line[len(codecs.BOM_UTF8) :]
        match = _COOKIE_RE.match(line)
        if match:
            return match.group(1).decode("ascii")
        if number == 0 and not _BLANK_RE.match(line):
            return None  # the second line counts only when the first is blank or a comment
    return None


def _detect_encoding(path: PathLike, raw: bytes) -> tuple[str, bool]:
    """(codec, declared): Python's own detection, with our reasons on failure."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as error:
        message = str(error.msg if error.msg else error)
        cookie = _find_cookie(raw)
        if message.startswith("unknown encoding"):
            raise SourceError(path, f"unknown encoding {cookie!r} in coding cookie") from None
        if message.startswith("encoding problem"):
            raise SourceError(
                path, f"has a UTF-8 BOM but its coding cookie declares {cookie!r}"
            ) from None
        if cookie is None:
            # The first lines are not UTF-8: decoding below gives the exact byte.
            return "utf-8", False
        try:
            encoding = codecs.lookup(cookie).name
        except LookupError:
            raise SourceError(path, f"unknown encoding {cookie!r} in coding cookie") from None
        return encoding, True
    return encoding, encoding == "utf-8-sig" or _find_cookie(raw) is not None


def _check_codec(path: PathLike, encoding: str) -> None:
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise SourceError(path, f"unknown encoding {encoding!r} in coding cookie") from None
    usable = getattr(info, "_is_text_encoding", True)
    if usable:
        try:  # Python reads source only in ASCII-compatible encodings
            usable = _ASCII_PROBE.encode("ascii").decode(encoding) == _ASCII_PROBE
        except (UnicodeError, LookupError, TypeError):
            usable = False
    if not usable:
        raise SourceError(
            path, f"coding cookie declares {encoding!r}, which Python cannot read source in"
        )


def read_source(path: PathLike) -> SourceFile:
    """Read one source file exactly as Python would; raise ``SourceError`` if it cannot."""
    name = os.fspath(path)
    try:
        info = os.stat(name)  # follows symlinks; ELOOP for a loop
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    if stat.S_ISDIR(info.st_mode):
        raise SourceError(name, "not a file (it is a directory)")
    if not stat.S_ISREG(info.st_mode):
        # Never open a FIFO, socket or device: reading it could block forever.
        raise SourceError(name, "not a regular file")
    try:
        with open(name, "rb") as handle:
            seen = os.fstat(handle.fileno())
            raw = handle.read()
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    source = decode_source(name, raw)
    identity = _identity(seen)
    if identity[2] != len(raw):
        identity = (*identity[:2], len(raw), -1)  # written to while read: never matches
    return SourceFile(source.path, source.raw, source.text, source.encoding, identity)


def read_regular(path: PathLike, limit: int = 1 << 30) -> bytes:
    """The bytes of a regular file (``SourceError`` for anything else: a FIFO, which could
    block forever, a device such as ``/dev/zero``, which never ends, a file over ``limit``)."""
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    if not stat.S_ISREG(info.st_mode):
        raise SourceError(name, "not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)  # never blocks, even if a FIFO took the file's place
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SourceError(name, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SourceError(name, f"larger than {limit} bytes")
    return data


def decode_source(path: PathLike, raw: bytes) -> SourceFile:
    """Decode bytes read elsewhere (stdin) exactly as ``read_source`` decodes a file's."""
    name = os.fspath(path)
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise SourceError(name, f"contains a NUL byte (line {_line_of(raw, nul)})")
    if not raw.startswith(codecs.BOM_UTF8) and b"coding" not in b"".join(raw.split(b"\n", 2)[:2]):
        encoding, declared = "utf-8", False  # what detection gives without a BOM or a cookie
    else:
        encoding, declared = _detect_encoding(name, raw)
        _check_codec(name, encoding)
    try:
        text = raw.decode(encoding)  # strict; bytes in, so no newline translation
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.start + 1]
        where = f"byte 0x{bad.hex()} at line {_line_of(raw, error.start)}, offset {error.start}"
        if not declared:
            reason = f"not valid UTF-8 and no coding cookie ({where})"
        else:
            reason = f"not valid {encoding} as its coding cookie declares ({where})"
        raise SourceError(name, reason) from None
    return SourceFile(path=Path(name), raw=raw, text=text, encoding=encoding)


# ---------------------------------------------------------------------------- interruption safety

_PENDING: set[str] = set()
"""Temporary files created and not yet renamed or removed (this process)."""

_HANDLED_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_previous_handlers: dict[int, Any] = {}
_installed = False


def cleanup_temp_files() -> None:
    """Remove every temporary file this process created and has not renamed yet."""
    for temp in list(_PENDING):
        with contextlib.suppress(OSError):
            os.unlink(temp)
        _PENDING.discard(temp)


def _on_signal(signum: int, frame: Any) -> None:
    cleanup_temp_files()
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)  # e.g. SIGINT's KeyboardInterrupt
        return
    if previous == signal.SIG_IGN:
        return
    signal.signal(signum, signal.SIG_DFL)  # die of the same signal, as without us
    os.kill(os.getpid(), signum)


def install_cleanup_handlers() -> None:
    """Make interrupted writes leave no temporary file behind (call in each writing process).

    Must be called from the main thread. Idempotent. Installs handlers for SIGINT, SIGTERM and
    SIGHUP that remove pending temporary files and then behave like the handler they replaced,
    registers the same cleanup ``atexit``, and makes ``write_source_atomic`` hold those signals
    back during each write.
    """
    global _installed
    if _installed:
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("install_cleanup_handlers() must be called from the main thread")
    for signum in _HANDLED_SIGNALS:
        previous = signal.getsignal(signum)
        if previous == signal.SIG_IGN:
            continue  # e.g. SIGHUP under nohup: keep ignoring it
        _previous_handlers[int(signum)] = previous
        signal.signal(signum, _on_signal)
    atexit.register(cleanup_temp_files)
    _installed = True


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Block the handled signals for the duration (where handlers are installed and possible).

    Nests: an inner block leaves them blocked until the outermost one ends."""
    if not _installed or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a held signal is delivered now


# --------------------------------------------------------------------------------------- writing


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view[: 1 << 24])
        view = view[written:]


def _fsync_directory(directory: str) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:
        return  # not possible on this platform / filesystem
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _write_refusal(target: str, mode: int) -> str | None:
    """Why the file must not be written, or None."""
    # Root passes os.access() for a 0o444 file, so the mode bits decide first: a file nobody
    # may write is one its owner meant to protect.
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "file is read-only; not written"
    if not os.access(target, os.W_OK):
        return "permission denied (no write permission); not written"
    # The rename writes the directory: one nobody may write is protected too (root would pass).
    directory = os.path.dirname(target) or "."
    try:
        folder = os.stat(directory).st_mode
    except OSError:
        return None
    if not folder & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "its directory is read-only; not written"
    return None


_ROUND_TRIP_SAFE = frozenset({"utf-8", "utf-8-sig", "latin-1", "iso8859-1", "ascii"})
"""Codecs whose strict decoding always encodes back to the same bytes."""


def round_trips(source: SourceFile) -> bool:
    """Whether encoding ``source.text`` gives back ``source.raw`` (codecs such as cp932, big5
    or unicode_escape map several byte sequences to one character, or newlines to escapes)."""
    if codecs.lookup(source.encoding).name in _ROUND_TRIP_SAFE:
        return True
    try:
        return source.text.encode(source.encoding) == source.raw
    except (UnicodeError, LookupError):
        return False


def _changed_reason(name: str) -> SourceError:
    return SourceError(name, "file changed on disk since it was read; not written")


def _open_target(name: str, target: str) -> tuple[int, os.stat_result]:
    """An fd on the file to replace (never blocking on a FIFO), and its fstat."""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(target, flags)
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    try:
        info = os.fstat(fd)
    except OSError as error:
        os.close(fd)
        raise SourceError(name, _os_reason(error)) from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise SourceError(name, "not a regular file")
    return fd, info


def _write_temp(directory: str, base: str, data: bytes, info: os.stat_result) -> str:
    """A synced temporary file beside the target with ``data`` and the target's owner and
    mode (owner first: chown clears the setuid and setgid bits); raises OSError."""
    import tempfile  # only a run that writes pays for it

    fd, temp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{base}.", suffix=TEMP_SUFFIX, dir=directory)
    _PENDING.add(temp)
    try:
        _write_all(fd, data)
        if hasattr(os, "fchown") and (info.st_uid != os.geteuid() or info.st_gid != os.getegid()):
            with contextlib.suppress(OSError):  # only root (or the owner's group) can
                os.fchown(fd, info.st_uid, info.st_gid)
        if hasattr(os, "fchmod"):
            os.fchmod(fd, stat.S_IMODE(info.st_mode))
        else:  # pragma: no cover - Windows before 3.13
            os.chmod(temp, stat.S_IMODE(info.st_mode))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        _PENDING.discard(temp)
        raise
    os.close(fd)
    return temp


def write_source_atomic(source: SourceFile, new_text: str) -> None:
    """Replace ``source``'s file with ``new_text``, atomically, keeping encoding and mode.

    Raises ``SourceError`` (the file untouched) when the text cannot be encoded in the file's
    encoding, the encoding does not give back the bytes read (the rest of the file would
    change), the file is read-only, it changed on disk since it was read, or any step fails.

    The file is checked through an fd opened before the temporary copy is written: its device,
    inode, size and mtime must still be those seen at the read, and again right before the
    rename, and the path must still name that inode. An edit that lands on the old inode in
    the instant between that last check and the rename is found after it: the edited content
    is then put back (the edit wins, the fix is not applied) and the file reported as changed.
    """
    name = str(source.path)
    if not round_trips(source):
        raise SourceError(
            name,
            f"its encoding {source.encoding} does not give back the bytes it was read from, "
            "so writing it would change text outside the fix; not written",
        )
    try:
        data = new_text.encode(source.encoding)
    except UnicodeEncodeError as error:
        char = new_text[error.start]
        raise SourceError(
            name, f"fixed text has {char!r}, which {source.encoding} cannot encode; not written"
        ) from None
    except UnicodeError as error:  # a codec that fails on whole lines (idna)
        raise SourceError(
            name, f"fixed text cannot be encoded in {source.encoding} ({error}); not written"
        ) from None
    if data == source.raw:
        return  # nothing to do: do not touch the file (mtime unchanged)

    target = os.path.realpath(name)  # write through a symlink, never replace the link
    try:
        info = os.stat(target)
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    if not stat.S_ISREG(info.st_mode):
        raise SourceError(name, "not a regular file")  # never open a FIFO
    refusal = _write_refusal(target, info.st_mode)
    if refusal is not None:
        raise SourceError(name, refusal)
    fd, info = _open_target(name, target)
    try:
        _replace_checked(name, target, fd, info, source, data)
    finally:
        os.close(fd)


def _replace_checked(
    name: str, target: str, fd: int, info: os.stat_result, source: SourceFile, data: bytes
) -> None:
    expected = source.identity or _identity(info)
    if _identity(info) != expected:
        raise _changed_reason(name)
    try:
        current = _read_fd(fd, info.st_size) if info.st_size == len(source.raw) else None
    except OSError as error:
        raise SourceError(name, _os_reason(error)) from None
    if current != source.raw:
        raise _changed_reason(name)
    expected = _identity(info)

    def unchanged() -> bool:
        try:
            now, there = os.fstat(fd), os.stat(target)
        except OSError:
            return False
        return _identity(now) == expected and (there.st_dev, there.st_ino) == expected[:2]

    directory = os.path.dirname(target) or "."
    base = os.path.basename(target)
    with signals_held():
        try:
            temp = _write_temp(directory, base, data, info)
        except OSError as error:
            reason = _os_reason(error) if error.filename else (error.strerror or str(error))
            raise SourceError(name, f"cannot write: {reason}; file left unchanged") from None
        try:
            if not unchanged():  # an edit saved while the copy was written wins
                raise _changed_reason(name)
            install(temp, target, fd, expected, source.raw, _PENDING)
        except Writer as writer:
            where = f"; the version it displaced is kept as {writer.kept}" if writer.kept else ""
            raise SourceError(
                name,
                "another program wrote the file while fix replaced it; its version is kept, "
                f"not fixed{where}",
            ) from None
        except OSError as error:
            reason = error.strerror or str(error)
            raise SourceError(name, f"cannot write: {reason}; file left unchanged") from None
        finally:
            if temp in _PENDING and is_ours(temp, data):
                with contextlib.suppress(OSError):
                    os.unlink(temp)
            _PENDING.discard(temp)
    _fsync_directory(directory)
