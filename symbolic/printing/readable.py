"""Result objects that print themselves: a short repr, and their text in a notebook."""

from __future__ import annotations


class Readable:
    """A mix-in for a result with a ``text()`` form.

    Its ``repr`` is the class name and the text's first line (a result's headline), not
    the dataclass fields, which for most results run to pages of arrays and models; in a
    notebook it shows its whole text (``_repr_markdown_``).
    """

    def text(self) -> str:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [line.strip() for line in self.text().splitlines() if line.strip()]
        head = lines[0] if lines else ""
        if len(head) > 100:
            head = head[:97] + "..."
        more = "; .text() has the rest" if len(lines) > 1 else ""
        return f"<{type(self).__name__}: {head}{more}>"

    def _repr_markdown_(self) -> str:
        return "```text\n" + self.text() + "\n```"
