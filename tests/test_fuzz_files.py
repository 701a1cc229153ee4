"""Fuzz tier (issue 26): hostile price sheets, fit files and report files, generated.

Each file starts from a valid one (a sheet, docs/examples/fit_chips.toml, a one-question
report), has values swapped for random structures (wrong types, huge strings, numbers YAML
1.1 would convert, code), may gain a hostile line (an anchor bomb, a tag, a duplicate key,
deep nesting) and is written in UTF-8, UTF-16, Latin-1 or as random bytes. Whatever comes of
it, chalk must answer or refuse with a :class:`ChalkError`, quickly:

* the fast tests call the readers (:func:`read_sheets`, :func:`load_spec`, :func:`load`);
* the slow test runs the command (``chalk imply``, ``chalk fit``, ``chalk report``) in
  process and checks exit status 0 or 2, one line on stderr and no traceback, and that
  nothing but the declared outputs is written.
"""

from __future__ import annotations

import copy
import io
import json
import math
import tempfile
import time
import tomllib
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml
from chalk.symbolic.errors import ChalkError
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
SECONDS = 10  # a refusal takes milliseconds; this bounds a file that is read and checked

SHEET = {"id": "fuzz_sheet", "provider": "Fuzz", "model": "Model", "source": "a test",
         "date": "2026-01-01",
         "prices": {"input": "1.25 USD/Mtoken", "output": "10 USD/Mtoken",
                    "cache_read": "0.125 USD/Mtoken"},
         "long_context": {"threshold": "200k token", "input": "2.5 USD/Mtoken"},
         "cache_writes": [{"hold_time": "5 min", "price": "1.5 USD/Mtoken"}],
         "fast_mode": {"price_ratio": "6", "speedup": "2.5"}}
with open(REPO / "docs" / "examples" / "fit_chips.toml", "rb") as _handle:
    FIT = tomllib.load(_handle)
