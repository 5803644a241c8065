"""The arguments of the `show_rich_output_kandev` tool: contract `kandev.rich_output.v1`, pure.

docs/contracts.md section 3. Every object is closed, lengths count code points, numbers are finite
and JSON types are strict. Blocks are discriminated by hand (not by a pydantic union) so that an
error points at the exact field (`blocks[1].series[0].values[3]`) and an unknown `type` gets its
own code instead of one error per union member.

Decisions the spec leaves open:
- An optional field may be absent or `null` (the docs/records.md convention); `null` means absent.
- `repo` names a sub-folder of the workspace that holds that repository, so it obeys the same
  path rule as `path` (it may be nested, `org/name`); a file resolves to
  `<workspace>/<repo>/<path>`. The reading stage still requires the real path to stay inside the
  workspace itself.
- The size limit is checked first, on `orjson.dumps(arguments)`; an object that orjson cannot
  serialize as plain JSON (too deep, a lone surrogate, a non-JSON Python value) is `not_json`.

Codes defined here (besides the shared pydantic ones in `schemas.errors` and the path codes in
`schemas.paths`): `too_large`, `not_json`, `unknown_block_type`, `length_mismatch`,
`ambiguous_chart_data`, `missing_chart_data`, `not_csv_path`.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, Field, StringConstraints, ValidationError

from schemas import codes
from schemas import rich_output_codes as tool_codes
from schemas.errors import issues_from_validation_error
from schemas.issue import Issue, child_path, json_path
from schemas.issue_sink import capped
from schemas.json_numbers import wide_number_issues
from schemas.paths import check_relative_path
from schemas.records import STRICT
from schemas.text_rules import tree_control_issues

TOOL_NAME = "show_rich_output_kandev"
CONTRACT_NAME = "kandev.rich_output.v1"
MAX_ARGUMENTS_BYTES = 64 * 1024
MAX_BLOCKS = 4
# How many issues a tool error's text lists.
MAX_LISTED_ISSUES = 50
BLOCK_TYPES = ("file", "chart", "metrics")

Title = Annotated[str, StringConstraints(min_length=1, max_length=120)]
Label = Annotated[str, StringConstraints(min_length=1, max_length=120)]
Summary = Annotated[str, StringConstraints(min_length=1, max_length=500)]
PathText = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
RepoText = Annotated[str, StringConstraints(max_length=255)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Version = Annotated[int, Field(ge=1, le=1, json_schema_extra={"const": 1})]
ChartType = Literal["line", "bar"]


class _Closed(BaseModel):
    model_config = STRICT


class FileBlock(_Closed):
    """A workspace file to show; the gate checks its path's spelling but never reads it."""

    type: Literal["file"]
    path: PathText
    repo: RepoText | None = None
    title: Annotated[str, StringConstraints(max_length=120)] | None = None
    caption: Annotated[str, StringConstraints(max_length=500)] | None = None
    mime_type: Annotated[str, StringConstraints(max_length=128)] | None = None


class InlineSeries(_Closed):
    label: Label
    values: Annotated[list[Finite | None], Field(min_length=1, max_length=100)]


class CsvSeries(_Closed):
    column: Label
    label: Label | None = None


class CsvSource(_Closed):
    """A CSV file in the workspace, read once during the call into the snapshot."""

    path: Annotated[PathText, Field(json_schema_extra={"pattern": r"\.[cC][sS][vV]$"})]
    repo: RepoText | None = None
    x_column: Label
    series: Annotated[list[CsvSeries], Field(min_length=1, max_length=4)]


class _ChartHead(_Closed):
    type: Literal["chart"]
    chart_type: ChartType
    title: Title
    summary: Summary


class InlineChartBlock(_ChartHead):
    labels: Annotated[list[Label], Field(min_length=1, max_length=100)]
    series: Annotated[list[InlineSeries], Field(min_length=1, max_length=4)]


class CsvChartBlock(_ChartHead):
    csv: CsvSource


class MetricItem(_Closed):
    label: Label
    value: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    detail: Annotated[str, StringConstraints(max_length=500)] | None = None


class MetricsBlock(_Closed):
    type: Literal["metrics"]
    items: Annotated[list[MetricItem], Field(min_length=1, max_length=6)]


Block = FileBlock | InlineChartBlock | CsvChartBlock | MetricsBlock


