"""The worker processes of a run's pool (``running.Pool``), forked with ``os.fork``: no
``multiprocessing``, no thread in the run's own process.

Each parse the pool serves is one *call*: the run's process sends every worker the whole call
at once (the work, the job and every item, pickled together: what the items share, the run's
index and facts, is pickled once), and the places of the items go into one *ticket* pipe,
largest first, which the run's process and every worker draw from. So each takes the largest
file left when it is free, none waits for a file another has not begun, and no file is judged
twice. Outcomes come back on each worker's own pipe, read by the run's process between its own
files. A call is closed (every ticket drawn, every worker done with it) before the next begins.

A worker only reads its task pipe, draws tickets and writes its outcomes; it never returns
into the caller's code (``os._exit``), so nothing of the run's process (its buffered output,
``atexit``) runs twice.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

HEADER = struct.Struct("<Q")
TICKET = struct.Struct("<I")
PIPE_BYTES = 1 << 20
"""Asked of each pipe (``F_SETPIPE_SZ``): a worker never waits for the run's process to read
its outcomes while that process judges a large file."""

DONE = -1
"""The place in a worker's message that says it is done with the call."""


def pipe() -> tuple[int, int]:
    """A pipe, as large as the system lets it be (Linux), its ends not inherited by ``exec``."""
    read, write = os.pipe()
    try:
        import fcntl

        fcntl.fcntl(write, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (OSError, ImportError):  # pragma: no cover - not Linux, or a lower limit
        pass
    return read, write


def capacity(fd: int) -> int:
    """The bytes the pipe of ``fd`` holds; where that cannot be asked, ``PIPE_BUF``, which
    every pipe holds (macOS's start at 16 KB, not Linux's 64 KB: more would block here)."""
    try:
        import fcntl

        return int(fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", 1032)))
    except (OSError, ImportError):  # pragma: no cover - not Linux
        import select

        return int(getattr(select, "PIPE_BUF", 512))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def packed(message: Any) -> bytes:
    """One message as it goes down a pipe: its length, then its pickle."""
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def send(fd: int, message: Any) -> None:
    write_all(fd, packed(message))


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts = []
    while size:
        part = os.read(fd, size)
        if not part:
            return None
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def receive(fd: int) -> Any:
    """The next message on a blocking pipe; None at its end (the writer closed it)."""
    head = _read_exactly(fd, HEADER.size)
    if head is None:
        return None
    data = _read_exactly(fd, HEADER.unpack(head)[0])
    return None if data is None else pickle.loads(data)


class Inbox:
    """The messages of one worker, read without blocking (its pipe is non-blocking)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.closed = False

    def read(self) -> list[Any]:
        """The messages complete so far (none when nothing came); ``closed`` at the end."""
        while not self.closed:
            try:
                data = os.read(self.fd, PIPE_BYTES)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                self.closed = True
                break
            self.buffer += data
        messages = []
        while len(self.buffer) >= HEADER.size:
            size = HEADER.unpack_from(self.buffer)[0]
            end = HEADER.size + size
            if len(self.buffer) < end:
                break
            with contextlib.suppress(Exception):  # one that does not unpickle: redone here
                messages.append(pickle.loads(bytes(self.buffer[HEADER.size : end])))
            del self.buffer[:end]
        return messages


def draw(fd: int) -> int | None:
    """The next ticket (a place), or None when none is left (the pipe is non-blocking)."""
    try:
        data = os.read(fd, TICKET.size)
    except BlockingIOError:
        return None
    if not data:
        return None
    while len(data) < TICKET.size:  # never in practice: tickets are written whole
        try:
            data += os.read(fd, TICKET.size - len(data))
        except BlockingIOError:
            continue
    return int(TICKET.unpack(data)[0])


def tickets(fd: int) -> Iterator[int]:
    while True:
        place = draw(fd)
        if place is None:
            return
        yield place


def drain(fd: int) -> None:
    """Draw every ticket left: none of them is for a later call."""
    for _ in tickets(fd):
        pass


def serve(tasks: int, results: int, ticket_fd: int, judge: Callable[[Any, Any, Any], Any]) -> None:
    """A worker's life: each call, the items it is given (``assigned``) or the tickets it
    draws, each judged (``judge(work, job, item)``) and sent back as ``(call, place,
    result)``; then ``(call, DONE, None)``. Ends when the task pipe closes."""
    while True:
        message = receive(tasks)
        if message is None:
            return
        call, work, job, items, assigned = message
        for place in assigned if assigned is not None else tickets(ticket_fd):
            try:
                data = packed((call, place, judge(work, job, items[place])))
            except Exception:  # not sent: the run's process judges that file itself
                continue
            write_all(results, data)
        send(results, (call, DONE, None))


class Worker:
    """One forked worker, as the run's process sees it."""

    def __init__(self, index: int, pid: int, tasks: int, inbox: Inbox) -> None:
        self.index = index
        """Its place among the pool's workers."""
        self.pid = pid
        self.tasks = tasks
        self.inbox = inbox
        self.alive = True

    def give(self, message: Any) -> bool:
        """Send it a call; False when it cannot take one (its task pipe is closed: it died,
        between calls as well), and it is then no longer alive."""
        try:
            send(self.tasks, message)
        except OSError:  # EPIPE: its files are judged by the run's process
            self.alive = False
            return False
        return True

    def close(self) -> None:
        """Close both pipes (once)."""
        for fd in (self.tasks, self.inbox.fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.tasks = self.inbox.fd = -1


def fork_workers(
    count: int, ticket_pipe: tuple[int, int], init: Callable[[], None], judge: Any
) -> list[Worker]:
    """``count`` workers, each running ``init`` then ``serve``; a worker that fails at its
    start simply ends (its calls are then judged by the run's process). Fewer when the system
    refuses a fork or a pipe (a process limit, memory, ``ulimit -n``): the run goes on with
    those it has."""
    import sys

    for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice
        with contextlib.suppress(Exception):
            stream.flush()
    workers: list[Worker] = []
    for _ in range(count):
        fds: list[int] = []
        try:
            fds += pipe()
            fds += pipe()
            pid = os.fork()
        except BaseException as error:  # EMFILE, EAGAIN, ENOMEM: no more workers
            for fd in fds:
                os.close(fd)
            if isinstance(error, OSError):
                break
            for worker in workers:  # Ctrl-C: those forked end (their task pipe closes)
                worker.close()
                with contextlib.suppress(OSError):
                    os.waitpid(worker.pid, 0)
            raise
        task_read, task_write, result_read, result_write = fds
        if pid == 0:  # the worker: never returns
            code = 0
            try:
                os.close(task_write)
                os.close(result_read)
                os.close(ticket_pipe[1])
                for other in workers:
                    other.close()
                init()
                serve(task_read, result_write, ticket_pipe[0], judge)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(task_read)
        os.close(result_write)
        os.set_blocking(result_read, False)
        workers.append(Worker(len(workers), pid, task_write, Inbox(result_read)))
    return workers
