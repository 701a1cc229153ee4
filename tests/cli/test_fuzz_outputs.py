"""Fuzz tier for output destinations (issue 26): hostile ``--html``/``--md``/``--out`` paths.

Each example builds a small world in a fresh folder (the deduction file read, a hard link to
it, existing outputs, a folder, a symbolic link to a file that must survive, a dangling link,
a FIFO) and runs ``chalk`` in-process with generated destinations: names from that world,
``.``, ``''``, a trailing slash, a missing folder, a device, ``/sys``, a 300-character name,
wrong suffixes, and arbitrary Unicode names. Every run must either exit 0 having written
exactly the declared outputs (nothing else changed), or exit 2 with one line on stderr and
nothing changed at all. Whether a run is refused is predicted independently from the
filesystem, so a writer that refuses everything fails as surely as one that writes anything.

``CHALK_FUZZ_EXAMPLES`` raises the number of report examples (default 40, about a second)
for a longer search.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from conftest import snapshot_tree
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

QUESTION = ('title = "t"\n[[questions]]\ntitle = "Critical batch"\n'
            'targets = ["critical_batch_size"]\npresets = ["lecture"]\n'
            'pins = { sparsity_factor = "8" }\n')
HTML, MARKDOWN = (".html", ".htm"), (".md", ".markdown")
# Outside the example's folder: only places chalk must refuse (never write to) as root.
FOREIGN = ("/dev/null", "/sys/x.md", "/sys/x.html", "/proc/x.md")
NAMED = ("in.toml", "./in.toml", "dir/../in.toml", "hard.md", "old.html", "old.md",
         "new.html", "new.md", "dir/new.md", "dir/new.html", "dir", "dir/", ".", "..", "",
         "link.html", "dangle.md", "pipe.md", "missing/x.html", "x.pdf", "X.HTML", "new.MD",
         "a" * 300 + ".md", "victim.txt", " spaced.md", "ünïcode.html", "-dash.md",
         "new.html.md", *FOREIGN)
ODD = st.tuples(st.text(st.characters(blacklist_categories=("Cs",),
                                      blacklist_characters="/\0"), max_size=12),
                st.sampled_from(("", *HTML, *MARKDOWN, ".pdf", ".HTML", ".Md"))
                ).map("".join)
# plain names a report may write, so that enough runs succeed to check what they write
PLAIN = st.sampled_from(("new.html", "old.html", "dir/new.html", "new.md", "old.md",
                         "dir/new.md"))
DESTINATION = st.one_of(st.none(), st.sampled_from(NAMED), ODD, PLAIN)
PROFILE = settings(max_examples=int(os.environ.get("CHALK_FUZZ_EXAMPLES", "40")), deadline=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])


def _world(folder: Path) -> None:
    (folder / "in.toml").write_text(QUESTION)
    os.link(folder / "in.toml", folder / "hard.md")
    (folder / "old.html").write_text("old html")
    (folder / "old.md").write_text("old markdown")
    (folder / "dir").mkdir()
    (folder / "dir" / "keep.txt").write_text("keep")
    (folder / "victim.txt").write_text("the link's target")
    (folder / "link.html").symlink_to(folder / "victim.txt")
    (folder / "dangle.md").symlink_to(folder / "nowhere.md")
    os.mkfifo(folder / "pipe.md")


def _where(path: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(os.path.realpath(folder or "."), name)


def _refused(path: str, suffixes: tuple[str, ...]) -> bool:
    """Whether chalk must refuse to write ``path`` (relative to the current folder), from
    the filesystem alone."""
    name = os.path.basename(path)
    if not path or path.endswith("/") or name in ("", ".", ".."):
        return True
    if path in FOREIGN or Path(path).suffix.lower() not in suffixes:
        return True
    if len(os.fsencode(name)) > 255 or not os.path.isdir(os.path.dirname(path) or "."):
        return True
    if os.path.lexists(path):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return True
        return os.path.samefile(path, "in.toml")
    return False


def _check_run(run_cli, folder: Path, argv: list[str], declared: list[str],
               refused: bool) -> None:
    before = snapshot_tree(folder)
    event("refused" if refused else "written")  # both kinds, in --hypothesis-show-statistics
    status, out, err = run_cli(*argv)
    assert "Traceback" not in err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    if refused:
        assert status == 2, (argv, out, err)
        assert out == "" and err.startswith("chalk: error: cannot write ") and \
            err.endswith("\n") and err.count("\n") == 1, (argv, err)
        assert snapshot_tree(folder) == before, argv
        return
    assert (status, err) == (0, ""), (argv, err)
    after = snapshot_tree(folder)
    written = {_where(p) for p in declared}
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert set(before) <= set(after), "a file disappeared"
    assert {_where(p) for p in changed} <= written, (argv, changed)
    for path in declared:
        assert stat.S_ISREG(os.lstat(path).st_mode) and os.path.getsize(path) > 0


@PROFILE
@given(html=DESTINATION, markdown=DESTINATION)
def test_report_destinations(run_cli, tmp_path, html, markdown):
    if html is None and markdown is None:
        markdown = "new.md"
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    _world(folder)
    home = os.getcwd()
    os.chdir(folder)
    try:
        argv, declared, refused = ["report", "in.toml"], [], False
        for option, path, suffixes in (("--html", html, HTML), ("--md", markdown, MARKDOWN)):
            if path is not None:
                argv.append(f"{option}={path}")  # '=' keeps a name like '-dash.md' a value
                declared.append(path)
                refused = refused or _refused(path, suffixes)
        if len(declared) == 2 and not refused and _where(declared[0]) == _where(declared[1]):
            refused = True  # one file for both
        _check_run(run_cli, folder, argv, declared, refused)
    finally:
        os.chdir(home)


SCHEDULE = ["plot", "pipeline_schedule", "--preset", "lecture", "--given", "pipeline_stages=4",
            "--given", "n_micro_batches=8"]


@pytest.mark.slow
@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(suffix=st.sampled_from((".png", ".svg", ".PNG", ".Svg", ".pdf", ".jpg", "",
                               ".png.pdf", ".svg.png")),
       svg=st.booleans())
def test_plot_suffix_matches_the_format_written(run_cli, tmp_path, suffix, svg):
    """A PNG never lands under a .pdf (or .svg) name, nor an SVG under .png."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    out = folder / f"figure{suffix}"
    argv = [*SCHEDULE, "--out", str(out), *(["--svg"] if svg else [])]
    last = out.suffix.lower()  # '.svg.png' names a PNG
    accepted = last in (".png", ".svg") and (not svg or last == ".svg")
    _check_run(run_cli, folder, argv, [str(out)], not accepted)
    if accepted:
        data = out.read_bytes()
        if last == ".png":
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
        else:
            assert b"<svg" in data[:2000]
