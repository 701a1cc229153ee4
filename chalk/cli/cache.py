"""The on-disk cache of compiled questions: where it lives, what keys it, how it writes.

A key is a hash of everything that decides an answer apart from the numbers: chalk's
version and the bytes of every source and data file of the installed package (so a
changed relation, preset or solver never meets an entry made before the change), the
command, the targets, the presets, each pin's name and the unit its value is written
in, and the options. Entries are JSON files written to a temporary name and renamed
into place, so concurrent runs see a whole entry or none. Each entry carries a sha256 of
its own content (:func:`sealed`): an entry edited by hand or damaged on disk no longer
matches it and is ignored, as is one that cannot be read or is not a regular file; the
question is then solved in full. (The digest guards against accidents, not against
someone who recomputes it: the cache is the user's own.)

``CHALK_CACHE_DIR`` moves the cache (default: ``$XDG_CACHE_HOME/chalk`` or
``$HOME/.cache/chalk``; with neither set to an absolute path there is no cache);
``CHALK_NO_CACHE`` set to 1, true, yes or on turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

FORMAT = 5  # bump when the layout of an entry changes (2: the digest; 3: counts; 4: notes
#            as kind and data; 5: steps as trees of every form the engine compiles,
#            chalk.symbolic.ir)
_SUFFIXES = (".py", ".txt", ".yaml", ".toml")
_PACKAGES = ("chalk", "chalk.symbolic", "chalk.knowledge", "chalk.solvers")
_TRUTHY = ("1", "true", "yes", "on")
_LARGEST = 1 << 24  # bytes: far above any entry, so a stray huge file is not read


def enabled() -> bool:
    """Whether the cache is in use: ``CHALK_NO_CACHE`` not truthy (1, true, yes, on) and a
    folder to keep it in."""
    off = os.environ.get("CHALK_NO_CACHE", "").strip().lower() in _TRUTHY
    return not off and directory() is not None


def directory() -> Path | None:
    """Where entries are kept, or None if the environment names no sane place.

    An empty ``HOME`` would put the cache at ``/.cache/chalk`` and a relative
    ``XDG_CACHE_HOME`` would move it with the working folder (the XDG specification
    says to ignore one), so neither is used.
    """
    explicit = os.environ.get("CHALK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "chalk"
    home = os.environ.get("HOME", "")
    return Path(home) / ".cache" / "chalk" if os.path.isabs(home) else None


def hashed_files() -> dict[str, Path]:
    """Every source and data file of the installed package, by a label that names its
    package (``chalk.knowledge/batch.py``), in a fixed order."""
    files = {}
    for package in _PACKAGES:
        spec = find_spec(package)
        for folder in spec.submodule_search_locations or ():
            root = Path(folder)
            for path in sorted(root.rglob("*")):
                if path.suffix not in _SUFFIXES or "__pycache__" in path.parts:
                    continue
                inside = path.relative_to(root)
                if package == "chalk" and inside.parts[0] in ("symbolic", "knowledge",
                                                              "solvers"):
                    continue  # in a built wheel these are hashed under their own package
                files[f"{package}/{inside.as_posix()}"] = path
    return files


@lru_cache(maxsize=1)
def source_digest() -> str:
    """A hash of chalk's version and every source and data file of the package."""
    from chalk import __version__

    digest = hashlib.sha256(f"chalk {__version__} format {FORMAT}".encode())
    for label, path in hashed_files().items():
        digest.update(f"{label}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def key(shape: object) -> str:
    """The entry name for a question's shape (any JSON-ready value)."""
    text = json.dumps([source_digest(), shape], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def digest(entry: dict) -> str:
    """The sha256 of an entry's canonical JSON (sorted keys, no spaces), its ``digest``
    field left out: the same before writing and after reading back, since JSON gives
    every float back exactly."""
    body = {k: v for k, v in entry.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def sealed(entry: dict) -> dict:
    """``entry`` with its format and the digest :func:`load` checks it against."""
    body = {**entry, "format": FORMAT}
    return {**body, "digest": digest(body)}


def load(name: str) -> dict | None:
    """The entry called ``name``, or None if there is none, it is not a regular file, it
    cannot be read, or its content does not match its digest."""
    folder = directory()
    if folder is None:
        return None
    try:
        # O_NONBLOCK: a FIFO put where an entry belongs must not hang the command
        handle = os.open(folder / f"{name}.json", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _LARGEST:
            return None
        with os.fdopen(handle, "rb", closefd=False) as stream:
            entry = json.loads(stream.read(_LARGEST + 1).decode("utf-8"))
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            return None
        return entry if entry.get("digest") == digest(entry) else None
    except (OSError, ValueError, RecursionError):  # unreadable, not JSON, nested too deep
        return None
    finally:
        os.close(handle)


def store(name: str, entry: dict) -> bool:
    """Write an entry atomically; False (and nothing written) if it cannot be written.

    A cache that cannot be written never stops an answer: besides OS errors, a
    ``CHALK_CACHE_DIR`` too deep for pathlib (RecursionError) or one that is not a
    valid path (ValueError) only costs the entry."""
    folder = directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({**entry, "format": FORMAT}, out)
            os.replace(temporary, folder / f"{name}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (OSError, RecursionError, ValueError):
        return False
    return True
