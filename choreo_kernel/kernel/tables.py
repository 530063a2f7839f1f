"""A table as a mime bundle: HTML for notebooks, aligned text for consoles and text-only viewers.

`%sweep` and `%resources` both show one; a row can be flagged (a result that differs,
a point that failed) so that it stands out in either form.
"""

from __future__ import annotations

from html import escape

FLAG_STYLE = "color:#b91c1c;font-weight:bold"


def table_bundle(
    headers: list[str], rows: list[list[str]], flagged: set[int] | None = None, title: str = ""
) -> dict[str, str]:
    flagged = flagged or set()
    return {
        "text/html": _html(headers, rows, flagged, title),
        "text/plain": _text(headers, rows, flagged, title),
    }


def _text(headers: list[str], rows: list[list[str]], flagged: set[int], title: str) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows)]

    def line(cells: list[str], mark: str = " ") -> str:
        return (mark + " " + "  ".join(cell.ljust(width) for cell, width in zip(cells, widths))).rstrip()

    lines = [title] if title else []
    lines += [line(headers), line(["-" * width for width in widths])]
    lines += [line(row, "!" if index in flagged else " ") for index, row in enumerate(rows)]
    return "\n".join(lines)


def _html(headers: list[str], rows: list[list[str]], flagged: set[int], title: str) -> str:
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    body = "".join(
        f"<tr{f' style={FLAG_STYLE!r}' if index in flagged else ''}>"
        + "".join(f"<td>{escape(cell)}</td>" for cell in row)
        + "</tr>"
        for index, row in enumerate(rows)
    )
    caption = f"<caption style='text-align:left'>{escape(title)}</caption>" if title else ""
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