class RichOutputArgs(_Closed):
    """Valid arguments of one `show_rich_output_kandev` call."""

    version: Version
    title: Title
    description: Annotated[str, StringConstraints(max_length=500)] | None = None
    blocks: Annotated[list[Block], Field(min_length=1, max_length=MAX_BLOCKS)]

    def csv_charts(self) -> list[tuple[int, CsvChartBlock]]:
        """The charts that read a CSV, with their block index, in block order."""
        return [(i, b) for i, b in enumerate(self.blocks) if isinstance(b, CsvChartBlock)]


class _Head(_Closed):
    """The top level alone; blocks are checked one by one afterwards."""

    version: Version
    title: Title
    description: Annotated[str, StringConstraints(max_length=500)] | None = None
    blocks: Annotated[list[Any], Field(min_length=1, max_length=MAX_BLOCKS)]


class _ChartAnyForm(_ChartHead):
    """The common chart fields, checked when the data form itself is wrong (none or both)."""

    labels: Any = None
    series: Any = None
    csv: Any = None


_INLINE_KEYS = ("labels", "series")
_PASSTHROUGH = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _reject_non_json(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def json_size(value: Any) -> int:
    """Length of `value` as compact UTF-8 JSON (raises orjson.JSONEncodeError if it is not JSON)."""
    return len(orjson.dumps(value, default=_reject_non_json, option=_PASSTHROUGH))


def _model_issues(model: type[BaseModel], value: Any, base: str) -> tuple[Any, list[Issue]]:
    try:
        return model.model_validate(value), []
    except ValidationError as exc:
        return None, issues_from_validation_error(exc, base)


def _has_issue_at(issues: list[Issue], path: str) -> bool:
    return any(i.path == path for i in issues)


def _path_issues(raw: dict[str, Any], key: str, base: str, known: list[Issue]) -> list[Issue]:
    """The path rule for `raw[key]`, unless the field is absent, null or already broken."""
    value = raw.get(key)
    where = child_path(base, key)
    if not isinstance(value, str) or _has_issue_at(known, where):
        return []
    return check_relative_path(value, where)


def _file_block(raw: dict[str, Any], base: str) -> tuple[Any, list[Issue]]:
    model, issues = _model_issues(FileBlock, raw, base)
    issues += _path_issues(raw, "path", base, issues)
    issues += _path_issues(raw, "repo", base, issues)
    return (model if not issues else None), issues


def _length_mismatch(block: InlineChartBlock, base: str) -> list[Issue]:
    want = len(block.labels)
    return [
        tool_codes.LENGTH_MISMATCH.issue(
            child_path(base, "series", j, "values"), values=len(s.values), labels=want
        )
        for j, s in enumerate(block.series)
        if len(s.values) != want
    ]


def _csv_source_issues(raw: dict[str, Any], base: str, known: list[Issue]) -> list[Issue]:
    source = raw.get("csv")
    if not isinstance(source, dict):
        return []
    where = child_path(base, "csv")
    issues = _path_issues(source, "path", where, known)
    issues += _path_issues(source, "repo", where, known)
    path = source.get("path")
    path_at = child_path(where, "path")
    usable = isinstance(path, str) and not _has_issue_at(known, path_at)
    if usable and not str(path).lower().endswith(".csv"):
        issues.append(tool_codes.NOT_CSV_PATH.issue(path_at))
    return issues


def _chart_block(raw: dict[str, Any], base: str) -> tuple[Any, list[Issue]]:
    has_csv = "csv" in raw
    has_inline = any(k in raw for k in _INLINE_KEYS)
    if has_csv and has_inline:
        _, issues = _model_issues(_ChartAnyForm, raw, base)
        form = tool_codes.AMBIGUOUS_CHART_DATA.issue(base)
        return None, [form, *issues]
    if not has_csv and not has_inline:
        _, issues = _model_issues(_ChartAnyForm, raw, base)
        form = tool_codes.MISSING_CHART_DATA.issue(base)
        return None, [form, *issues]
    if has_csv:
        model, issues = _model_issues(CsvChartBlock, raw, base)
        issues += _csv_source_issues(raw, base, issues)
        return (model if not issues else None), issues
    model, issues = _model_issues(InlineChartBlock, raw, base)
    if model is not None:
        issues = _length_mismatch(model, base)
    return (model if not issues else None), issues


def _metrics_block(raw: dict[str, Any], base: str) -> tuple[Any, list[Issue]]:
    return _model_issues(MetricsBlock, raw, base)


def _block(raw: Any, index: int) -> tuple[Any, list[Issue]]:
    """One block, discriminated by its `type` so errors point inside the right block shape."""
    base = json_path("blocks", index)
    if not isinstance(raw, dict):
        return None, [codes.WRONG_TYPE.issue(base, expected="an object with a 'type'")]
    kind = raw.get("type")
    type_at = child_path(base, "type")
    if "type" not in raw:
        return None, [codes.MISSING_FIELD.issue(type_at, "block_type")]
    if not isinstance(kind, str):
        return None, [codes.WRONG_TYPE.issue(type_at, expected="a string")]
    if kind == "file":
        return _file_block(raw, base)
    if kind == "chart":
        return _chart_block(raw, base)
    if kind == "metrics":
        return _metrics_block(raw, base)
    return None, [tool_codes.UNKNOWN_BLOCK_TYPE.issue(type_at)]


def _size_issues(arguments: dict[str, Any]) -> list[Issue]:
    try:
        size = json_size(arguments)
    except (orjson.JSONEncodeError, TypeError) as exc:
        return wide_number_issues(arguments) or [codes.NOT_JSON.issue("$", "plain", error=exc)]
    if size > MAX_ARGUMENTS_BYTES:
        return [tool_codes.TOO_LARGE.issue("$", size=size, limit=MAX_ARGUMENTS_BYTES)]
    return []


def validate_rich_output(arguments: Any) -> tuple[RichOutputArgs | None, list[Issue]]:
    """Check a call's arguments; paths are relative to the arguments (`blocks[0].title`)."""
    args, issues, _ = check_rich_output(arguments)
    return args, issues


def check_rich_output(
    arguments: Any,
) -> tuple[RichOutputArgs | None, list[Issue], list[tuple[int, CsvChartBlock]]]:
    """`validate_rich_output`, and the CSV charts that are valid on their own even when the
    rest is not: their files can still be read, so one answer names every error."""
    if not isinstance(arguments, dict):
        return None, [codes.WRONG_TYPE.issue("$", "arguments")], []
    issues = _size_issues(arguments)
    if issues:
        return None, issues, []
    head, issues = _model_issues(_Head, arguments, "$")
    raw_blocks = arguments.get("blocks")
    blocks: list[Any] = []
    if isinstance(raw_blocks, list):
        for index, raw in enumerate(raw_blocks[:MAX_BLOCKS]):
            block, block_issues = _block(raw, index)
            blocks.append(block)
            issues += block_issues
    issues = capped([*issues, *tree_control_issues(arguments)])
    charts = [(i, b) for i, b in enumerate(blocks) if isinstance(b, CsvChartBlock)]
    if issues or head is None:
        return None, issues, charts
    args = RichOutputArgs.model_construct(
        {"version", "title", "description", "blocks"} & set(arguments),
        version=head.version,
        title=head.title,
        description=head.description,
        blocks=blocks,
    )
    return args, [], charts


def error_text(issues: list[Issue]) -> str:
    """A tool error's text: one line per issue naming the path and the rule, so the agent can
    fix its call (at most MAX_LISTED_ISSUES lines, then how many more)."""
    lines = [f"{i.path}: {i.code}: {i.message}" for i in issues[:MAX_LISTED_ISSUES]]
    if len(issues) > MAX_LISTED_ISSUES:
        lines.append(f"... and {len(issues) - MAX_LISTED_ISSUES} more problems")
    return "\n".join(lines)


def _one_of_blocks(schema: dict[str, Any]) -> None:
    """Blocks match exactly one shape: say `oneOf`, not pydantic's `anyOf`."""
    items = schema["properties"]["blocks"]["items"]
    if "anyOf" in items:
        items["oneOf"] = items.pop("anyOf")


_SCHEMA_CACHE: dict[str, Any] = {}


def rich_output_json_schema() -> dict[str, Any]:
    """Draft 2020-12 JSON Schema of the arguments (closed objects); the path rule is in prose."""
    if not _SCHEMA_CACHE:
        schema = RichOutputArgs.model_json_schema(mode="validation")
        _one_of_blocks(schema)
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"urn:replygate:{CONTRACT_NAME}",
            **schema,
            "description": (
                f"Arguments of the {TOOL_NAME} tool ({CONTRACT_NAME}). At most "
                f"{MAX_ARGUMENTS_BYTES} bytes as UTF-8 JSON. Paths are relative to the "
                "workspace: not blank, no NUL, no leading '/' or '\\', no '://', no 'data:', "
                "no drive letter, no '..' segment, not '.'. A chart has either labels+series "
                "(every values list as long as labels) or csv, never both."
            ),
        }
        _SCHEMA_CACHE.update(schema)
    return copy.deepcopy(_SCHEMA_CACHE)
