"""Deduction reports: run a deduction file (TOML) and render what it deduces.

::

    from chalk.report import build, markdown, render_html
    report = build("lecture")            # or a path to your own deduction file
    text, pngs = markdown(report)        # Markdown, and the plot files it links to
    page = render_html(report)           # one self-contained HTML file

A report opens with a summary table (each question, its answer, the lecture's number
where the file states one, and how far apart they are) and a table of contents; each
section then gives its answer, derivation, cross-checks and what would change it, and an
appendix lists every assumption once. The file format is described in
:mod:`chalk.report.deduction`.
"""

from chalk.report.html import render as render_html
from chalk.report.markdown import markdown
from chalk.report.report import Report, Section, build

__all__ = ["Report", "Section", "build", "markdown", "render_html"]
