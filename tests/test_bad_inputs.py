"""The bad input catalogue: deliberately wrong inputs and the one line chalk prints for each.

The catalogue lives in tests/bad_inputs/:

* ``cli.yaml``: a list of ``{name, args, expect}``; ``args`` is the argv of ``chalk`` (an item
  may be ``{before, repeat, times, after}`` to build a very long string).
* ``files/``: bad deduction files (``*.toml``), bad fit files (``fit_*.toml``) and bad price
  sheets (``*.yaml``), bad measurement files (``measurements_*.yaml``), with ``files.yaml``
  mapping each file name to ``{command: report | fit | imply | calibrate, expect}``. A report
  case runs ``chalk report FILE --html OUT/out.html --md OUT/out.md``, a fit case ``chalk fit
  FILE``, an imply case ``chalk imply FILE``, a calibrate case ``chalk calibrate --data FILE
  --save OUT/cal.yaml``, from the folder holding a copy of FILE.

Every case must exit with status 2, print nothing on stdout, print exactly ``expect`` plus a
newline on stderr (no traceback), and write nothing (no report, no plot, no file a code
payload would create).

Updating the snapshots: run

    CHALK_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_bad_inputs.py

and every ``expect`` field is rewritten from the message chalk actually prints instead of being
compared (the other checks still apply). Read every changed message afterwards
(``git diff tests/bad_inputs``): each must be one line that names what was wrong and says what
to do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
CATALOGUE = HERE / "bad_inputs"
CLI_CASES = CATALOGUE / "cli.yaml"
FILE_CASES = CATALOGUE / "files.yaml"
FILES = CATALOGUE / "files"
REPO = HERE.parent
UPDATE = os.environ.get("CHALK_UPDATE_SNAPSHOTS") == "1"


def _load(path: Path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


class _Dumper(yaml.SafeDumper):
    """Block style, except lists of plain strings and {repeat: ...} items: one line each."""


def _represent_list(dumper, data):
    flow = all(isinstance(item, (str, int)) or (isinstance(item, dict) and "repeat" in item)
               for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_dict(dumper, data):
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(),
                                    flow_style="repeat" in data)


def _represent_str(dumper, data):
    style = None if re.fullmatch(r"[A-Za-z0-9_.-]+", data) else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(str, _represent_str)


def _rewrite(path: Path, update) -> None:
    """Apply ``update`` to the loaded catalogue and write it back, keeping the header comment."""
    text = path.read_text(encoding="utf-8")
    header = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    data = yaml.safe_load(text)
    update(data)
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100_000)
    path.write_text("\n".join(header) + "\n" + body, encoding="utf-8")


def _arg(item) -> str:
    if isinstance(item, dict):
        return item.get("before", "") + item["repeat"] * int(item["times"]) + item.get("after", "")
    return str(item)


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _conforms(status, out, err) -> bool:
    return (status == 2 and out == "" and err.startswith("chalk: error: ")
            and err.endswith("\n") and err.count("\n") == 1)


def _check(status, out, err, case, record) -> None:
    """The checks every case gets; ``expect`` is compared, or rewritten in update mode."""
    if UPDATE:
        record(err[:-1] if _conforms(status, out, err) else "")
    elif case["expect"] or not case.get("known_bug"):
        assert err == case["expect"] + "\n"
    assert status == 2, f"status {status}, stderr {err[-300:]!r}"
    assert out == ""
    assert "Traceback" not in err
    assert _conforms(status, out, err)


def _params(cases: list[tuple[str, dict]]):
    """A case with ``known_bug: WHAT CHALK DOES`` is a strict xfail until chalk is fixed."""
    return [pytest.param(key, id=key, marks=[pytest.mark.xfail(
                reason=case["known_bug"], strict=True)] if case.get("known_bug") else [])
            for key, case in cases]


def _command(name: str) -> str:
    """The command a catalogue file is given to, by its name."""
    if not name.endswith(".toml"):
        return "calibrate" if name.startswith("measurements_") else "imply"
    return "fit" if name.startswith("fit_") else "report"


CLI = _load(CLI_CASES)
FILE_MAP = _load(FILE_CASES)


def test_catalogue_is_well_formed():
    names = [case["name"] for case in CLI]
    assert len(names) == len(set(names)), "case names must be unique"
    for case in CLI:
        assert {"name", "args", "expect"} <= set(case) <= {"name", "args", "expect",
                                                           "known_bug"}, case["name"]
    on_disk = sorted(p.name for p in FILES.iterdir())
    assert on_disk == sorted(FILE_MAP), "files/ and files.yaml must list the same files"
    for name, case in FILE_MAP.items():
        assert {"command", "expect"} <= set(case) <= {"command", "expect", "known_bug"}, name
        assert case["command"] == _command(name), name


@pytest.mark.parametrize("name", _params([(case["name"], case) for case in CLI]))
def test_cli_case(run_cli, name, tmp_path, monkeypatch):
    case = next(c for c in CLI if c["name"] == name)
    monkeypatch.chdir(tmp_path)  # relative outputs (plots, code payloads) would land here
    status, out, err = run_cli(*[_arg(a) for a in case["args"]])

    def record(message):
        def update(data):
            for entry in data:
                if entry["name"] == name:
                    entry["expect"] = message
        _rewrite(CLI_CASES, update)

    _check(status, out, err, case, record)
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("name", _params(sorted(FILE_MAP.items())))
def test_file_case(run_cli, name, tmp_path, monkeypatch):
    case = FILE_MAP[name]
    folder, outputs = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    outputs.mkdir()
    shutil.copy(FILES / name, folder / name)
    monkeypatch.chdir(folder)  # messages then name the file as typed: its bare name
    if case["command"] == "report":
        argv = ["report", name, "--html", str(outputs / "out.html"),
                "--md", str(outputs / "out.md")]
    elif case["command"] == "calibrate":
        argv = ["calibrate", "--data", name, "--save", str(outputs / "cal.yaml")]
    else:
        argv = [case["command"], name]
    status, out, err = run_cli(*argv)

    def record(message):
        def update(data):
            data[name]["expect"] = message
        _rewrite(FILE_CASES, update)

    _check(status, out, err, case, record)
    assert _listing(outputs) == []
    assert _listing(folder) == [name]  # e.g. no 'pwned' from a payload


def test_console_script_does_not_run_injected_code(tmp_path):
    """The real console entry (a fresh process) refuses a code payload and runs none of it."""
    case = next(c for c in CLI if c["name"] == "code_value_touch_marker")
    argv = [_arg(a) for a in case["args"]]
    assert "touch pwned" in " ".join(argv)
    done = subprocess.run([sys.executable, "-m", "chalk", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    if not UPDATE:
        assert done.stderr == case["expect"] + "\n"
    assert not (tmp_path / "pwned").exists()
    assert _listing(tmp_path) == []
