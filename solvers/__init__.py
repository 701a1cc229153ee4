"""The engine: dependency graph, solve plan, symbolic and numeric solving,
derivations, the Python API and the command line."""
