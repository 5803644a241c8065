"""The CSV snapshot of `kandev.rich_output.v1`: read each CSV once, during the call, and freeze it.

docs/contracts.md section 3. Replay uses the snapshot stored in the ToolResult and never reads the
file again; the CSV bytes themselves are never kept.

Reading is hostile-input safe: the real path (symlinks resolved, loops reported) must stay inside
the real workspace and be a regular file; the file is opened `O_NONBLOCK | O_NOFOLLOW` and
re-checked with `fstat` (a FIFO never blocks, a swapped file is refused), and at most
`max_csv_bytes + 1` bytes are read.

Decisions the spec leaves open:
- `\\` in a path is read as `/` (the path rule reads it so too); a workspace cannot address a
  file whose name holds a backslash.
- Cells and header names are trimmed (Unicode whitespace); a cell that is empty after trimming is
  `null`. A blank line is a row of one empty field, so it only fits a one-column header.
- Numbers follow the JSON number grammar after trimming
  (`-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?`, ASCII digits, at most 1000
  characters): no `+`, `.5`, `5.`, `1_000`, `0x10`, `inf`, `NaN`.
  An integer literal that fits in 64 signed bits stays an int; a larger one becomes a float;
  anything with a fraction or exponent is a float; a float that overflows (`1e999`) is an error.
- A field longer than 131,072 characters or a header wider than 16,384 columns is an error.

Codes: `workspace_unavailable`, `csv_not_found`, `csv_symlink_loop`, `csv_outside_workspace`,
`csv_not_regular_file`, `csv_unreadable`, `csv_changed_during_read`, `csv_too_large`,
`csv_nul_byte`, `csv_invalid_utf8`, `csv_malformed`, `csv_field_too_large`, `csv_empty`,
`csv_too_many_columns`, `csv_blank_header`, `csv_duplicate_header`, `csv_unknown_column`,
`csv_ragged_row`, `csv_no_rows`, `csv_too_many_rows`, `csv_blank_label`, `csv_label_too_long`,
`csv_invalid_number`, `csv_not_finite`, `snapshot_too_large`.
"""

from __future__ import annotations

import csv
import io
import math
import os
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from schemas import rich_output_codes as tool_codes
from schemas.codes import Code
from schemas.issue import Issue, child_path, json_path
from schemas.rich_output import CsvChartBlock, RichOutputArgs
from streams.files.paths import FileRefused, read_regular, reason, resolve_inside

DEFAULT_MAX_CSV_BYTES = 256 * 1024
MAX_SNAPSHOT_BYTES = 64 * 1024
MAX_DATA_ROWS = 100
MAX_LABEL_CHARS = 120
MAX_COLUMNS = 16_384
MAX_FIELD_CHARS = 131_072
MAX_NUMBER_CHARS = 1000
_BOM = b"\xef\xbb\xbf"
_I64 = 2**63
# The JSON number grammar; no nested or overlapping quantifiers, so no backtracking blow-up.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")

Cell = int | float | None


class CsvProblem(Exception):
    """A file that cannot be snapshotted: a stable code and a message saying where and why,
    worded by the code's own template (`form`, `ctx`: see `Code.message`)."""

    def __init__(self, code: Code, form: str = "", /, **ctx: object) -> None:
        message = code.message(form, **ctx)
        super().__init__(message)
        self.code = code.name
        self.message = message


