"""Pins and preparation: what is known, where it comes from, and what gives way.

``pinned`` (plain data), ``pins`` (reading and layering what the user gave),
``yielding`` (lower layers giving way), ``zeros`` (absent terms) and ``variants``
(kinds of model whose relations exclude each other).
"""

from chalk.solvers.lazy import exports

__getattr__, __dir__ = exports(__name__, {
    'Pin': 'pinned',
    'Layer': 'pinned',
    'resolve_pins': 'pins',
    'read_value': 'pins',
    'yield_defaults': 'yielding',
    'put_zeros': 'zeros',
    'for_pins': 'variants',
})
