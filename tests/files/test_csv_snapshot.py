"""CSV snapshots of kandev.rich_output.v1: safe reading, strict parsing, exact shape, bounds."""

from __future__ import annotations

import csv
import os
import threading
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.issue import Issue
from schemas.rich_output import RichOutputArgs, validate_rich_output
from streams.files import csv_snapshot
from streams.files.csv_snapshot import (
    MAX_SNAPSHOT_BYTES,
    CsvProblem,
    parse_number,
    read_csv_bytes,
    snapshot_charts,
)

KIB = 1024
EMOJI = "😀"


def chart(
    path: str = "data.csv",
    x: str = "month",
    series: list[tuple[str, str | None]] | None = None,
    repo: str | None = None,
) -> dict[str, Any]:
    source: dict[str, Any] = {
        "path": path,
        "x_column": x,
        "series": [
            {"column": c} if label is None else {"column": c, "label": label}
            for c, label in (series or [("sales", None)])
        ],
    }
    if repo is not None:
        source["repo"] = repo
    return {"type": "chart", "chart_type": "line", "title": "t", "summary": "s", "csv": source}


def model(*blocks: dict[str, Any]) -> RichOutputArgs:
    parsed, issues = validate_rich_output({"version": 1, "title": "T", "blocks": list(blocks)})
    assert issues == [], issues
    assert parsed is not None
    return parsed


def write(ws: Path, name: str, content: str | bytes) -> Path:
    target = ws / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        target.write_bytes(content.encode("utf-8"))
    else:
        target.write_bytes(content)
    return target


def snap(
    ws: Path, content: str | bytes | None = None, *blocks: dict[str, Any], limit: int = 256 * KIB
) -> tuple[dict[str, Any] | None, list[Issue]]:
    if content is not None:
        write(ws, "data.csv", content)
    return snapshot_charts(model(*(blocks or (chart(),))), ws, limit)


def only(issues: list[Issue]) -> Issue:
    assert len(issues) == 1, issues
    return issues[0]


def fail(ws: Path, content: str | bytes, *blocks: dict[str, Any], limit: int = 256 * KIB) -> Issue:
    snapshot, issues = snap(ws, content, *blocks, limit=limit)
    assert snapshot is None
    return only(issues)


def ok(ws: Path, content: str | bytes, *blocks: dict[str, Any]) -> dict[str, Any]:
    snapshot, issues = snap(ws, content, *blocks)
    assert issues == []
    assert snapshot is not None
    return snapshot


# --------------------------------------------------------------------------- shape


def test_snapshot_shape_is_exact(tmp_path: Path) -> None:
    result = ok(
        tmp_path,
        "month,sales,cost\nJan,10,2.5\nFeb,,3\n",
        chart(series=[("sales", None), ("cost", "Cost")]),
    )
    assert result == {
        "version": 1,
        "resolved_charts": [
            {
                "block_index": 0,
                "labels": ["Jan", "Feb"],
                "series": [
                    {"label": "sales", "values": [10, None]},
                    {"label": "Cost", "values": [2.5, 3]},
                ],
            }
        ],
    }
    assert list(result) == ["version", "resolved_charts"]
    entry = result["resolved_charts"][0]
    assert list(entry) == ["block_index", "labels", "series"]
    assert list(entry["series"][0]) == ["label", "values"]
    assert type(entry["series"][0]["values"][0]) is int
    assert type(entry["series"][1]["values"][1]) is int
    assert type(entry["series"][1]["values"][0]) is float


def test_charts_in_block_order_with_their_index(tmp_path: Path) -> None:
    write(tmp_path, "a.csv", "k,v\nx,1\n")
    write(tmp_path, "b.csv", "k,v\ny,2\n")
    metrics = {"type": "metrics", "items": [{"label": "a", "value": "b"}]}
    args = model(
        metrics, chart("b.csv", "k", [("v", None)]), metrics, chart("a.csv", "k", [("v", None)])
    )
    snapshot, issues = snapshot_charts(args, tmp_path, 1024)
    assert issues == []
    assert snapshot is not None
    assert [(c["block_index"], c["labels"]) for c in snapshot["resolved_charts"]] == [
        (1, ["y"]),
        (3, ["x"]),
    ]