@dataclass(frozen=True, slots=True)
class Table:
    """A parsed CSV: trimmed header names, and each data row with its line in the file."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    lines: tuple[int, ...]

    def column(self, name: str) -> int | None:
        try:
            return self.header.index(name)
        except ValueError:
            return None


# --------------------------------------------------------------------------- reading


def resolve_workspace(workspace_dir: Path) -> str:
    """The real workspace folder; it must exist and be a folder."""
    try:
        real = os.path.realpath(workspace_dir, strict=True)
    except (OSError, ValueError, RuntimeError) as exc:
        raise CsvProblem(tool_codes.WORKSPACE_UNAVAILABLE, "csv", reason=reason(exc)) from None
    if not os.path.isdir(real):
        raise CsvProblem(tool_codes.WORKSPACE_UNAVAILABLE, "not_folder")
    return real


def relative_key(repo: str | None, path: str) -> str:
    """Where `(repo, path)` points inside the workspace; equal keys are read once per call."""
    joined = path if not repo else f"{repo}/{path}"
    return posixpath.normpath(joined.replace("\\", "/"))


def _problem(refused: FileRefused) -> CsvProblem:
    """The path rule's refusal as this stage's code (each written out: the code scan reads them)."""
    match refused.kind:
        case "not_found":
            return CsvProblem(tool_codes.CSV_NOT_FOUND)
        case "loop":
            return CsvProblem(tool_codes.CSV_SYMLINK_LOOP)
        case "outside":
            return CsvProblem(tool_codes.CSV_OUTSIDE_WORKSPACE)
        case "not_regular":
            return CsvProblem(tool_codes.CSV_NOT_REGULAR_FILE)
        case "changed":
            return CsvProblem(tool_codes.CSV_CHANGED_DURING_READ, refused.step)
        case _:  # the refusing step is the code's form; its cause fills it
            return CsvProblem(tool_codes.CSV_UNREADABLE, refused.step, cause=refused.cause)


def read_csv_bytes(workspace_real: str, rel: str, max_bytes: int) -> bytes:
    """The file's bytes (at most `max_bytes + 1`), or CsvProblem; the one place that reads."""
    try:
        return read_regular(resolve_inside(workspace_real, rel, strict=True), max_bytes + 1)
    except FileRefused as refused:
        raise _problem(refused) from None


# --------------------------------------------------------------------------- parsing


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode_csv(data: bytes, max_bytes: int) -> str:
    """UTF-8 text of a CSV file: BOM dropped, NUL and invalid UTF-8 refused with their place."""
    if len(data) > max_bytes:
        raise CsvProblem(tool_codes.CSV_TOO_LARGE, limit=max_bytes)
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    nul = data.find(b"\0")
    if nul >= 0:
        raise CsvProblem(tool_codes.CSV_NUL_BYTE, offset=nul, line=_line_of(data, nul))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CsvProblem(
            tool_codes.CSV_INVALID_UTF8, offset=exc.start, line=_line_of(data, exc.start)
        ) from None


