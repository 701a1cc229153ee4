"""Command-line options every command shares."""

from __future__ import annotations


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
