"""kandev.rich_output.v1: the path rule, the argument contract, its schema, the tool decision."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.issue import Issue
from schemas.paths import check_folder_name, check_relative_path
from schemas.records import ToolCall
from schemas.rich_output import (
    CONTRACT_NAME,
    MAX_ARGUMENTS_BYTES,
    TOOL_NAME,
    CsvChartBlock,
    FileBlock,
    InlineChartBlock,
    MetricsBlock,
    RichOutputArgs,
    json_size,
    rich_output_json_schema,
    validate_rich_output,
)
from streams.files.rich_output_tool import ACCEPTED_TEXT, run_rich_output

EMOJI = "😀"  # one code point, four UTF-8 bytes: lengths count code points


# --------------------------------------------------------------------------- builders


def metrics(**extra: Any) -> dict[str, Any]:
    return {"type": "metrics", "items": [{"label": "Users", "value": "42"}], **extra}


def inline(**extra: Any) -> dict[str, Any]:
    return {
        "type": "chart",
        "chart_type": "line",
        "title": "Sales",
        "summary": "Up",
        "labels": ["Jan", "Feb"],
        "series": [{"label": "sales", "values": [1, None]}],
        **extra,
    }


def csv_chart(**csv: Any) -> dict[str, Any]:
    source = {"path": "data.csv", "x_column": "month", "series": [{"column": "sales"}], **csv}
    return {"type": "chart", "chart_type": "bar", "title": "C", "summary": "S", "csv": source}


def file_block(**extra: Any) -> dict[str, Any]:
    return {"type": "file", "path": "README.md", **extra}


def args(*blocks: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"version": 1, "title": "Report", "blocks": list(blocks) or [metrics()], **top}


def check(arguments: Any) -> list[tuple[str, str]]:
    model, issues = validate_rich_output(arguments)
    assert (model is None) == bool(issues)
    return [(i.path, i.code) for i in issues]


def codes(issues: list[Issue]) -> list[str]:
    return [i.code for i in issues]


# --------------------------------------------------------------------------- the path rule

PATH_TABLE: list[tuple[str, set[str]]] = [
    ("data.csv", set()),
    ("dir/sub/data.csv", set()),
    ("dir\\sub\\data.csv", set()),
    ("./data.csv", set()),
    ("a/./b.csv", set()),
    ("a..b.csv", set()),
    ("...", set()),
    (".hidden", set()),
    (" data.csv", set()),
    ("Cc:x", set()),
    ("1:x", set()),
    ("é:x", set()),
    ("datax:y", set()),
    ("http:/x", set()),
    ("ab:c", set()),
    ("", {"blank_path"}),
    ("   ", {"blank_path"}),
    ("\t\n", {"blank_path"}),
    ("a\0b", {"nul_in_path"}),
    ("/etc/passwd", {"absolute_path"}),
    ("//server/share", {"absolute_path"}),
    ("\\etc\\passwd", {"absolute_path"}),
    ("\\\\server\\share", {"absolute_path"}),
    ("http://example.com/a.csv", {"url_path"}),
    ("file:///etc/passwd", {"url_path"}),
    ("a/b://c", {"url_path"}),
    ("data:text/plain,1", {"data_uri_path"}),
    ("DATA:x", {"data_uri_path"}),
    ("DaTa:x", {"data_uri_path"}),
    ("C:\\Windows", {"drive_letter_path"}),
    ("c:x", {"drive_letter_path"}),
    ("z:", {"drive_letter_path"}),
    ("..", {"parent_segment"}),
    ("../a.csv", {"parent_segment"}),
    ("a/../../b", {"parent_segment"}),
    ("a\\..\\b", {"parent_segment"}),
    ("a/..", {"parent_segment", "empty_path_after_cleaning"}),
    (".", {"empty_path_after_cleaning"}),
    ("./", {"empty_path_after_cleaning"}),
    ("./.", {"empty_path_after_cleaning"}),
    (".\\", {"empty_path_after_cleaning"}),
    ("/../x", {"absolute_path", "parent_segment"}),
]


@pytest.mark.parametrize(("value", "expected"), PATH_TABLE)
def test_path_rule_table(value: str, expected: set[str]) -> None:
    issues = check_relative_path(value, "blocks[0].path")
    assert set(codes(issues)) == expected
    assert all(i.path == "blocks[0].path" and i.message for i in issues)


def test_blank_path_reports_only_blank() -> None:
    assert codes(check_relative_path(" ", "p")) == ["blank_path"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ws-3", set()),
        ("ws.3", set()),
        ("a/b", {"not_single_folder"}),
        ("a\\b", {"not_single_folder"}),
        ("/ws", {"absolute_path", "not_single_folder"}),
        ("..", {"parent_segment"}),
        (".", {"empty_path_after_cleaning"}),
        ("", {"blank_path"}),
        ("ws/", {"not_single_folder"}),
        ("c:", {"drive_letter_path"}),
    ],
)
def test_folder_name(value: str, expected: set[str]) -> None:
    assert set(codes(check_folder_name(value, "workspace"))) == expected


# --------------------------------------------------------------------------- valid arguments


def test_constants() -> None:
    assert TOOL_NAME == "show_rich_output_kandev"
    assert CONTRACT_NAME == "kandev.rich_output.v1"


def test_valid_arguments_give_typed_blocks() -> None:
    arguments = args(
        file_block(repo="org/repo", title="", caption="", mime_type="text/markdown"),
        inline(),
        csv_chart(repo="org/repo", series=[{"column": "sales", "label": "Sales"}]),
        metrics(),
        description="",
    )
    model, issues = validate_rich_output(arguments)
    assert issues == []
    assert isinstance(model, RichOutputArgs)
    kinds = [type(b) for b in model.blocks]
    assert kinds == [FileBlock, InlineChartBlock, CsvChartBlock, MetricsBlock]
    assert [i for i, _ in model.csv_charts()] == [2]


def test_optional_fields_may_be_null_or_absent() -> None:
    arguments = args(
        file_block(repo=None, title=None, caption=None, mime_type=None),
        csv_chart(repo=None, series=[{"column": "s", "label": None}]),
        {"type": "metrics", "items": [{"label": "a", "value": "b", "detail": None}]},
        description=None,
    )
    assert check(arguments) == []


def test_csv_suffix_any_case() -> None:
    for path in ("a.csv", "a.CSV", "a.CsV", "dir/x.cSv"):
        assert check(args(csv_chart(path=path))) == []


# --------------------------------------------------------------------------- version and types


@pytest.mark.parametrize(
    ("version", "code"),
    [
        (True, "wrong_type"),
        (1.0, "wrong_type"),
        ("1", "wrong_type"),
        (None, "wrong_type"),
        (2, "out_of_range"),
        (0, "out_of_range"),
    ],
)
def test_version_is_integer_one(version: Any, code: str) -> None:
    assert check(args(version=version)) == [("version", code)]


def test_version_missing() -> None:
    arguments = args()
    del arguments["version"]
    assert check(arguments) == [("version", "missing_field")]


@pytest.mark.parametrize("arguments", [None, [], "x", 1, True])
def test_arguments_must_be_an_object(arguments: Any) -> None:
    assert check(arguments) == [("$", "wrong_type")]


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (float("nan"), "not_finite"),
        (float("inf"), "not_finite"),
        (-float("inf"), "not_finite"),
        (True, "wrong_type"),
        ("3", "wrong_type"),
        ([1], "wrong_type"),
        ({}, "wrong_type"),
    ],
)
def test_values_are_finite_numbers(value: Any, code: str) -> None:
    chart = inline(labels=["a", "b", "c", "d"])
    chart["series"] = [{"label": "s", "values": [1, 2.5, None, value]}]
    assert check(args(metrics(), chart)) == [("blocks[1].series[0].values[3]", code)]


def test_strings_are_not_numbers_and_numbers_not_strings() -> None:
    item = {"label": "a", "value": 42}
    assert check(args({"type": "metrics", "items": [item]})) == [
        ("blocks[0].items[0].value", "wrong_type")
    ]
    assert check(args(title=5)) == [("title", "wrong_type")]


def test_non_json_arguments_are_rejected() -> None:
    assert check(args(description={1, 2})) == [("$", "not_json")]
    assert check(args(description="\ud800")) == [("$", "not_json")]
    assert check(args(description=10**400)) == [("$", "not_json")]


def test_deep_nesting_does_not_crash() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert check(args(description=deep)) == [("$", "not_json")]


# --------------------------------------------------------------------------- closed objects


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        (args(color="red"), "color"),
        (args(file_block(html="<b>")), "blocks[0].html"),
        (args(inline(style="x")), "blocks[0].style"),
        (args(csv_chart(url="http://x")), "blocks[0].csv.url"),
        (args(metrics(layout="grid")), "blocks[0].layout"),
        (
            args({"type": "metrics", "items": [{"label": "a", "value": "b", "c": 1}]}),
            "blocks[0].items[0].c",
        ),
        (
            args(csv_chart(series=[{"column": "a", "color": "red"}])),
            "blocks[0].csv.series[0].color",
        ),
    ],
)
def test_objects_are_closed(arguments: dict[str, Any], path: str) -> None:
    assert (path, "unknown_field") in check(arguments)


def test_inline_series_is_closed() -> None:
    chart = inline()
    chart["series"] = [{"label": "s", "values": [1, 2], "color": "red"}]
    assert check(args(chart)) == [("blocks[0].series[0].color", "unknown_field")]


# --------------------------------------------------------------------------- block discrimination


def test_block_type_rules() -> None:
    assert check(args({"items": []})) == [("blocks[0].type", "missing_field")]
    assert check(args({"type": 3})) == [("blocks[0].type", "wrong_type")]
    assert check(args({"type": "html"})) == [("blocks[0].type", "unknown_block_type")]
    assert check(args({"type": "Chart"})) == [("blocks[0].type", "unknown_block_type")]
    assert check(args("chart")) == [("blocks[0]", "wrong_type")]  # type: ignore[arg-type]


def test_errors_point_into_the_right_block() -> None:
    chart = inline()
    chart["series"] = [{"label": "s", "values": [1, "x"]}]
    assert check(args(metrics(), chart)) == [("blocks[1].series[0].values[1]", "wrong_type")]


def test_chart_needs_exactly_one_data_form() -> None:
    both = inline(csv=csv_chart()["csv"])
    assert check(args(both)) == [("blocks[0]", "ambiguous_chart_data")]
    only_series_and_csv = csv_chart()
    only_series_and_csv["series"] = []
    assert check(args(only_series_and_csv)) == [("blocks[0]", "ambiguous_chart_data")]
    neither = {"type": "chart", "chart_type": "line", "title": "t", "summary": "s"}
    assert check(args(neither)) == [("blocks[0]", "missing_chart_data")]
    bad_head = {"type": "chart", "chart_type": "pie", "title": "t", "summary": "s", "x": 1}
    assert check(args(bad_head)) == [
        ("blocks[0]", "missing_chart_data"),
        ("blocks[0].chart_type", "invalid_value"),
        ("blocks[0].x", "unknown_field"),
    ]


def test_inline_chart_needs_labels_and_series() -> None:
    chart = inline()
    del chart["series"]
    assert check(args(chart)) == [("blocks[0].series", "missing_field")]


def test_length_mismatch() -> None:
    chart = inline()
    chart["series"] = [
        {"label": "a", "values": [1, 2]},
        {"label": "b", "values": [1]},
        {"label": "c", "values": [1, 2, 3]},
    ]
    assert check(args(chart)) == [
        ("blocks[0].series[1].values", "length_mismatch"),
        ("blocks[0].series[2].values", "length_mismatch"),
    ]


def test_chart_type() -> None:
    assert check(args(inline(chart_type="bar"))) == []
    assert check(args(inline(chart_type="pie"))) == [("blocks[0].chart_type", "invalid_value")]


# --------------------------------------------------------------------------- paths in arguments


def test_file_and_csv_paths_follow_the_path_rule() -> None:
    assert check(args(file_block(path="/etc/passwd"))) == [("blocks[0].path", "absolute_path")]
    assert check(args(file_block(repo="../x"))) == [("blocks[0].repo", "parent_segment")]
    assert check(args(file_block(repo=""))) == [("blocks[0].repo", "blank_path")]
    assert check(args(metrics(), csv_chart(path="../a.csv"))) == [
        ("blocks[1].csv.path", "parent_segment")
    ]
    assert check(args(csv_chart(repo="C:\\r"))) == [("blocks[0].csv.repo", "drive_letter_path")]
    assert check(args(csv_chart(path="data:x.csv"))) == [("blocks[0].csv.path", "data_uri_path")]


def test_csv_path_must_end_in_csv() -> None:
    assert check(args(csv_chart(path="data.txt"))) == [("blocks[0].csv.path", "not_csv_path")]
    assert check(args(csv_chart(path="data.csv.txt"))) == [("blocks[0].csv.path", "not_csv_path")]
    assert check(args(csv_chart(path="/x.txt"))) == [
        ("blocks[0].csv.path", "absolute_path"),
        ("blocks[0].csv.path", "not_csv_path"),
    ]


def test_too_long_path_is_reported_once() -> None:
    assert check(args(file_block(path="a" * 1025))) == [("blocks[0].path", "too_long")]
    assert check(args(file_block(path=""))) == [("blocks[0].path", "too_short")]


# --------------------------------------------------------------------------- every limit


Setter = Callable[[int, str], dict[str, Any]]


def _top(field: str) -> Setter:
    return lambda n, ch: args(**{field: ch * n})


def _block(build: Callable[..., dict[str, Any]], field: str) -> Setter:
    return lambda n, ch: args(build(**{field: ch * n}))


def _csv(field: str, suffix: str = "") -> Setter:
    return lambda n, ch: args(csv_chart(**{field: ch * (n - len(suffix)) + suffix}))


def _metric(field: str) -> Setter:
    def build(n: int, ch: str) -> dict[str, Any]:
        item = {"label": "a", "value": "b", field: ch * n}
        return args({"type": "metrics", "items": [item]})

    return build


def _inline_label(n: int, ch: str) -> dict[str, Any]:
    return args(inline(labels=["a", ch * n], series=[{"label": "s", "values": [1, 2]}]))


def _inline_series_label(n: int, ch: str) -> dict[str, Any]:
    return args(inline(series=[{"label": ch * n, "values": [1, 2]}]))


def _csv_series(field: str) -> Setter:
    return lambda n, ch: args(csv_chart(series=[{"column": "c", field: ch * n}]))


STRING_LIMITS: list[tuple[str, Setter, int, int, str]] = [
    # name, setter, min, max, error path
    ("title", _top("title"), 1, 120, "title"),
    ("description", _top("description"), 0, 500, "description"),
    ("file.path", _block(file_block, "path"), 1, 1024, "blocks[0].path"),
    ("file.repo", _block(file_block, "repo"), 1, 255, "blocks[0].repo"),
    ("file.title", _block(file_block, "title"), 0, 120, "blocks[0].title"),
    ("file.caption", _block(file_block, "caption"), 0, 500, "blocks[0].caption"),
    ("file.mime_type", _block(file_block, "mime_type"), 0, 128, "blocks[0].mime_type"),
    ("chart.title", _block(inline, "title"), 1, 120, "blocks[0].title"),
    ("chart.summary", _block(inline, "summary"), 1, 500, "blocks[0].summary"),
    ("chart.labels[]", _inline_label, 1, 120, "blocks[0].labels[1]"),
    ("chart.series[].label", _inline_series_label, 1, 120, "blocks[0].series[0].label"),
    ("csv.path", _csv("path", ".csv"), 5, 1024, "blocks[0].csv.path"),
    ("csv.repo", _csv("repo"), 1, 255, "blocks[0].csv.repo"),
    ("csv.x_column", _csv("x_column"), 1, 120, "blocks[0].csv.x_column"),
    ("csv.series[].column", _csv_series("column"), 1, 120, "blocks[0].csv.series[0].column"),
    ("csv.series[].label", _csv_series("label"), 1, 120, "blocks[0].csv.series[0].label"),
    ("metrics.label", _metric("label"), 1, 120, "blocks[0].items[0].label"),
    ("metrics.value", _metric("value"), 1, 200, "blocks[0].items[0].value"),
    ("metrics.detail", _metric("detail"), 0, 500, "blocks[0].items[0].detail"),
]


@pytest.mark.parametrize(
    ("setter", "low", "high", "path"),
    [pytest.param(s, lo, hi, p, id=name) for name, s, lo, hi, p in STRING_LIMITS],
)
def test_string_limits_in_code_points(setter: Setter, low: int, high: int, path: str) -> None:
    ch = "a" if path.endswith(("path", "repo")) else EMOJI
    assert check(setter(high, ch)) == []
    assert check(setter(high + 1, ch)) == [(path, "too_long")]
    if low >= 1:
        assert check(setter(max(low, 1), ch)) == []
    if low == 1:
        assert (path, "too_short") in check(setter(0, ch)) or (path, "blank_path") in check(
            setter(0, ch)
        )
    else:
        assert check(setter(0, ch)) in ([], [(path, "blank_path")])


def test_empty_title_is_too_short() -> None:
    assert check(args(title="")) == [("title", "too_short")]


def _list_limit_cases() -> list[tuple[str, Callable[[int], dict[str, Any]], int, int, str]]:
    def blocks(n: int) -> dict[str, Any]:
        return args(*([metrics()] * n)) if n else {"version": 1, "title": "t", "blocks": []}

    def labels(n: int) -> dict[str, Any]:
        return args(inline(labels=["x"] * n, series=[{"label": "s", "values": [1] * n}]))

    def series(n: int) -> dict[str, Any]:
        return args(inline(series=[{"label": "s", "values": [1, 2]}] * n))

    def values(n: int) -> dict[str, Any]:
        return args(inline(labels=["x"] * max(n, 1), series=[{"label": "s", "values": [1] * n}]))

    def csv_series(n: int) -> dict[str, Any]:
        return args(csv_chart(series=[{"column": "c"}] * n))

    def items(n: int) -> dict[str, Any]:
        return args({"type": "metrics", "items": [{"label": "a", "value": "b"}] * n})

    return [
        ("blocks", blocks, 1, 4, "blocks"),
        ("labels", labels, 1, 100, "blocks[0].labels"),
        ("series", series, 1, 4, "blocks[0].series"),
        ("values", values, 1, 100, "blocks[0].series[0].values"),
        ("csv.series", csv_series, 1, 4, "blocks[0].csv.series"),
        ("items", items, 1, 6, "blocks[0].items"),
    ]


@pytest.mark.parametrize(
    ("build", "low", "high", "path"),
    [pytest.param(b, lo, hi, p, id=name) for name, b, lo, hi, p in _list_limit_cases()],
)
def test_list_limits(
    build: Callable[[int], dict[str, Any]], low: int, high: int, path: str
) -> None:
    assert check(build(low)) == []
    assert check(build(high)) == []
    assert (path, "too_long") in check(build(high + 1))
    assert (path, "too_short") in check(build(low - 1))


def test_only_the_first_four_blocks_are_examined() -> None:
    found = check(args(*([{"type": "nope"}] * 50)))
    assert found[0] == ("blocks", "too_long")
    assert len(found) == 5


def _sized(target: int) -> dict[str, Any]:
    """Valid arguments that are exactly `target` bytes of UTF-8 JSON (details filled greedily)."""
    item = {"label": EMOJI * 120, "value": EMOJI * 200, "detail": ""}
    items = [[dict(item) for _ in range(6)] for _ in range(4)]
    arguments = args(*({"type": "metrics", "items": group} for group in items))
    for group in items:
        for entry in group:
            need = target - json_size(arguments)
            wide = min(500, need // 4)
            entry["detail"] = EMOJI * wide + "a" * min(500 - wide, need - 4 * wide)
    assert json_size(arguments) == target
    return arguments


def test_whole_arguments_at_most_64_kib() -> None:
    assert check(_sized(MAX_ARGUMENTS_BYTES)) == []
    assert check(_sized(MAX_ARGUMENTS_BYTES + 1)) == [("$", "too_large")]
    assert json_size(_sized(MAX_ARGUMENTS_BYTES)) == len(orjson.dumps(_sized(65536)))


# --------------------------------------------------------------------------- JSON Schema


def _walk(schema: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def test_json_schema_is_draft_2020_12_and_closed() -> None:
    schema = rich_output_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    objects = [n for n in _walk(schema) if n.get("type") == "object"]
    assert len(objects) >= 8
    assert all(n.get("additionalProperties") is False for n in objects)
    assert rich_output_json_schema() == schema
    schema["title"] = "changed"
    assert rich_output_json_schema()["title"] != "changed"


def test_json_schema_agrees_with_the_validator() -> None:
    validator = jsonschema.Draft202012Validator(rich_output_json_schema())
    good = args(file_block(repo="r"), inline(), csv_chart(path="x.CSV"), metrics())
    assert validator.is_valid(good)
    for bad in (
        args(color="red"),
        args(inline(csv=csv_chart()["csv"])),
        args(csv_chart(path="x.txt")),
        args(version=2),
        args(title=""),
        args({"type": "html"}),
        args(*([metrics()] * 5)),
    ):
        assert check(bad) != []
        assert not validator.is_valid(bad)


# --------------------------------------------------------------------------- the tool decision


def call(arguments: Any, *, tool: str = TOOL_NAME, workspace: str = "ws") -> ToolCall:
    return ToolCall(
        call_id="call-1", task_id="task-9", workspace=workspace, tool=tool, arguments=arguments
    )


def test_tool_accepts_without_csv(tmp_path: Path) -> None:
    arguments = args(inline(), metrics(), file_block())
    original = copy.deepcopy(arguments)
    decision = run_rich_output(call(arguments), tmp_path, 1024)
    assert decision.status == "ok"
    assert decision.text == ACCEPTED_TEXT == "Rich output accepted."
    assert decision.input == original
    assert decision.output is None
    assert decision.issues == []


def test_tool_accepts_without_csv_even_if_the_workspace_does_not_exist(tmp_path: Path) -> None:
    decision = run_rich_output(call(args(), workspace="missing"), tmp_path, 1024)
    assert decision.status == "ok"


def test_tool_with_csv_returns_the_snapshot(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "data.csv").write_text("month,sales\nJan,1\nFeb,2.5\n")
    arguments = args(metrics(), csv_chart())
    decision = run_rich_output(call(arguments), tmp_path, 1024)
    expected = {
        "version": 1,
        "resolved_charts": [
            {
                "block_index": 1,
                "labels": ["Jan", "Feb"],
                "series": [{"label": "sales", "values": [1, 2.5]}],
            }
        ],
    }
    assert decision.status == "ok"
    assert decision.output == expected
    assert decision.text == orjson.dumps(expected).decode()
    assert orjson.loads(decision.text) == expected
    assert decision.input == arguments


def test_tool_rejects_other_tools(tmp_path: Path) -> None:
    decision = run_rich_output(call(args(), tool="json"), tmp_path, 1024)
    assert decision.status == "error"
    assert codes(decision.issues) == ["unknown_tool"]
    assert decision.text.startswith("tool: unknown_tool: ")
    assert decision.input is None and decision.output is None


@pytest.mark.parametrize(
    ("workspace", "code"),
    [
        ("..", "parent_segment"),
        ("a/b", "not_single_folder"),
        ("/abs", "absolute_path"),
        (".", "empty_path_after_cleaning"),
        (" ", "blank_path"),
        ("a\\b", "not_single_folder"),
    ],
)
def test_tool_rejects_unsafe_workspace_names(tmp_path: Path, workspace: str, code: str) -> None:
    decision = run_rich_output(call(args(), workspace=workspace), tmp_path, 1024)
    assert decision.status == "error"
    assert code in codes(decision.issues)
    assert all(i.path == "workspace" for i in decision.issues)


def test_tool_error_text_names_path_and_rule(tmp_path: Path) -> None:
    decision = run_rich_output(call(args(csv_chart(path="../x.csv"))), tmp_path, 1024)
    assert decision.status == "error"
    assert decision.text.startswith("blocks[0].csv.path: parent_segment: ")
    assert decision.input is None and decision.output is None


def test_tool_error_text_is_bounded(tmp_path: Path) -> None:
    bad_item = {"label": 1, "value": 2, "detail": 3}
    blocks = [{"type": "metrics", "items": [bad_item] * 6} for _ in range(4)]
    decision = run_rich_output(call(args(*blocks)), tmp_path, 1024)
    assert len(decision.issues) == 72
    lines = decision.text.splitlines()
    assert len(lines) == 51
    assert lines[-1] == "... and 22 more problems"


def test_tool_workspace_missing_when_a_csv_is_needed(tmp_path: Path) -> None:
    decision = run_rich_output(call(args(csv_chart()), workspace="nope"), tmp_path, 1024)
    assert codes(decision.issues) == ["workspace_unavailable"]


def test_tool_workspace_symlinked_outside_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "data.csv").write_text("month,sales\nJan,1\n")
    os.symlink(outside, root / "ws")
    decision = run_rich_output(call(args(csv_chart())), root, 1024)
    assert codes(decision.issues) == ["workspace_outside_root"]
    inside = root / "real"
    inside.mkdir()
    (inside / "data.csv").write_text("month,sales\nJan,1\n")
    os.symlink(inside, root / "alias")
    assert run_rich_output(call(args(csv_chart()), workspace="alias"), root, 1024).status == "ok"


# --------------------------------------------------------------------------- properties

JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


def _near(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(value, JSON)


def _short(low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(min_size=low, max_size=high)


PATHS = st.one_of(
    st.sampled_from(["data.csv", "../x.csv", "/x.csv", "a\\b.CSV", "C:x.csv", ".", "x.txt", ""]),
    st.text(max_size=20),
)
CSV_SOURCE = st.fixed_dictionaries(
    {
        "path": _near(PATHS),
        "x_column": _near(_short(1, 5)),
        "series": _near(st.lists(st.fixed_dictionaries({"column": _short(1, 5)}), max_size=5)),
    },
    optional={"repo": _near(PATHS)},
)
BLOCK = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("file"), "path": _near(PATHS)},
        optional={"repo": _near(PATHS), "title": _near(_short(0, 130))},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("chart"),
            "chart_type": _near(st.sampled_from(["line", "bar"])),
            "title": _near(_short(1, 5)),
            "summary": _near(_short(1, 5)),
        },
        optional={
            "labels": _near(st.lists(_short(0, 5), max_size=4)),
            "series": _near(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "label": _short(1, 3),
                            "values": st.lists(
                                st.one_of(st.none(), st.floats(), st.integers()), max_size=4
                            ),
                        }
                    ),
                    max_size=3,
                )
            ),
            "csv": _near(CSV_SOURCE),
        },
    ),
    st.fixed_dictionaries(
        {
            "type": _near(st.just("metrics")),
            "items": _near(
                st.lists(
                    st.fixed_dictionaries({"label": _short(0, 5), "value": _near(_short(0, 5))}),
                    max_size=7,
                )
            ),
        },
    ),
    JSON,
)
NUMBER = st.one_of(
    st.none(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False)
)
VALID_INLINE = st.integers(1, 5).flatmap(
    lambda n: st.fixed_dictionaries(
        {
            "type": st.just("chart"),
            "chart_type": st.sampled_from(["line", "bar"]),
            "title": _short(1, 5),
            "summary": _short(1, 5),
            "labels": st.lists(_short(1, 5), min_size=n, max_size=n),
            "series": st.lists(
                st.fixed_dictionaries(
                    {"label": _short(1, 3), "values": st.lists(NUMBER, min_size=n, max_size=n)}
                ),
                min_size=1,
                max_size=4,
            ),
        }
    )
)
VALID_BLOCK = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("file"), "path": st.sampled_from(["a.md", "d/b.png", "c\\d.txt"])},
        optional={"repo": st.sampled_from(["r", "org/r"]), "caption": _short(0, 5)},
    ),
    VALID_INLINE,
    st.fixed_dictionaries(
        {
            "type": st.just("chart"),
            "chart_type": st.sampled_from(["line", "bar"]),
            "title": _short(1, 5),
            "summary": _short(1, 5),
            "csv": st.fixed_dictionaries(
                {
                    "path": st.sampled_from(["data.csv", "./data.CSV", "other.csv"]),
                    "x_column": st.sampled_from(["month", "sales", "x"]),
                    "series": st.lists(
                        st.fixed_dictionaries(
                            {"column": st.sampled_from(["month", "sales", "y"])},
                            optional={"label": _short(1, 3)},
                        ),
                        min_size=1,
                        max_size=4,
                    ),
                }
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("metrics"),
            "items": st.lists(
                st.fixed_dictionaries(
                    {"label": _short(1, 5), "value": _short(1, 5)},
                    optional={"detail": _short(0, 5)},
                ),
                min_size=1,
                max_size=6,
            ),
        }
    ),
)
VALID_ARGUMENTS = st.fixed_dictionaries(
    {
        "version": st.just(1),
        "title": _short(1, 5),
        "blocks": st.lists(VALID_BLOCK, min_size=1, max_size=4),
    },
    optional={"description": _short(0, 5)},
)
ARGUMENTS = st.one_of(
    JSON,
    VALID_ARGUMENTS,
    st.fixed_dictionaries(
        {
            "version": _near(st.just(1)),
            "title": _near(_short(0, 5)),
            "blocks": _near(st.lists(st.one_of(BLOCK, VALID_BLOCK), max_size=5)),
        },
        optional={"description": _near(_short(0, 5)), "extra": JSON},
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ARGUMENTS)
def test_any_arguments_give_a_verdict(arguments: Any) -> None:
    model, issues = validate_rich_output(arguments)
    assert (model is None) == bool(issues)
    assert all(isinstance(i, Issue) and i.code and i.path for i in issues)
    if model is not None:
        assert jsonschema.Draft202012Validator(rich_output_json_schema()).is_valid(arguments)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    arguments=ARGUMENTS,
    tool=st.sampled_from([TOOL_NAME, "json"]),
    workspace=st.sampled_from(["ws", "..", "missing", "a/b"]),
)
def test_any_call_gives_ok_or_error(
    tmp_path: Path, arguments: Any, tool: str, workspace: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "data.csv").write_text("month,sales\nJan,1\n")
    decision = run_rich_output(call(arguments, tool=tool, workspace=workspace), tmp_path, 4096)
    assert decision.status in ("ok", "error")
    if decision.status == "ok":
        assert decision.issues == [] and decision.input is arguments
    else:
        assert decision.issues and decision.input is None and decision.output is None
        assert decision.text
