"""The rich-output tool's codes (`kandev.rich_output.v1`): its arguments, workspace paths and
chart CSVs. They live with the tool, not in the shared registry; `schemas.registry.issue_codes`
and the catalogue (schemas/catalogue.py) list them with every other code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from schemas.codes import RICH, Code, table
from schemas.codes import code as _c

# fmt: off
TOOL_CODES: Final[Mapping[str, Code]] = table(
    # kandev.rich_output.v1: the arguments
    TOO_LARGE := _c(
       "too_large", RICH, "The arguments are over 64 KiB as UTF-8 JSON.",
       "$", {"size": 70000, "limit": 65536},
       "is {size} bytes as UTF-8 JSON; the limit is {limit}"),
    UNKNOWN_BLOCK_TYPE := _c(
       "unknown_block_type", RICH, "A block `type` other than file, chart or metrics.",
       "blocks[0].type", "",
       "must be one of 'file', 'chart', 'metrics'"),
    MISSING_CHART_DATA := _c(
       "missing_chart_data", RICH, "A chart with neither inline data nor csv.",
       "blocks[0]", "",
       "needs its data: either labels and series, or csv"),
    AMBIGUOUS_CHART_DATA := _c(
       "ambiguous_chart_data", RICH, "A chart with both inline data and csv.",
       "blocks[0]",
       "",
       "has both inline data (labels/series) and csv; give exactly one of them"),
    LENGTH_MISMATCH := _c(
       "length_mismatch", RICH, "An inline series whose `values` are not as many as `labels`.",
       "blocks[0].series[1].values",
       {"values": 3, "labels": 4},
       "has {values} values but there are {labels} labels; give one value per label"),
    NOT_CSV_PATH := _c(
       "not_csv_path", RICH, "A chart's csv path that does not end in .csv.",
       "blocks[0].csv.path", "",
       "must name a file ending in .csv"),
    # kandev.rich_output.v1: workspace paths
    BLANK_PATH := _c(
       "blank_path", RICH, "An empty or whitespace-only path.",
       "blocks[0].path", "",
       "must name a file: it is empty or only whitespace"),
    NUL_IN_PATH := _c(
       "nul_in_path", RICH, "A path containing NUL.",
       "blocks[0].path", "",
       "must not contain a NUL character"),
    ABSOLUTE_PATH := _c(
       "absolute_path", RICH, "A path starting with / (once \\ is read as /).",
       "blocks[0].path", "",
       "must be relative to the workspace; it starts with '/' or '\\'"),
    URL_PATH := _c(
       "url_path", RICH, "A path containing `://`.",
       "blocks[0].path", "",
       "must be a workspace path, not a URL ('://')"),
    DATA_URI_PATH := _c(
       "data_uri_path", RICH, "A path starting with `data:`.",
       "blocks[0].path", "",
       "must be a workspace path, not a data: URI"),
    DRIVE_LETTER_PATH := _c(
       "drive_letter_path", RICH, "A path starting with a drive letter (`C:`).",
       "blocks[0].path", "",
       "must be relative; it starts with a drive letter"),
    PARENT_SEGMENT := _c(
       "parent_segment", RICH, "A path with a `..` segment.",
       "blocks[0].csv.path", "",
       "must not contain a '..' segment (it leaves the folder)"),
    EMPTY_PATH_AFTER_CLEANING := _c(
       "empty_path_after_cleaning", RICH, "A path that cleans to `.` (the folder itself).",
       "blocks[0].path", "",
       "must name a file; it cleans to '.' (the folder itself)"),
    NOT_SINGLE_FOLDER := _c(
       "not_single_folder", RICH, "A ToolCall `workspace` that is not one folder name.",
       "workspace", "",
       "must be one folder name, without '/' or '\\'"),
    # kandev.rich_output.v1: the tool call and its workspace
    UNKNOWN_TOOL := _c(
       "unknown_tool", RICH, "A ToolCall for a tool this gate does not serve.",
       "tool", {"tool": "show_rich_output_kandev"},
       "this gate only serves {tool}"),
    WORKSPACE_UNAVAILABLE := _c(
       "workspace_unavailable", RICH, "The workspace folder cannot be opened.",
       "workspace", {"reason": "[Errno 2] No such file or directory"},
       "cannot be opened: {reason}",
       csv="the workspace cannot be opened: {reason}",
       not_folder="the workspace is not a folder"),
    WORKSPACE_OUTSIDE_ROOT := _c(
       "workspace_outside_root", RICH, "The workspace resolves outside the workspaces root.",
       "workspace", "",
       "resolves outside the workspaces root"),
    # kandev.rich_output.v1: reading a chart's CSV (path: the block's csv.path)
    CSV_NOT_FOUND := _c(
       "csv_not_found", RICH, "No such file in the workspace.",
       "blocks[0].csv.path", "",
       "no such file in the workspace"),
    CSV_OUTSIDE_WORKSPACE := _c(
       "csv_outside_workspace", RICH, "The real path (symlinks resolved) leaves the workspace.",
       "blocks[0].csv.path", "",
       "the real path (symlinks resolved) leaves the workspace"),
    CSV_SYMLINK_LOOP := _c(
       "csv_symlink_loop", RICH, "The path runs into a symlink loop.",
       "blocks[0].csv.path", "",
       "the path runs into a symlink loop"),
    CSV_NOT_REGULAR_FILE := _c(
       "csv_not_regular_file", RICH, "Not a regular file (a folder, a FIFO, a device).",
       "blocks[0].csv.path", "",
       "is not a regular file"),
    CSV_CHANGED_DURING_READ := _c(
       "csv_changed_during_read", RICH, "The file was swapped while it was being opened.",
       "blocks[0].csv.path", {"form": "replaced"},
       "the file changed",
       symlink="the file became a symlink",
       replaced="the file was replaced while opening it"),
    CSV_UNREADABLE := _c(
       "csv_unreadable", RICH, "The file cannot be opened or read.",
       "blocks[0].csv.path", {"form": "open", "cause": "Permission denied"},
       "the file cannot be read",
       resolve="the file cannot be resolved: {cause}",
       examine="the file cannot be examined: {cause}",
       open="the file cannot be opened: {cause}",
       read="the file cannot be read: {cause}"),
    CSV_TOO_LARGE := _c(
       "csv_too_large", RICH, "The file is over the CSV limit (256 KiB by default).",
       "blocks[0].csv.path", {"limit": 262144},
       "is larger than {limit} bytes"),
    CSV_NUL_BYTE := _c(
       "csv_nul_byte", RICH, "A NUL byte in the file.",
       "blocks[0].csv.path", {"offset": 17, "line": 2},
       "has a NUL byte at byte {offset} (line {line})"),
    CSV_INVALID_UTF8 := _c(
       "csv_invalid_utf8", RICH, "The file is not UTF-8 text.",
       "blocks[0].csv.path", {"offset": 40, "line": 3},
       "is not valid UTF-8 at byte {offset} (line {line})"),
    CSV_MALFORMED := _c(
       "csv_malformed", RICH, "CSV syntax the reader cannot follow (e.g. a stray quote).",
       "blocks[0].csv.path", {"line": 4, "error": "unexpected end of data"},
       "line {line}: {error}"),
    CSV_FIELD_TOO_LARGE := _c(
       "csv_field_too_large", RICH, "One field longer than the CSV field limit.",
       "blocks[0].csv.path", {"line": 2, "col": 1, "limit": 131072},
       "line {line}, column {col}: a field longer than {limit} characters",
       reader="line {line}: a field is longer than the csv limit"),
    CSV_TOO_MANY_COLUMNS := _c(
       "csv_too_many_columns", RICH, "A row with more columns than the limit.",
       "blocks[0].csv.path", {"line": 1, "fields": 16385, "limit": 16384},
       "line {line} has {fields} fields; at most {limit}"),
    CSV_EMPTY := _c(
       "csv_empty", RICH, "An empty file: no header, no rows.",
       "blocks[0].csv.path", {"limit": 100},
       "is empty: it needs a header row and 1-{limit} data rows"),
    CSV_BLANK_HEADER := _c(
       "csv_blank_header", RICH, "A header name that is blank after trimming.",
       "blocks[0].csv.path", {"line": 1, "col": 3},
       "header (line {line}) column {col} is blank"),
    CSV_DUPLICATE_HEADER := _c(
       "csv_duplicate_header", RICH, "The same header name twice.",
       "blocks[0].csv.path", {"line": 1, "name": "month", "first": 1, "col": 4},
       "header (line {line}) names {name!r} twice: columns {first} and {col}"),
    CSV_NO_ROWS := _c(
       "csv_no_rows", RICH, "A header but no data rows.",
       "blocks[0].csv.path", {"limit": 100},
       "has a header but no data rows (1-{limit})"),
    CSV_TOO_MANY_ROWS := _c(
       "csv_too_many_rows", RICH, "More than 100 data rows.",
       "blocks[0].csv.path", {"limit": 100, "line": 102},
       "has more than {limit} data rows (line {line})"),
    CSV_RAGGED_ROW := _c(
       "csv_ragged_row", RICH, "A row with a different number of fields than the header.",
       "blocks[0].csv.path", {"row": 3, "line": 4, "fields": 2, "header": 3},
       "data row {row} (line {line}) has {fields} fields; the header has {header}"),
    CSV_UNKNOWN_COLUMN := _c(
       "csv_unknown_column", RICH, "`x_column` or a series `column` that is not a header.",
       "blocks[0].csv.series[0].column",
       {"column": "revenue", "headers": "'month;revenue;cost'"},
       "{column!r} is not a header of the CSV (its headers: {headers})"),
    CSV_BLANK_LABEL := _c(
       "csv_blank_label", RICH, "An x_column cell that is blank after trimming.",
       "blocks[0].csv.path", {"where": "data row 2 (line 3), column 1 ('month')"},
       "{where}: the label is blank"),
    CSV_LABEL_TOO_LONG := _c(
       "csv_label_too_long", RICH, "An x_column cell longer than 120 code points.",
       "blocks[0].csv.path",
       {"where": "data row 2 (line 3), column 1 ('month')", "length": 150, "limit": 120},
       "{where}: the label has {length} characters; at most {limit}"),
    CSV_INVALID_NUMBER := _c(
       "csv_invalid_number", RICH, "A series cell that is neither empty nor a number.",
       "blocks[0].csv.path",
       {"where": "data row 2 (line 3), column 2 ('sales')", "cell": "'n/a'"},
       "{where}: {cell} is not a number (JSON syntax: 12, -3.5, 1e6)"),
    CSV_NOT_FINITE := _c(
       "csv_not_finite", RICH, "A series cell that is NaN or infinite.",
       "blocks[0].csv.path",
       {"where": "data row 2 (line 3), column 2 ('sales')"},
       "{where}: is too large to be a finite number"),
    SNAPSHOT_TOO_LARGE := _c(
       "snapshot_too_large", RICH, "The CSV snapshot is over 64 KiB as JSON.",
       "$", {"size": 70000, "limit": 65536},
       "the CSV snapshot is {size} bytes as JSON; the limit is {limit}"),
)
# fmt: on