def test_no_csv_chart_means_no_snapshot_and_no_read(tmp_path: Path) -> None:
    inline = {
        "type": "chart",
        "chart_type": "bar",
        "title": "t",
        "summary": "s",
        "labels": ["a"],
        "series": [{"label": "s", "values": [1]}],
    }
    with mock.patch.object(csv_snapshot, "read_csv_bytes", side_effect=AssertionError):
        assert snapshot_charts(model(inline), tmp_path / "missing", 1024) == (None, [])


# --------------------------------------------------------------------------- read once


def test_each_file_is_read_once_per_call(tmp_path: Path) -> None:
    write(tmp_path, "org/repo/data.csv", "month,sales,cost\nJan,1,2\n")
    write(tmp_path, "other.csv", "month,sales\nJan,1\n")
    calls: list[str] = []
    real = csv_snapshot.read_csv_bytes

    def counting(workspace: str, rel: str, limit: int) -> bytes:
        calls.append(rel)
        return real(workspace, rel, limit)

    args = model(
        chart("data.csv", repo="org/repo"),
        chart("org/repo/data.csv", series=[("cost", None)]),
        chart("./org/repo/./data.csv"),
        chart("other.csv"),
    )
    with mock.patch.object(csv_snapshot, "read_csv_bytes", counting):
        snapshot, issues = snapshot_charts(args, tmp_path, 1024)
    assert issues == []
    assert snapshot is not None
    assert len(snapshot["resolved_charts"]) == 4
    assert sorted(calls) == ["org/repo/data.csv", "other.csv"]


def test_a_failed_read_is_not_retried(tmp_path: Path) -> None:
    opened: list[Any] = []
    real_open = os.open

    def counting_open(path: Any, flags: int, *a: Any, **k: Any) -> int:
        opened.append(path)
        return real_open(path, flags, *a, **k)

    write(tmp_path, "bad.csv", b"month,sales\n\xff,1\n")
    with mock.patch.object(os, "open", counting_open):
        snapshot, issues = snapshot_charts(
            model(chart("bad.csv"), chart("bad.csv"), chart("missing.csv")), tmp_path, 1024
        )
    assert snapshot is None
    assert [(i.path, i.code) for i in issues] == [
        ("blocks[0].csv.path", "csv_invalid_utf8"),
        ("blocks[1].csv.path", "csv_invalid_utf8"),
        ("blocks[2].csv.path", "csv_not_found"),
    ]
    assert len(opened) == 1


# --------------------------------------------------------------------------- where the file is


def test_repo_is_a_folder_of_the_workspace(tmp_path: Path) -> None:
    write(tmp_path, "org/repo/d/data.csv", "month,sales\nJan,1\n")
    snapshot, issues = snapshot_charts(model(chart("d/data.csv", repo="org/repo")), tmp_path, 99)
    assert issues == [] and snapshot is not None


def test_backslash_is_a_separator(tmp_path: Path) -> None:
    write(tmp_path, "sub/data.csv", "month,sales\nJan,1\n")
    snapshot, issues = snapshot_charts(model(chart("sub\\data.csv")), tmp_path, 99)
    assert issues == [] and snapshot is not None


def test_missing_file_and_directory(tmp_path: Path) -> None:
    issue = fail(tmp_path, "month,sales\nJan,1\n", chart("nope.csv"))
    assert (issue.path, issue.code) == ("blocks[0].csv.path", "csv_not_found")
    (tmp_path / "dir.csv").mkdir()
    issue = fail(tmp_path, "month,sales\nJan,1\n", chart("dir.csv"))
    assert (issue.path, issue.code) == ("blocks[0].csv.path", "csv_not_regular_file")