def _records(text: str) -> Iterator[tuple[int, list[str]]]:
    """CSV records with the file line each ends on; csv errors become CsvProblem."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            line = reader.line_num
            if "field larger than field limit" in str(exc):
                raise CsvProblem(tool_codes.CSV_FIELD_TOO_LARGE, "reader", line=line) from None
            raise CsvProblem(tool_codes.CSV_MALFORMED, line=line, error=exc) from None
        yield reader.line_num, record or [""]


def _check_fields(record: list[str], line: int) -> None:
    if len(record) > MAX_COLUMNS:
        raise CsvProblem(
            tool_codes.CSV_TOO_MANY_COLUMNS, line=line, fields=len(record), limit=MAX_COLUMNS
        )
    for col, field in enumerate(record, 1):
        if len(field) > MAX_FIELD_CHARS:
            raise CsvProblem(
                tool_codes.CSV_FIELD_TOO_LARGE, line=line, col=col, limit=MAX_FIELD_CHARS
            )


def _header(record: list[str], line: int) -> tuple[str, ...]:
    _check_fields(record, line)
    names = tuple(name.strip() for name in record)
    first: dict[str, int] = {}
    for col, name in enumerate(names, 1):
        if not name:
            raise CsvProblem(tool_codes.CSV_BLANK_HEADER, line=line, col=col)
        if name in first:
            raise CsvProblem(
                tool_codes.CSV_DUPLICATE_HEADER, line=line, name=name, first=first[name], col=col
            )
        first[name] = col
    return names


def parse_table(text: str) -> Table:
    """Header and 1-100 data rows, every row exactly as wide as the header."""
    records = _records(text)
    first = next(records, None)
    if first is None:
        raise CsvProblem(tool_codes.CSV_EMPTY, limit=MAX_DATA_ROWS)
    header = _header(first[1], first[0])
    rows: list[tuple[str, ...]] = []
    lines: list[int] = []
    for line, record in records:
        if len(rows) == MAX_DATA_ROWS:
            raise CsvProblem(tool_codes.CSV_TOO_MANY_ROWS, limit=MAX_DATA_ROWS, line=line)
        _check_fields(record, line)
        if len(record) != len(header):
            raise CsvProblem(
                tool_codes.CSV_RAGGED_ROW,
                row=len(rows) + 1,
                line=line,
                fields=len(record),
                header=len(header),
            )
        rows.append(tuple(record))
        lines.append(line)
    if not rows:
        raise CsvProblem(tool_codes.CSV_NO_ROWS, limit=MAX_DATA_ROWS)
    return Table(header, tuple(rows), tuple(lines))


def _preview(token: str) -> str:
    """A cell quoted in a message, cut short so a huge cell cannot flood the error text."""
    return repr(token if len(token) <= 40 else token[:40] + "...")


def parse_number(cell: str) -> Cell:
    """`null` for a blank cell, else a finite JSON-grammar number (ValueError says why not)."""
    token = cell.strip()
    if not token:
        return None
    match = _NUMBER.fullmatch(token) if len(token) <= MAX_NUMBER_CHARS else None
    if match is None:
        raise ValueError(_preview(token))  # the cell, quoted short: csv_invalid_number says why
    if match.group(1) is None and match.group(2) is None:
        value = int(token)
        if -_I64 <= value < _I64:
            return value
    number = float(token)
    if not math.isfinite(number):
        raise OverflowError(token[:40])  # csv_not_finite says why
    return number


def _where(table: Table, row: int, col: int) -> str:
    return f"data row {row + 1} (line {table.lines[row]}), column {col + 1} ({table.header[col]!r})"


def _labels(table: Table, col: int) -> list[str]:
    labels: list[str] = []
    for row, record in enumerate(table.rows):
        label = record[col].strip()
        if not label:
            raise CsvProblem(tool_codes.CSV_BLANK_LABEL, where=_where(table, row, col))
        if len(label) > MAX_LABEL_CHARS:
            raise CsvProblem(
                tool_codes.CSV_LABEL_TOO_LONG,
                where=_where(table, row, col),
                length=len(label),
                limit=MAX_LABEL_CHARS,
            )
        labels.append(label)
    return labels


def _values(table: Table, col: int) -> list[Cell]:
    values: list[Cell] = []
    for row, record in enumerate(table.rows):
        try:
            values.append(parse_number(record[col]))
        except OverflowError:
            raise CsvProblem(tool_codes.CSV_NOT_FINITE, where=_where(table, row, col)) from None
        except ValueError as exc:
            where = _where(table, row, col)
            raise CsvProblem(tool_codes.CSV_INVALID_NUMBER, where=where, cell=exc) from None
    return values


# --------------------------------------------------------------------------- one chart


def header_list(header: Sequence[str], most: int = 20, chars: int = 60) -> str:
    """The headers found, as `csv_unknown_column` lists them (bounded): a `;`-separated file
    shows as one header holding every name."""
    shown = ", ".join(repr(name[:chars]) for name in header[:most])
    return shown + (f", ... ({len(header)} in all)" if len(header) > most else "")


def _columns(table: Table, block: CsvChartBlock, base: str) -> tuple[int, list[int], list[Issue]]:
    """Header positions of x_column and every series column; exact, after header trimming."""
    issues: list[Issue] = []
    found = header_list(table.header)
    x = table.column(block.csv.x_column)
    if x is None:
        issues.append(
            tool_codes.CSV_UNKNOWN_COLUMN.issue(
                child_path(base, "csv", "x_column"), column=block.csv.x_column, headers=found
            )
        )
    cols: list[int] = []
    for j, series in enumerate(block.csv.series):
        col = table.column(series.column)
        if col is None:
            issues.append(
                tool_codes.CSV_UNKNOWN_COLUMN.issue(
                    child_path(base, "csv", "series", j, "column"),
                    column=series.column,
                    headers=found,
                )
            )
        else:
            cols.append(col)
    return (x if x is not None else -1), cols, issues


def resolve_chart(table: Table, block: CsvChartBlock, index: int) -> tuple[Any, list[Issue]]:
    """One `resolved_charts` entry from a parsed table, or the issues that prevent it."""
    base = json_path("blocks", index)
    x, cols, issues = _columns(table, block, base)
    if issues:
        return None, issues
    try:
        labels = _labels(table, x)
        series = [
            {"label": s.label if s.label is not None else s.column, "values": _values(table, col)}
            for s, col in zip(block.csv.series, cols, strict=True)
        ]
    except CsvProblem as problem:
        return None, [Issue(child_path(base, "csv", "path"), problem.code, problem.message)]
    return {"block_index": index, "labels": labels, "series": series}, []


# --------------------------------------------------------------------------- the call


def _load(workspace_real: str, key: str, max_csv_bytes: int) -> Table:
    return parse_table(
        decode_csv(read_csv_bytes(workspace_real, key, max_csv_bytes), max_csv_bytes)
    )


def snapshot_charts(
    args: RichOutputArgs, workspace_dir: Path, max_csv_bytes: int = DEFAULT_MAX_CSV_BYTES
) -> tuple[dict[str, Any] | None, list[Issue]]:
    """The snapshot of every CSV chart, in block order; None when no chart reads a CSV."""
    return snapshot_of(args.csv_charts(), workspace_dir, max_csv_bytes)


def snapshot_of(
    charts: list[tuple[int, CsvChartBlock]],
    workspace_dir: Path,
    max_csv_bytes: int = DEFAULT_MAX_CSV_BYTES,
) -> tuple[dict[str, Any] | None, list[Issue]]:
    """The snapshot of these charts (`(block index, chart)`), or every error found reading
    them; None when there is no chart. The charts may come from arguments that are invalid
    elsewhere: their errors and the files' are then told together."""
    if not charts:
        return None, []
    try:
        workspace_real = resolve_workspace(workspace_dir)
    except CsvProblem as problem:
        return None, [
            Issue(json_path("blocks", i, "csv", "path"), problem.code, problem.message)
            for i, _ in charts
        ]
    tables: dict[str, Table | CsvProblem] = {}
    resolved: list[Any] = []
    issues: list[Issue] = []
    for index, block in charts:
        key = relative_key(block.csv.repo, block.csv.path)
        if key not in tables:
            try:
                tables[key] = _load(workspace_real, key, max_csv_bytes)
            except CsvProblem as problem:
                tables[key] = problem
        table = tables[key]
        if isinstance(table, CsvProblem):
            issues.append(
                Issue(json_path("blocks", index, "csv", "path"), table.code, table.message)
            )
            continue
        chart, chart_issues = resolve_chart(table, block, index)
        issues += chart_issues
        if chart is not None:
            resolved.append(chart)
    if issues:
        return None, issues
    snapshot = {"version": 1, "resolved_charts": resolved}
    size = len(orjson.dumps(snapshot))
    if size > MAX_SNAPSHOT_BYTES:
        return None, [tool_codes.SNAPSHOT_TOO_LARGE.issue("$", size=size, limit=MAX_SNAPSHOT_BYTES)]
    return snapshot, []
