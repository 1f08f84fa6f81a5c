"""Putting a fixed copy in a file's place without ever deleting what another program wrote.

``install`` exchanges the copy with the file in one step (Linux ``renameat2`` with
``RENAME_EXCHANGE``) and looks at what came out: the file as read is deleted, anything else
(the file written to since, another program's copy renamed over it) is exchanged back and the
copy deleted only once it is the copy itself again. Where names cannot be exchanged, the file
read stays linked under a second name across a plain rename and is moved back (the file, never
a snapshot of its bytes) when it was written to meanwhile. docs/fixes.md, "When another program
writes the file", says what this promises; ``_exchange`` is the window the tests hook.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any


def _identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _read_fd(fd: int, size: int) -> bytes:
    """The whole content behind ``fd`` (``size``: the expected size, a hint)."""
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, max(size - offset, 1 << 20), offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


_RENAME_EXCHANGE = 2  # linux/fs.h
_renameat2: Any = None


def _exchange_supported() -> bool:
    """Whether this platform has ``renameat2`` (a file system may still refuse it)."""
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                function = ctypes.CDLL(None, use_errno=True).renameat2
                text, number = ctypes.c_char_p, ctypes.c_int
                function.argtypes = [number, text, number, text, ctypes.c_uint]
                function.restype = ctypes.c_int
                _renameat2 = function
    return bool(_renameat2)


def _exchange(temp: str, target: str) -> bool:
    """Swap the two paths' files in one step (Linux ``renameat2(RENAME_EXCHANGE)``): True when
    swapped, False where the platform or file system cannot (the caller then falls back);
    raises OSError for any other failure."""
    if not _exchange_supported():
        return False
    import ctypes

    at_cwd = -100  # AT_FDCWD
    if _renameat2(at_cwd, os.fsencode(temp), at_cwd, os.fsencode(target), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), target)


class Writer(Exception):
    """Another program wrote the file while it was being replaced (``kept``: where the bytes
    that were displaced now are, when they could not be put back at the path)."""

    def __init__(self, kept: str | None = None) -> None:
        super().__init__(kept)
        self.kept = kept


def _same_file(path: str, identity: tuple[int, ...]) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == tuple(identity[:2])


def install(
    temp: str,
    target: str,
    fd: int,
    expected: tuple[int, int, int, int],
    raw: bytes,
    pending: set[str],
) -> None:
    """Put ``temp`` at ``target`` unless another writer is active; raise ``Writer`` then.

    The file read is held open through ``fd``. The swap exchanges the two names in one step,
    so whatever the path named at that instant (the file read, the file read but written to
    since, or another program's file renamed over it) ends up at ``temp``'s name, never
    unlinked. It is removed only when it is the file read with exactly the bytes read;
    otherwise it is swapped back, and our copy removed only when the swap back gives us our
    own file: no byte another program wrote is ever deleted or overwritten."""
    mine = os.lstat(temp)
    if not _exchange(temp, target):
        _install_without_exchange(temp, target, fd, expected, raw, pending)
        return
    displaced_is_read = _same_file(temp, expected) and _unchanged_fd(fd, expected, raw)
    if displaced_is_read:
        os.unlink(temp)  # the file as read: the fixed copy replaces it
        return
    _exchange(temp, target)  # put the displaced file back at the path
    try:
        ours = _identity(os.lstat(temp)) == _identity(mine)
    except OSError:
        ours = False
    if ours:  # our copy came back, as written: the path holds the other writer's file again
        os.unlink(temp)
        raise Writer()
    # A third save replaced our copy (or wrote into it) between the two swaps: that newest
    # file goes back to the path, the one it displaced stays under the temporary name.
    _exchange(temp, target)
    pending.discard(temp)
    raise Writer(kept=temp)


def _unchanged_fd(fd: int, expected: tuple[int, int, int, int], raw: bytes) -> bool:
    try:
        if _identity(os.fstat(fd)) != expected:
            return False
        return _read_fd(fd, len(raw)) == raw
    except OSError:
        return False


def _install_without_exchange(
    temp: str,
    target: str,
    fd: int,
    expected: tuple[int, int, int, int],
    raw: bytes,
    pending: set[str],
) -> None:
    """Where names cannot be swapped: the file read is kept linked under a second name across
    the rename, and moved back (the file itself, never a copy of its bytes) when it was
    written to meanwhile. An atomic save in the instant before the rename is not covered."""
    import tempfile

    base, directory = os.path.basename(target), os.path.dirname(target) or "."
    pin = tempfile.mktemp(prefix=f".{base}.", suffix=".tmp", dir=directory)
    try:
        os.link(target, pin)
    except OSError:
        pin = ""
    if pin:
        pending.add(pin)
    try:
        if pin and not _same_file(pin, expected):
            raise Writer()
        os.replace(temp, target)
        if _unchanged_fd(fd, expected, raw):
            return
        if pin:
            os.replace(pin, target)  # the written-to file goes back, and its later writes
            pending.discard(pin)
            pin = ""
        raise Writer()
    finally:
        if pin:
            with contextlib.suppress(OSError):
                os.unlink(pin)
            pending.discard(pin)


def is_ours(temp: str, data: bytes) -> bool:
    """Whether ``temp`` still holds our fixed copy (never delete anything else)."""
    try:
        with open(temp, "rb") as handle:
            return handle.read(len(data) + 1) == data
    except OSError:
        return False
