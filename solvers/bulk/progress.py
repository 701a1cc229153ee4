"""A progress line on the terminal for work that can take more than a second.

Nothing is written unless stderr is a terminal and progress is on (the command line
turns it off with ``--quiet``): piped or redirected output never sees it. The line
appears only once the work has run for ``DELAY`` seconds, is redrawn in place with a
carriage return by one background thread, and is erased when the work ends, so the
answer printed afterwards starts on a clean line. Work is announced with
:func:`task`; nested tasks show the innermost, with a count when it has one::

    with task("Monte Carlo", total=samples) as progress:
        for chunk in chunks:
            ...
            progress.advance(len(chunk))

and a loop over items with :func:`counted`.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

DELAY = 1.0  # seconds of work before the line appears
REDRAW = 0.2  # seconds between redraws

_quiet = False
_lock = threading.Lock()
_stack: list[Task] = []
_drawer: _Drawer | None = None


def set_quiet(quiet: bool) -> None:
    """Turn progress off (``True``, as ``--quiet`` does) or back on."""
    global _quiet
    _quiet = quiet


def shown(stream=None) -> bool:
    """Whether progress would be drawn on ``stream`` (default: stderr)."""
    stream = sys.stderr if stream is None else stream
    try:
        return not _quiet and stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced by something without a tty
        return False


class Task:
    """One piece of work on the progress line: a label, and optionally a count.

    With a ``total`` the line is a bar and ``done/total``; without one, work that is
    counted all the same (a search's evaluations) shows how many so far.
    """

    def __init__(self, label: str, total: int | None = None):
        self.label = label
        self.total = total
        self.done = 0
        self.started = time.monotonic()

    def advance(self, amount: int = 1) -> None:
        """Count ``amount`` more units of the work as done."""
        self.done += amount

    def text(self) -> str:
        elapsed = time.monotonic() - self.started
        if self.total:
            share = min(self.done / self.total, 1.0)
            filled = int(share * 20)
            return (f"{self.label} [{'#' * filled}{'.' * (20 - filled)}] "
                    f"{self.done:,}/{self.total:,} ({elapsed:.0f} s)")
        if self.done:
            return f"{self.label}... {self.done:,} so far ({elapsed:.0f} s)"
        return f"{self.label}... {elapsed:.0f} s"


class _Drawer(threading.Thread):
    """Redraws the innermost task on stderr until stopped, then erases the line."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.stop = threading.Event()
        self.drawn = False

    def run(self) -> None:
        if self.stop.wait(DELAY):
            return
        while not self.stop.is_set():
            with _lock:
                line = _stack[-1].text() if _stack else ""
            self._write("\r" + line[:_width()] + "\x1b[K")
            self.drawn = True
            self.stop.wait(REDRAW)

    def finish(self) -> None:
        self.stop.set()
        self.join()
        if self.drawn:
            self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth an error
            self.stop.set()


def _width() -> int:
    import shutil

    return max(shutil.get_terminal_size().columns - 1, 20)


@contextmanager
def task(label: str, total: int | None = None):
    """Show ``label`` (and ``done/total`` if ``total`` is given) while the block runs, if
    progress is shown at all; yields the :class:`Task` to advance."""
    global _drawer
    current = Task(label, total)
    with _lock:
        _stack.append(current)
        outermost = len(_stack) == 1
    if outermost and shown():
        _drawer = _Drawer(sys.stderr)
        _drawer.start()
    try:
        yield current
    finally:
        with _lock:
            _stack.remove(current)
            drawer = _drawer if outermost else None
        if drawer is not None:
            drawer.finish()
            _drawer = None


def counted(label: str, items):
    """Yield ``items`` one by one as a task counted in items: each counts as done when
    the next is asked for (or the loop ends)."""
    items = list(items)
    with task(label, len(items)) as current:
        for item in items:
            yield item
            current.advance()
