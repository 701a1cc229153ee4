"""The files a command writes: checked before the work, then written all together or not at all.

Every command that writes files (``plot --out``, ``imply``/``fit``/``atlas --plot``,
``report --html/--md`` and the PNGs beside the Markdown) goes through :class:`Outputs`.
A destination is refused, with one line naming it and the reason, when it

* is empty, ``.``, ``..`` or ends in a slash (a folder, not a file name);
* is an existing folder, device, FIFO or socket, or a symbolic link: chalk writes and
  replaces regular files only, so it never turns a link or a device node into a file;
* is one of the command's input files (also through another name or a hard link), or
  the destination of another output of the same command;
* has a suffix that is not the format written (``--out x.pdf`` is not a PNG);
* lies in a folder that does not exist or that chalk cannot create files in.

Every output is first written in full to a temporary file beside its destination; only
when all of them are staged are they renamed into place, so a failure writes nothing.
(A rename within one folder fails only if the folder changes under chalk between the
staging and the rename; then the temporary files are removed and the line says which
destinations were already replaced.)
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from chalk.symbolic.errors import OutputError, shown_path

PLOT_FORMATS = {".png": "png", ".svg": "svg"}
HTML_FORMATS = {".html": "html", ".htm": "html"}
MARKDOWN_FORMATS = {".md": "md", ".markdown": "md"}

_NAMES = {"png": "PNG", "svg": "SVG", "html": "HTML", "md": "Markdown"}
def _reason(exc: OSError) -> str:
    """An OS error as the lower-case reason of a message line."""
    text = exc.strerror or type(exc).__name__
    return text[0].lower() + text[1:]


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return ("it is a symbolic link, and chalk replaces only regular files: remove the "
                "link or name another file")
    if stat.S_ISDIR(mode):
        return "it is a folder; name a file inside it"
    if stat.S_ISFIFO(mode):
        return "it is a FIFO, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device, not a regular file"
    return "it is not a regular file"


class Outputs:
    """The destinations of one command, checked as they are declared and written together.

    Parameters
    ----------
    inputs : iterable of str
        The files the command reads (price sheets, fit and deduction files); none of
        them may be written. Entries that are not existing files (a shipped sheet id)
        are ignored.
    """

    def __init__(self, inputs: Iterable[str | os.PathLike] = ()):
        self._inputs = [os.fspath(p) for p in inputs if p]
        self._taken: dict[str, str] = {}  # resolved destination -> the option naming it

    def declare(self, option: str, path: str, formats: Mapping[str, str],
                wanted: str | None = None) -> str:
        """Check ``path`` as the destination of ``option`` and return its format.

        Parameters
        ----------
        option : str
            The option that names it (``--out``), for the message.
        path : str
            The destination as typed.
        formats : mapping of str to str
            The suffixes accepted (lower case, with the dot) and the format each means.
        wanted : str, optional
            A format asked for by a flag (``--svg``); the suffix must agree with it.

        Returns
        -------
        str
            The format to write, e.g. ``"png"``.

        Raises
        ------
        OutputError
            Anything listed in the module's docstring.
        """
        self._check(path, option)
        suffix = Path(path).suffix.lower()
        fmt = formats.get(suffix)
        names = " or ".join(dict.fromkeys(_NAMES.get(f, f) for f in formats.values()))
        if fmt is None:
            found = f"not {suffix!r}" if suffix else "and the name has no suffix"
            raise OutputError(path, f"{option} writes {names}, {found}: end the name in "
                                    + " or ".join(formats))
        if wanted is not None and fmt != wanted:
            raise OutputError(path, f"{_NAMES.get(wanted, wanted)} was asked for but the name "
                                    f"ends in {suffix}: end it in "
                                    + " or ".join(s for s, f in formats.items() if f == wanted))
        return fmt

    def write(self, contents: Mapping[str | os.PathLike, bytes]) -> None:
        """Write every ``path: data`` pair, or none of them.

        Destinations not declared before (the PNGs beside a Markdown report) get the same
        checks here.

        Raises
        ------
        OutputError
            A destination refused, or an OS error while writing (nothing is left behind).
        """
        for path in contents:
            if self._key(os.fspath(path)) not in self._taken:
                self._check(os.fspath(path), "the output")
        staged: list[tuple[str, str]] = []  # (temporary, destination)
        done: list[str] = []
        try:
            for path, data in contents.items():
                staged.append((_stage(os.fspath(path), data), os.fspath(path)))
            for temporary, path in staged:
                _check_kind(path)  # nothing new appeared at the destination meanwhile
                try:
                    os.replace(temporary, path)
                except OSError as exc:
                    written = ", ".join(map(shown_path, done))
                    already = f" ({written} already written)" if done else ""
                    raise OutputError(path, _reason(exc) + already) from None
                done.append(path)
        finally:
            for temporary, _ in staged:
                if os.path.lexists(temporary):
                    os.unlink(temporary)

    def _key(self, path: str) -> str:
        folder, name = os.path.split(path)
        return os.path.join(os.path.realpath(folder or "."), name)

    def _check(self, path: str, option: str) -> None:
        """Refuse ``path`` unless chalk may create or replace a regular file there."""
        if not path:
            raise OutputError(path, f"{option} needs a file name")
        if os.path.basename(path) in ("", ".", ".."):  # pathlib would read 'x.png/.' as x.png
            raise OutputError(path, f"{option} needs a file name, not a folder")
        if "\0" in path:
            raise OutputError(path, "the name contains a NUL character")
        folder = os.path.dirname(path) or "."
        try:
            folder_mode = os.stat(folder).st_mode
        except FileNotFoundError:
            raise OutputError(path, f"folder {shown_path(folder)} does not exist") from None
        except OSError as exc:
            raise OutputError(path, f"folder {shown_path(folder)}: {_reason(exc)}") from None
        if not stat.S_ISDIR(folder_mode):
            raise OutputError(path, f"{shown_path(folder)} is not a folder")
        exists = _check_kind(path)
        if exists:
            for source in self._inputs:
                try:
                    same = os.path.samefile(source, path)
                except (OSError, ValueError):
                    continue
                if same:
                    raise OutputError(path, "it is an input of this command "
                                            f"({shown_path(source)}); name another file")
        key = self._key(path)
        if key in self._taken:
            raise OutputError(path, f"{self._taken[key]} already writes it; name another file")
        _probe(path, folder)
        self._taken[key] = option


def _check_kind(path: str) -> bool:
    """True if a regular file is at ``path``, False if nothing is; else refuse it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise OutputError(path, _reason(exc)) from None
    kind = _kind(mode)
    if kind is not None:
        raise OutputError(path, kind)
    return True


def _probe(path: str, folder: str) -> None:
    """Refuse a folder chalk cannot create files in, or a name it will not take, now
    rather than after the work: create and remove an empty temporary file there."""
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    if len(os.fsencode(os.path.basename(path))) > name_max:
        raise OutputError(path, f"the file name is longer than {name_max} bytes")
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".chalk-", suffix=".tmp")
    except OSError as exc:
        raise OutputError(path, f"cannot create files in folder {shown_path(folder)} "
                                f"({_reason(exc)})") from None
    os.close(handle)
    os.unlink(temporary)


def _stage(path: str, data: bytes) -> str:
    """Write ``data`` to a temporary file beside ``path`` and return its name."""
    folder = os.path.dirname(path) or "."
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".chalk-", suffix=".tmp")
    except OSError as exc:
        raise OutputError(path, _reason(exc)) from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes it private; outputs are not
    except OSError as exc:
        os.unlink(temporary)
        raise OutputError(path, _reason(exc)) from None
    except BaseException:
        os.unlink(temporary)
        raise
    return temporary