def test_symlink_escape_is_refused(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    write(outside, "secret.csv", "month,sales\nJan,1\n")
    os.symlink(outside / "secret.csv", ws / "data.csv")
    os.symlink(outside, ws / "dirlink")
    os.symlink("../outside/secret.csv", ws / "relative.csv")
    snapshot, issues = snapshot_charts(
        model(chart(), chart("dirlink/secret.csv"), chart("relative.csv")), ws, 1024
    )
    assert snapshot is None
    assert [(i.path, i.code) for i in issues] == [
        ("blocks[0].csv.path", "csv_outside_workspace"),
        ("blocks[1].csv.path", "csv_outside_workspace"),
        ("blocks[2].csv.path", "csv_outside_workspace"),
    ]


def test_symlink_inside_the_workspace_is_fine(tmp_path: Path) -> None:
    write(tmp_path, "real/data.csv", "month,sales\nJan,1\n")
    os.symlink(tmp_path / "real" / "data.csv", tmp_path / "alias.csv")
    os.symlink("real", tmp_path / "dirlink")
    snapshot, issues = snapshot_charts(
        model(chart("alias.csv"), chart("dirlink/data.csv")), tmp_path, 1024
    )
    assert issues == [] and snapshot is not None


def test_symlink_loop_is_an_error_not_a_crash(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b.csv", tmp_path / "a.csv")
    os.symlink(tmp_path / "a.csv", tmp_path / "b.csv")
    os.symlink("self.csv", tmp_path / "self.csv")
    snapshot, issues = snapshot_charts(model(chart("a.csv"), chart("self.csv")), tmp_path, 1024)
    assert snapshot is None
    assert [i.code for i in issues] == ["csv_symlink_loop", "csv_symlink_loop"]


def test_fifo_returns_promptly(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "data.csv")
    result: list[Any] = []
    worker = threading.Thread(
        target=lambda: result.append(snapshot_charts(model(chart()), tmp_path, 1024)),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    snapshot, issues = result[0]
    assert snapshot is None
    assert only(issues).code == "csv_not_regular_file"


def test_proc_files_are_outside_and_read_bounded(tmp_path: Path) -> None:
    os.symlink("/proc/self/status", tmp_path / "data.csv")
    os.symlink("/proc/self/environ", tmp_path / "env.csv")
    _, issues = snapshot_charts(model(chart(), chart("env.csv")), tmp_path, 1024)
    assert [i.code for i in issues] == ["csv_outside_workspace", "csv_outside_workspace"]
    # a /proc file claims size 0; the reader must not trust that, and must still stop at limit+1
    data = read_csv_bytes(os.path.realpath("/proc/self"), "status", 10)
    assert data.startswith(b"Name:") and len(data) == 11


def test_device_files_are_not_regular(tmp_path: Path) -> None:
    with pytest.raises(CsvProblem) as info:
        read_csv_bytes("/dev", "null", 10)
    assert info.value.code == "csv_not_regular_file"


def test_workspace_unavailable(tmp_path: Path) -> None:
    snapshot, issues = snapshot_charts(model(chart(), chart()), tmp_path / "missing", 1024)
    assert snapshot is None
    assert [(i.path, i.code) for i in issues] == [
        ("blocks[0].csv.path", "workspace_unavailable"),
        ("blocks[1].csv.path", "workspace_unavailable"),
    ]


def test_file_replaced_between_stat_and_open_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "data.csv", "month,sales\nJan,1\n")
    write(tmp_path, "other.csv", "month,sales\nJan,2\n")
    real_stat = os.stat

    def swapping_stat(path: Any, *a: Any, **k: Any) -> os.stat_result:
        result = real_stat(path, *a, **k)
        if str(path).endswith("data.csv"):
            os.replace(tmp_path / "other.csv", tmp_path / "data.csv")
        return result

    with mock.patch.object(os, "stat", swapping_stat):
        _, issues = snapshot_charts(model(chart()), tmp_path, 1024)
    assert only(issues).code == "csv_changed_during_read"


# --------------------------------------------------------------------------- size and encoding


def test_size_limit_at_its_boundary(tmp_path: Path) -> None:
    body = b"month,sales\nJan,1\nFeb,2\n"
    assert snap(tmp_path, body, limit=len(body))[1] == []
    issue = fail(tmp_path, body, limit=len(body) - 1)
    assert (issue.path, issue.code) == ("blocks[0].csv.path", "csv_too_large")
    assert str(len(body) - 1) in issue.message


def _csv_of_size(size: int) -> bytes:
    """A valid 100-row CSV of exactly `size` bytes, padded in an unused column."""
    rows = [f"m{i},{i},{'x' * 2500}\n" for i in range(100)]
    data = "month,sales,pad\n" + "".join(rows)
    missing = size - len(data)
    assert 0 <= missing < 100_000
    rows[-1] = f"m99,99,{'x' * (2500 + missing)}\n"
    encoded = ("month,sales,pad\n" + "".join(rows)).encode()
    assert len(encoded) == size
    return encoded


def test_default_limit_is_256_kib(tmp_path: Path) -> None:
    args = model(chart())
    write(tmp_path, "data.csv", _csv_of_size(256 * KIB))
    snapshot, issues = snapshot_charts(args, tmp_path)
    assert issues == [] and snapshot is not None
    write(tmp_path, "data.csv", _csv_of_size(256 * KIB + 1))
    snapshot, issues = snapshot_charts(args, tmp_path)
    assert only(issues).code == "csv_too_large"


def test_reads_at_most_limit_plus_one_bytes(tmp_path: Path) -> None:
    write(tmp_path, "big.csv", b"a" * (3 * 1024 * 1024))
    assert len(read_csv_bytes(str(tmp_path), "big.csv", 100)) == 101
    assert len(read_csv_bytes(str(tmp_path), "big.csv", 200_000)) == 200_001


def test_bom_is_dropped(tmp_path: Path) -> None:
    result = ok(tmp_path, "\ufeffmonth,sales\nJan,1\n")
    assert result["resolved_charts"][0]["labels"] == ["Jan"]


def test_nul_is_an_error_with_its_place(tmp_path: Path) -> None:
    issue = fail(tmp_path, b"month,sales\nJan,1\0\n")
    assert issue.code == "csv_nul_byte"
    assert "line 2" in issue.message


@pytest.mark.parametrize("bad", [b"\xff", b"caf\xe9", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe2\x82"])
def test_invalid_utf8_is_an_error_with_its_place(tmp_path: Path, bad: bytes) -> None:
    issue = fail(tmp_path, b"month,sales\nJan,1\n" + bad + b",2\n")
    assert issue.code == "csv_invalid_utf8"
    assert "line 3" in issue.message


# --------------------------------------------------------------------------- CSV syntax


def test_quoted_newlines_and_quotes(tmp_path: Path) -> None:
    result = ok(tmp_path, 'month,sales\n"Jan\nuary",1\n"Feb, ""x""",2\nMar,3\n')
    assert result["resolved_charts"][0]["labels"] == ["Jan\nuary", 'Feb, "x"', "Mar"]


def test_crlf_and_no_final_newline(tmp_path: Path) -> None:
    result = ok(tmp_path, "month,sales\r\nJan,1\r\nFeb,2")
    assert result["resolved_charts"][0]["labels"] == ["Jan", "Feb"]
    assert result["resolved_charts"][0]["series"][0]["values"] == [1, 2]


def test_quoted_crlf_inside_a_field(tmp_path: Path) -> None:
    result = ok(tmp_path, 'month,sales\r\n"a\r\nb",1\r\n')
    assert result["resolved_charts"][0]["labels"] == ["a\r\nb"]


@pytest.mark.parametrize("content", ['month,sales\n"Jan,1\n', 'month,sales\n"Jan"x,1\n'])
def test_malformed_quoting(tmp_path: Path, content: str) -> None:
    issue = fail(tmp_path, content)
    assert issue.code == "csv_malformed"
    assert "line" in issue.message


def test_one_megabyte_field(tmp_path: Path) -> None:
    content = "month,sales\nJan," + "9" * (1024 * 1024) + "\n"
    assert fail(tmp_path, content).code == "csv_too_large"
    issue = fail(tmp_path, content, limit=2 * 1024 * 1024)
    assert issue.code == "csv_field_too_large"
    assert "line 2" in issue.message
    quoted = 'month,sales\nJan,"' + "a" * (1024 * 1024) + '"\n'
    assert fail(tmp_path, quoted, limit=2 * 1024 * 1024).code == "csv_field_too_large"


def test_ten_thousand_columns_are_fine(tmp_path: Path) -> None:
    header = ",".join(f"c{i}" for i in range(10_000))
    row = ",".join(str(i) for i in range(10_000))
    content = f"{header}\n{row}\n{row}\n"
    result = ok(tmp_path, content, chart(x="c1", series=[("c9999", None), ("c0", "zero")]))
    entry = result["resolved_charts"][0]
    assert entry["labels"] == ["1", "1"]
    assert entry["series"] == [
        {"label": "c9999", "values": [9999, 9999]},
        {"label": "zero", "values": [0, 0]},
    ]


def test_columns_are_bounded(tmp_path: Path) -> None:
    header = ",".join(f"c{i}" for i in range(16_385))
    issue = fail(tmp_path, f"{header}\n1\n", chart(x="c0", series=[("c1", None)]))
    assert issue.code == "csv_too_many_columns"


# --------------------------------------------------------------------------- header


def test_header_names_are_trimmed(tmp_path: Path) -> None:
    result = ok(tmp_path, " month ,\tsales \nJan,1\n")
    assert result["resolved_charts"][0]["labels"] == ["Jan"]


@pytest.mark.parametrize(
    ("header", "code", "where"),
    [
        ("month,sales,month", "csv_duplicate_header", "columns 1 and 3"),
        ("month,sales, sales ", "csv_duplicate_header", "columns 2 and 3"),
        ("month,,sales", "csv_blank_header", "column 2"),
        ("month, ,sales", "csv_blank_header", "column 2"),
        ("month,sales,", "csv_blank_header", "column 3"),
    ],
)
def test_blank_and_duplicate_headers(tmp_path: Path, header: str, code: str, where: str) -> None:
    issue = fail(tmp_path, f"{header}\nJan,1,2\n")
    assert issue.code == code
    assert where in issue.message


def test_columns_must_match_exactly(tmp_path: Path) -> None:
    snapshot, issues = snap(
        tmp_path,
        "month,sales\nJan,1\n",
        chart(x="Month", series=[("sales ", None), ("sales", "s")]),
    )
    assert snapshot is None
    assert [(i.path, i.code) for i in issues] == [
        ("blocks[0].csv.x_column", "csv_unknown_column"),
        ("blocks[0].csv.series[0].column", "csv_unknown_column"),
    ]


def test_empty_file(tmp_path: Path) -> None:
    assert fail(tmp_path, b"").code == "csv_empty"
    assert fail(tmp_path, b"\xef\xbb\xbf").code == "csv_empty"


# --------------------------------------------------------------------------- rows


@pytest.mark.parametrize("row", ["Feb", "Feb,2,3", ""])
def test_ragged_rows(tmp_path: Path, row: str) -> None:
    issue = fail(tmp_path, f"month,sales\nJan,1\n{row}\nMar,3\n")
    assert issue.code == "csv_ragged_row"
    assert "data row 2 (line 3)" in issue.message


def test_row_count_boundaries(tmp_path: Path) -> None:
    def rows(n: int) -> str:
        return "month,sales\n" + "".join(f"m{i},{i}\n" for i in range(n))

    assert fail(tmp_path, rows(0)).code == "csv_no_rows"
    assert len(ok(tmp_path, rows(1))["resolved_charts"][0]["labels"]) == 1
    assert len(ok(tmp_path, rows(100))["resolved_charts"][0]["labels"]) == 100
    issue = fail(tmp_path, rows(101))
    assert issue.code == "csv_too_many_rows"
    assert "line 102" in issue.message


def test_blank_line_is_one_empty_field(tmp_path: Path) -> None:
    one_column = chart(x="v", series=[("v", None)])
    issue = fail(tmp_path, "v\n1\n\n3\n", one_column)
    assert issue.code == "csv_blank_label"
    assert "data row 2 (line 3)" in issue.message


# --------------------------------------------------------------------------- labels


def test_labels_are_trimmed(tmp_path: Path) -> None:
    result = ok(tmp_path, 'month,sales\n  Jan  ,1\n"\tFeb\n",2\n')
    assert result["resolved_charts"][0]["labels"] == ["Jan", "Feb"]


def test_blank_label(tmp_path: Path) -> None:
    issue = fail(tmp_path, "month,sales\nJan,1\n   ,2\n")
    assert issue.code == "csv_blank_label"
    assert "data row 2 (line 3), column 1 ('month')" in issue.message


def test_label_length_in_code_points(tmp_path: Path) -> None:
    longest = EMOJI * 120
    result = ok(tmp_path, f"month,sales\n {longest} ,1\n")
    assert result["resolved_charts"][0]["labels"] == [longest]
    issue = fail(tmp_path, f"month,sales\n{longest}a,1\n")
    assert issue.code == "csv_label_too_long"
    assert "121" in issue.message


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("0", 0),
        ("-0", 0),
        ("12", 12),
        ("  7  ", 7),
        ("-3.5", -3.5),
        ("0.0", 0.0),
        ("1e3", 1000.0),
        ("1E-2", 0.01),
        ("2.5e+1", 25.0),
        ("9223372036854775807", 9223372036854775807),
        ("-9223372036854775808", -9223372036854775808),
        ("1e308", 1e308),
        ("", None),
        ("   ", None),
    ],
)
def test_number_grammar_accepts(cell: str, value: Any) -> None:
    parsed = parse_number(cell)
    assert parsed == value
    assert type(parsed) is type(value)


def test_integers_beyond_64_bits_become_floats() -> None:
    assert parse_number("9223372036854775808") == 9223372036854775808.0
    assert type(parse_number("9223372036854775808")) is float


@pytest.mark.parametrize(
    "cell",
    [
        "NaN",
        "nan",
        "inf",
        "-inf",
        "Infinity",
        "-Infinity",
        "1_000",
        "0x10",
        " 0x",
        "+1",
        ".5",
        "5.",
        "01",
        "1e",
        "--1",
        "1,000",
        "１",
        "1 2",
        "true",
        "null",
        "1e5.5",
        "٣",
        "1" * 1001,
    ],
)
def test_number_grammar_rejects(cell: str) -> None:
    with pytest.raises(ValueError):
        parse_number(cell)


def test_overflowing_numbers_are_not_finite() -> None:
    with pytest.raises(OverflowError):
        parse_number("1e309")
    with pytest.raises(OverflowError):
        parse_number("-" + "9" * 400)


@pytest.mark.parametrize(
    ("cell", "code"),
    [
        ("NaN", "csv_invalid_number"),
        ("inf", "csv_invalid_number"),
        ("1_000", "csv_invalid_number"),
        ("1e400", "csv_not_finite"),
    ],
)
def test_bad_cells_name_row_and_column(tmp_path: Path, cell: str, code: str) -> None:
    issue = fail(tmp_path, f"month,sales\nJan,1\nFeb,{cell}\n")
    assert (issue.path, issue.code) == ("blocks[0].csv.path", code)
    assert "data row 2 (line 3), column 2 ('sales')" in issue.message


def test_empty_cells_are_null(tmp_path: Path) -> None:
    result = ok(tmp_path, 'month,sales\nJan,\nFeb,""\nMar, \n')
    assert result["resolved_charts"][0]["series"][0]["values"] == [None, None, None]


def test_unused_columns_are_not_checked(tmp_path: Path) -> None:
    result = ok(tmp_path, "month,sales,note\nJan,1,hello\n")
    assert result["resolved_charts"][0]["series"][0]["values"] == [1]


# --------------------------------------------------------------------------- snapshot bound


def _bounded_files(ws: Path, last: int) -> RichOutputArgs:
    wide = "month,a,b,c,d\n" + "".join(
        f"{EMOJI * 120},1234567,1234567,1234567,1234567\n" for _ in range(100)
    )
    rows = [f"{'b' * 120},12345678901234\n"] * 99 + [f"{'b' * last},12345678901234\n"]
    write(ws, "wide.csv", wide)
    write(ws, "narrow.csv", "month,v\n" + "".join(rows))
    return model(
        chart("wide.csv", series=[("a", None), ("b", None), ("c", None), ("d", None)]),
        chart("narrow.csv", series=[("v", None)]),
    )


def test_snapshot_at_most_64_kib(tmp_path: Path) -> None:
    snapshot, issues = snapshot_charts(_bounded_files(tmp_path, 1), tmp_path)
    assert issues == [] and snapshot is not None
    last = 1 + MAX_SNAPSHOT_BYTES - len(orjson.dumps(snapshot))
    assert 1 < last < 120
    snapshot, issues = snapshot_charts(_bounded_files(tmp_path, last), tmp_path)
    assert issues == [] and snapshot is not None
    assert len(orjson.dumps(snapshot)) == MAX_SNAPSHOT_BYTES
    snapshot, issues = snapshot_charts(_bounded_files(tmp_path, last + 1), tmp_path)
    assert snapshot is None
    assert only(issues).code == "snapshot_too_large"


# --------------------------------------------------------------------------- properties

CSV_TEXT = st.text(
    alphabet=st.sampled_from(list('ab,"\n\r \t1.e-+0xNn\ufeff\u00e9\x00;')), max_size=200
).map(lambda body: "a,b\n" + body)


CELL = st.sampled_from(["1", "-2.5", "1e3", "", " ", "x", "NaN", "1_0", '"3"', '" a "', "\ufeff"])
ROWS = st.lists(st.tuples(CELL, CELL), max_size=6).flatmap(
    lambda rows: st.sampled_from(["\n", "\r\n"]).map(
        lambda nl: ("a,b" + nl + "".join(f"{x},{y}{nl}" for x, y in rows)).encode()
    )
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    content=st.one_of(
        CSV_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=200), ROWS
    )
)
def test_any_csv_gives_ok_or_error(content: bytes) -> None:
    args = model(chart(x="a", series=[("b", None)]), chart(x="b", series=[("a", "A")]))
    with (
        mock.patch.object(csv_snapshot, "read_csv_bytes", lambda *_: content),
        mock.patch.object(csv_snapshot, "resolve_workspace", lambda _: "/nonexistent"),
    ):
        snapshot, issues = snapshot_charts(args, Path("/nonexistent"), 150)
    assert (snapshot is None) == bool(issues)
    assert all(i.code and i.path and i.message for i in issues)
    if snapshot is not None:
        assert len(orjson.dumps(snapshot)) <= MAX_SNAPSHOT_BYTES
        for entry in snapshot["resolved_charts"]:
            assert all(label == label.strip() and label for label in entry["labels"])
            for series in entry["series"]:
                assert len(series["values"]) == len(entry["labels"])


def test_field_bound_does_not_depend_on_the_global_csv_limit(tmp_path: Path) -> None:
    previous = csv.field_size_limit(10**9)
    try:
        content = "month,sales\nJan," + "9" * 200_000 + "\n"
        issue = fail(tmp_path, content, limit=1024 * 1024)
    finally:
        csv.field_size_limit(previous)
    assert issue.code == "csv_field_too_large"
    assert "line 2, column 2" in issue.message


def test_unreadable_file(tmp_path: Path) -> None:
    write(tmp_path, "data.csv", "month,sales\nJan,1\n")

    def denied(*_: Any, **__: Any) -> int:
        raise PermissionError(13, "Permission denied")

    with mock.patch.object(os, "open", denied):
        _, issues = snapshot_charts(model(chart()), tmp_path, 1024)
    issue = only(issues)
    assert (issue.path, issue.code) == ("blocks[0].csv.path", "csv_unreadable")
    assert "Permission denied" in issue.message
