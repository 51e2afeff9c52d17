"""Plain-text tables the commands print (summaries, the model, the
oracle's ranking): cells formatted and aligned in columns."""

from __future__ import annotations


def fmt(x, spec="{:.3f}") -> str:
    return "-" if x is None else spec.format(x)


def align(rows: list[tuple[str, ...]], indent: str = "") -> str:
    """Rows of cells as left-aligned columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
