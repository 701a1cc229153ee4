"""The command line's parser class and the options its commands share.

Light on purpose: the cached path of ``chalk solve`` parses its arguments with
:func:`solve_parser` before anything heavy is imported.
"""

from __future__ import annotations

import argparse


def add_pin_options(parser, json: bool = True,
                    given_help: str = "a known quantity, e.g. \"hbm_bandwidth=3.35 TB/s\" "
                                      "(repeatable)") -> None:
    """The -g/--given and -p/--preset options every command shares (and --json)."""
    parser.add_argument("-g", "--given", action="append", default=[], metavar='"NAME=VALUE UNIT"',
                        help=given_help)
    parser.add_argument("-p", "--preset", action="append", default=[], metavar="NAME",
                        help="apply a preset (conventions, accelerator, model); repeatable")
    if json:
        parser.add_argument("--json", action="store_true", help="print one JSON object")


def add_quiet(parser) -> None:
    """The --quiet option: every command takes it, so a script can pass it to any."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress line on the terminal (none is drawn when stderr "
                             "is not a terminal either)")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: a mistake raises :class:`UsageProblem` (status 2,
    no usage dump) instead of exiting."""

    def error(self, message):
        raise UsageProblem(f"{message}; see '{self.prog} --help'")


class UsageProblem(Exception):
    """A command line argparse cannot read."""


def add_question(parser):
    """The targets and pin options of ``solve`` and ``explain``."""
    parser.add_argument("targets", nargs="+", metavar="TARGET", help="quantities to determine")
    add_pin_options(parser)


def add_solve(commands) -> None:
    """The ``solve`` command and its options."""
    solve = commands.add_parser("solve", help="solve for quantities from pins",
                                description="Solve for TARGETs from pins and presets.")
    add_question(solve)
    solve.add_argument("--regime", choices=["compute-bound", "memory-bound"],
                       help="resolve a max(compute, memory) that both regimes could satisfy")
    solve.add_argument("--rtol", type=float, default=None,
                       help="relative tolerance for cross-checks of surplus pins (default 0.01)")
    solve.add_argument("--samples", type=int, default=None, metavar="N",
                       help="Monte Carlo samples when a pin is a range (default 100000)")
    solve.add_argument("--seed", type=int, default=0, help="random seed for the samples")
    solve.add_argument("--brief", action="store_true",
                       help="the answers, flags and one line per assumption; no pin table "
                            "or derivation")
    solve.add_argument("--calibrated", nargs="?", const="", default=None,
                       metavar="CHIP/ENGINE",
                       help="answer a rate (token/s) at the efficiencies calibrated for "
                            "CHIP/ENGINE (none: a group not calibrated), with a 90%% "
                            "prediction interval and the bound (docs/CALIBRATE.md)")
    solve.add_argument("--calibration", metavar="FILE",
                       help="with --calibrated: a calibration written by chalk calibrate "
                            "--save (default: fit the shipped measurements, tens of seconds)")
    add_quiet(solve)


def solve_parser() -> argparse.ArgumentParser:
    """A parser for ``chalk solve`` alone, the same options as in
    :func:`chalk.cli.main.build_parser`,
    without loading what the other commands need (for the cached path)."""
    parser = Parser(prog="chalk")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    add_solve(commands)
    return parser
