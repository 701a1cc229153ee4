"""Printing for people: :mod:`.quantities` (numbers, units, dimensions; no sympy) and
:mod:`.expressions` (relations in plain text and LaTeX, values substituted)."""
