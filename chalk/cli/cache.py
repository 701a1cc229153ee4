"""The on-disk cache of compiled questions: where it lives, what keys it, how it writes.

A key is a hash of everything that decides an answer apart from the numbers: chalk's
version and the bytes of every source and data file of the installed package (so a
changed relation, preset or solver never meets an entry made before the change), the
command, the targets, the presets, each pin's name and the unit its value is written
in, and the options. Entries are JSON files written to a temporary name and renamed
into place, so concurrent runs see a whole entry or none; an entry that cannot be read
is ignored and the question is solved in full.

``CHALK_CACHE_DIR`` moves the cache (default: ``$XDG_CACHE_HOME/chalk`` or
``~/.cache/chalk``); ``CHALK_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

FORMAT = 1  # bump when the layout of an entry changes
_SUFFIXES = (".py", ".txt", ".yaml", ".toml")
_PACKAGES = ("chalk", "chalk.symbolic", "chalk.knowledge", "chalk.solvers")


def enabled() -> bool:
    """Whether the cache is in use (``CHALK_NO_CACHE`` unset or empty)."""
    return not os.environ.get("CHALK_NO_CACHE")


def directory() -> Path:
    """Where entries are kept."""
    explicit = os.environ.get("CHALK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "chalk"


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


def load(name: str) -> dict | None:
    """The entry called ``name``, or None if there is none or it cannot be read."""
    try:
        with open(directory() / f"{name}.json", encoding="utf-8") as handle:
            entry = json.load(handle)
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and entry.get("format") == FORMAT else None


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