REPORT = {"title": "Fuzz", "samples": 200,
          "questions": [{"title": "Drain time", "targets": ["hbm_drain_time"],
                         "pins": {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"}}]}

# Values the readers must judge: YAML 1.1 numbers, dates, specials, units, code
TRICKY = ["010", "0x10", "0b11", "0o17", "1:30", "2026-13-45", "2026-02-29", "nan", ".nan",
          "inf", "1e400", "-1", "0", "3 \u03bcs", "1.25 USD/Mtoken", "200k token", "yes", "~",
          "1..10 s", "lognormal(24 ms, 1e-300)", "normal(1 s, -1 s)", "1e300 GB",
          "__import__('os').system('touch pwned')", "${HOME}", "\x00", "\u202e", "-"]
KEYS = ["id", "provider", "model", "source", "date", "note", "estimate", "value", "prices",
        "input", "output", "cache_read", "cache_storage", "long_context", "threshold",
        "cache_writes", "hold_time", "price", "fast_mode", "price_ratio", "speedup", "preset",
        "title", "description", "samples", "seed", "questions", "targets", "pins", "presets",
        "unknowns", "subjects", "observations", "quantity", "subject", "prior", "per",
        "labels", "loss", "outlier_z", "sweeps", "plots", "fits", "over", "steps", "log",
        "sheet", "name", "file", "atlas", "regime", "lecture"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(), st.text(max_size=20), st.sampled_from(TRICKY),
    st.integers(min_value=0, max_value=6000).map(lambda n: "9" * n),
)
trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def mutated(draw, base: dict) -> dict:
    """``base`` with up to three values replaced, keys added or keys removed, anywhere."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        node = data
        while True:
            children = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not children or not draw(st.booleans()):
                break
            child = node[draw(st.sampled_from(children))]
            if not isinstance(child, (dict, list)):
                break
            node = child
        if isinstance(node, dict):
            action = draw(st.sampled_from(["replace", "add", "remove"]))
            if action == "remove" and node:
                del node[draw(st.sampled_from(sorted(node)))]
            elif action == "replace" and node:
                node[draw(st.sampled_from(sorted(node)))] = draw(trees)
            else:
                node[draw(st.sampled_from(KEYS) | st.text(max_size=12))] = draw(trees)
        elif node:
            node[draw(st.integers(min_value=0, max_value=len(node) - 1))] = draw(trees)
        else:
            node.append(draw(trees))
    return data


def _toml_key(key) -> str:
    return _toml_string(str(key))


def _toml_string(text: str) -> str:
    # JSON's escapes are TOML's, but for DEL, which TOML wants escaped too
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value) -> str:
    if value is None:
        return '""'  # TOML has no null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") \
            if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


def toml_text(data: dict) -> str:
    """``data`` as TOML, every table inline (a fuzzer's TOML, not a person's)."""
    return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in data.items())


def yaml_text(data) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


YAML_LINES = ['bomb: [&a ["x","x","x","x","x","x","x","x"], &b [*a,*a,*a,*a,*a,*a,*a,*a], '
              '&c [*b,*b,*b,*b,*b,*b,*b,*b], &d [*c,*c,*c,*c,*c,*c,*c,*c], '
              '&e [*d,*d,*d,*d,*d,*d,*d,*d], &f [*e,*e,*e,*e,*e,*e,*e,*e], '
              '&g [*f,*f,*f,*f,*f,*f,*f,*f]]',
              "source: !!python/object/apply:os.system ['touch pwned']",
              "id: fuzz_sheet", "self: &s [1, *s]", "? [a]\n: 1", "--- \nid: again",
              "note: " + "[" * 3000 + "]" * 3000, "prices: {input: 1:30, output: 0x10}"]
TOML_LINES = ["title = 'again'", "x = " + "[" * 3000 + "]" * 3000,
              "y = " + "{a = " * 1000 + "1" + "}" * 1000, ".".join(["k"] * 500) + " = 1",
              "n = " + "9" * 5000, "[[questions]]", "d = 2026-13-45"]


@st.composite
def hostile_bytes(draw, text: str, lines: list[str]) -> bytes:
    """``text`` with perhaps a hostile line, in some encoding, or random bytes."""
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        return draw(st.binary(max_size=300))
    if draw(st.booleans()):
        text += draw(st.sampled_from(lines)) + "\n"
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16",
                                     "latin-1"]))
    return text.encode(encoding, errors="replace")


sheets = mutated(SHEET).map(yaml_text).flatmap(lambda t: hostile_bytes(t, YAML_LINES))
fits = mutated(FIT).map(toml_text).flatmap(lambda t: hostile_bytes(t, TOML_LINES))
reports = mutated(REPORT).map(toml_text).flatmap(lambda t: hostile_bytes(t, TOML_LINES))


def _reads_or_refuses(read, data: bytes, name: str) -> None:
    """``read`` (of a path) returns, or raises a ChalkError, within :data:`SECONDS`."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        started = time.perf_counter()
        try:
            read(path)
        except ChalkError as exc:
            assert "\n" not in exc.message
        assert time.perf_counter() - started < SECONDS


FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(sheets)
def test_hostile_sheets_are_read_or_refused(data):
    from chalk.knowledge.price_sheets import read_sheets

    _reads_or_refuses(lambda p: read_sheets(p, personal=True), data, "sheet.yaml")


@FAST
@given(fits)
def test_hostile_fit_files_are_read_or_refused(data):
    from chalk.knowledge import load_model

    from chalk.applications.fit.spec import load_spec

    _reads_or_refuses(lambda p: load_spec(p, load_model()), data, "fit.toml")


@FAST
@given(reports)
def test_hostile_report_files_are_read_or_refused(data):
    from chalk.report.deduction import load

    _reads_or_refuses(lambda p: load(str(p)), data, "report.toml")


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.slow
@settings(max_examples=45, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(sheets.map(lambda d: ("imply", d)), fits.map(lambda d: ("fit", d)),
                 reports.map(lambda d: ("report", d))))
def test_hostile_files_through_the_command_line(case):
    """An answer (status 0) or one line and status 2; no traceback; nothing else written."""
    from chalk.cli.main import main

    command, data = case
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        name = "sheet.yaml" if command == "imply" else f"{command}.toml"
        (folder / name).write_bytes(data)
        argv = [command, str(folder / name)]
        outputs = []
        if command == "report":
            outputs = ["out.md"]
            argv += ["--md", str(folder / "out.md")]
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        with redirect_stdout(out), redirect_stderr(err):
            status = main(argv)
        # a valid sheet or fit is worked out in full: the first one compiles its questions
        assert time.perf_counter() - started < 120
        err = err.getvalue()
        event(f"chalk {command}: status {status}")  # shown by --hypothesis-show-statistics
        assert "Traceback" not in err
        assert status in (0, 2), err[-300:]
        if status == 2:
            assert err.startswith("chalk: error: ") and err.count("\n") == 1, err[-300:]
            assert out.getvalue() == ""
            assert _listing(folder) == [name]
        else:
            assert set(_listing(folder)) <= {name, *outputs}
