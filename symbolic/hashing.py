"""Hashing a frozen dataclass once: for values used as cache keys on every solve.

A frozen dataclass's generated ``__hash__`` hashes the tuple of its compared fields on
every call. Relations and variables key the caches of closed forms, gradients and pin
texts, so a warm solve hashed them thousands of times. Their fields never change, so the
same hash is computed once and kept in the instance (never pickled: string hashes
differ between processes).
"""

from __future__ import annotations

from dataclasses import fields

_KEPT = "_fields_hash"


def fields_hash(self) -> int:
    """The hash the dataclass would generate (its compared fields, in order), computed
    on the first call and kept. Assign it as ``__hash__`` in the class body."""
    try:
        return self.__dict__[_KEPT]
    except KeyError:
        value = hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare
                           and (f.hash is None or f.hash)))
        self.__dict__[_KEPT] = value  # frozen: the instance dict, not setattr
        return value


def state_without_hash(self) -> dict:
    """The instance's state for pickling and copying, without the kept hash. Assign it as
    ``__getstate__`` beside :func:`fields_hash`."""
    return {k: v for k, v in self.__dict__.items() if k != _KEPT}
