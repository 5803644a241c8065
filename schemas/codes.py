"""The stable codes replygate emits: the shared error codes, dead-letter and notice reasons.

A reply contract brings its own codes (`ReplyContract.codes`, built with `code` and `table`);
`schemas.registry.issue_codes()` is every error code, the shared ones and each registered
contract's. The metrics allow-lists, the catalogue `docs/error-codes.md` and the tests read them,
so a code is named, explained and counted in one place. A code that is not registered is a bug:
`tests/schemas/test_codes.py` scans the code base for codes it emits. A code builds its own
issues from its `template` or a named form (`RECORD_TOO_LARGE.issue("$", size=..., limit=...)`,
`NOT_JSON.issue("$", "no_value")`): no other module words an issue
(`tests/schemas/test_code_words.py`).

`python -m schemas.catalogue` rewrites `docs/error-codes.md`; `--check` says whether it is current.
Pure: no Kafka, no I/O outside `main`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from schemas.issue import Issue

# Where a shared code comes from: every contract, the JSON reading, a caller-owned schema, the
# rich-output tool, reply selection, or the record around the reply. A reply contract's own codes
# live with the contract (`ReplyContract.codes`), its name as their first `where`.
ANY: Final = "any contract"
JSON: Final = "every JSON contract"
SCHEMA: Final = "caller-owned contracts"
SELECT: Final = "reply selection"
RECORD: Final = "record"
# The rich-output tool: the shared codes it also emits name it; its own codes live with the tool
# (schemas/rich_output_codes.py), and the catalogue shows the tool's contract name for it.
RICH: Final = "the rich-output tool"
# How many issues one validation lists at most; then one `too_many_errors` (TOO_MANY_ERRORS).
MAX_ISSUES: Final = 100


@dataclass(frozen=True, slots=True)
class Code:
    """One stable code: who emits it, what it means, and a message as a person would see it.

    A code builds its own issues (`issue`) from its `template`, or from one of its named
    `forms` where one code is worded for several situations, so its wording lives here alone
    (pydantic-core's model: an error type carries its message template).
    """

    name: str
    where: tuple[str, ...]
    meaning: str
    example_path: str = "$"
    example: str = ""
    template: str = ""
    forms: Mapping[str, str] = field(default_factory=dict)
    # What the example is rendered from: its placeholders' values, and `form` when it is not
    # the template (empty: a wording without placeholders, or pydantic's own words).
    example_context: Mapping[str, object] = field(default_factory=dict)

    def message(self, form: str = "", /, **ctx: object) -> str:
        """The template (or the named form) filled with `ctx`: host values, never the input's
        own text unless the code quotes it cut short."""
        return (self.forms[form] if form else self.template).format(**ctx)

    def issue(self, path: str, form: str = "", /, **ctx: object) -> Issue:
        """The Issue at `path`, its message `message(form, **ctx)`."""
        return Issue(path, self.name, self.message(form, **ctx))

    def templates(self) -> dict[str, str]:
        """Every wording this code has, by form ("" the template): what the tests render."""
        return {name: text for name, text in {"": self.template, **self.forms}.items() if text}


class UnknownCode(KeyError):
    """A code that is not in the registry: add it here (and regenerate the catalogue)."""


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a record became a dead letter or an attachment was replaced: a name and what it
    means. Not an error code: nobody is told it in a message, so it has no wording."""

    name: str
    meaning: str


_Named = TypeVar("_Named", Code, Reason)


def table(*codes: _Named) -> Mapping[str, _Named]:
    """Codes (or reasons) by name; a repeated name is a mistake, caught at import."""
    table: dict[str, _Named] = {}
    for code in codes:
        if code.name in table:
            raise ValueError(f"code {code.name!r} is registered twice")
        table[code.name] = code
    return table


def code(
    name: str,
    where: str | tuple[str, ...],
    meaning: str,
    path: str,
    example: str | Mapping[str, object],
    template: str = "",
    **forms: str,
) -> Code:
    """A Code whose catalogue example is rendered from its own wording: `example` is the
    context (`{"limit": 100}`, with `"form"` naming a form other than the template); "" with a
    template of no placeholders shows the template itself; a string is pydantic's own words,
    for a code pydantic reports.

    `forms` are its other named wordings (`WRONG_TYPE.issue(path, "union")`)."""
    places = (where,) if isinstance(where, str) else where
    if isinstance(example, Mapping):
        context = {k: v for k, v in example.items() if k != "form"}
        wording = forms[str(example["form"])] if "form" in example else template
        shown = wording.format(**context)
        return Code(name, places, meaning, path, shown, template, forms, example)
    shown = example or ("" if "{" in template else template)
    return Code(name, places, meaning, path, shown, template, forms)


_c = code


# The caller-owned contracts' messages, by failing keyword (`schema.<keyword>`).
_SCHEMA_TEMPLATES: Final = {
    "type": "has the wrong JSON type; the schema allows {types}",
    "enum": "is not one of the values the schema lists",
    "const": "is not the one value the schema allows",
    "multipleOf": "is not a multiple of {multiple_of}",
    "maximum": "is above the maximum {limit}",
    "exclusiveMaximum": "must be below {limit}",
    "minimum": "is below the minimum {limit}",
    "exclusiveMinimum": "must be above {limit}",
    "maxLength": "is longer than {limit} characters",
    "minLength": "is shorter than {limit} characters",
    "pattern": "does not match the pattern {pattern}",
    "format": "is not a valid {format}",
    "maxItems": "has more than {limit} items",
    "minItems": "has fewer than {limit} items",
    "uniqueItems": "has repeated items; they must be unique",
    "contains": "does not have the items the schema's contains asks for",
    "minContains": "has too few items matching contains",
    "maxContains": "has too many items matching contains",
    "maxProperties": "has more than {limit} properties",
    "minProperties": "has fewer than {limit} properties",
    "required": "is required",
    "dependentRequired": "is required when the property it depends on is present",
    "additionalProperties": "is not a property the schema allows here",
    "unevaluatedProperties": "is not a property the schema allows here",
    "unevaluatedItems": "is an item the schema does not allow here",
    "items": "is an item the schema does not allow here",
    "propertyNames": "has a property name the schema does not allow",
    "oneOf": "must match exactly one of the schema's oneOf alternatives",
    "anyOf": "must match at least one of the schema's anyOf alternatives",
    "not": "matches a schema that it must not match",
    "false": "is not allowed here (the schema is false)",
    "contentEncoding": "is not in the encoding the schema names",
    "contentMediaType": "is not of the media type the schema names",
}

# ---- error codes (`errors[].code` in check lines, CorrectionRequests and dead letters) -------

# fmt: off
SHARED_CODES: Final = table(
    # Structure, for every contract (pydantic's checks and our own, mapped onto one vocabulary).
    UNKNOWN_FIELD := _c(
       "unknown_field", (ANY, RECORD), "A key that the closed object does not list.",
       "segments[0].data.colour", "",
       "is not a field of this closed object",
       of="is not a field of {what}",
       progress_only="is only allowed with kind progress",
       final_only="is only allowed on a final reply"),
    MISSING_FIELD := _c(
       "missing_field", (ANY, RECORD), "A required key is absent.",
       "segments[0].data", "",
       "is required",
       progress="is required with kind progress",
       block_type="is required ('file', 'chart' or 'metrics')"),
    WRONG_TYPE := _c(
       "wrong_type", (ANY, RECORD),
       "A value of the wrong JSON type: no coercion, so `\"1\"` is not a number, `1` not a "
       "string and `true` not a number.",
       "segments[0].data.text", "Input should be a valid string",
       "must be {expected}",
       union="has the wrong JSON type",
       arguments="the arguments must be a JSON object",
       key="is a key that is not a string; JSON object keys are strings",
       json="is a Python {kind}, not a JSON value (null, true/false, a number, a string, an "
       "array or an object)"),
    TOO_SHORT := _c(
       "too_short", (ANY, RECORD), "A string or list shorter than its minimum (code points).",
       "title", "String should have at least 1 character", "",
       progress="is empty; a progress summary needs text",
       needs_text="{what} needs text"),
    TOO_LONG := _c(
       "too_long", (ANY, RECORD),
       "A string or list longer than its maximum (code points), or a reply over the size the "
       "contract accepts.",
       "title", "String should have at most 120 characters", "",
       chars="is longer than {limit} characters",
       items="has more than {limit} {items}",
       progress="has {length} characters after trimming; at most {limit}"),
    INVALID_VALUE := _c(
       "invalid_value", (ANY, RECORD),
       "A value outside its closed set (a literal or enum), or a value its own check refused.",
       "action", "Input should be 'cancel'", "",
       no_reply="holds no reply: nothing would be delivered",
       not_delivered="is not the message that {contract} delivers",
       preview="is not one trimmed line of at most {limit} characters"),
    INTEGER_OUT_OF_RANGE := _c(
       "integer_out_of_range", (JSON, RICH),
       "An integer literal outside 64 bits, which JSON readers would silently turn into a "
       "float: refused (send it as a string). In a reply's text or a `json` tool call's or a "
       "rich-output call's arguments at its path; in a record's envelope the record is an "
       "`invalid_envelope` dead letter.",
       "segments[0].data.id",
       {"digits": 30},
       "has {digits} digits, beyond the 64-bit range it could be carried in exactly; "
       "send it as a string",
       at="the integer at character {at} has {digits} digits, beyond the 64-bit range it "
       "could be carried in exactly; send it as a string"),
    NOT_FINITE := _c(
       "not_finite", (ANY,),
       "A number that is NaN or infinite, or a literal beyond the double range (`1e400`) in "
       "a reply's text or a tool call's arguments (at its path).",
       "blocks[0].series[0].values[2]", "Input should be a finite number",
       "is too large to be a finite number",
       nan="is NaN or infinite: JSON has no such number (send null or a finite number)"),
    CONTROL_CHARACTER := _c(
       "control_character", (ANY,),
       "NUL, another C0 or a C1 control character (tab, line feed and carriage return are "
       "fine), or a bidirectional embedding, override or isolate character (U+202A-U+202E, "
       "U+2066-U+2069) in a string of the reply: a reader's terminal or client would act on "
       "it. The marks U+200E, U+200F and U+061C stay valid. The path names the code point's "
       "index in the string (or the key that holds one). Also in a progress summary's text, "
       "where DEL (U+007F) is refused too.",
       "segments[0].data.text[5]",
       {"code_point": 27},
       "contains the control character U+{code_point:04X}; only tab, line feed and carriage "
       "return are allowed, and no bidirectional override, embedding or isolate"),
    _c("out_of_range", (ANY, RECORD), "A number outside its bounds (e.g. `attempt` is 0 or 1).",
       "attempt", "Input should be less than or equal to 1"),
    _c("invalid_format", (ANY, RECORD), "A string that does not match its pattern.",
       "platform", "String should match pattern '^[a-z0-9][a-z0-9_-]*$'"),
    INVALID_URL := _c(
       "invalid_url", (ANY,), "Not an absolute http:// or https:// URL with a host.",
       "segments[2].data.url", "",
       "must be an absolute http:// or https:// URL with a host",
       media="a media URL must be an absolute http:// or https:// URL with a host"),
    INVALID_DATETIME := _c(
       "invalid_datetime", (RECORD,), "A timestamp that is not ISO 8601 with a time zone.",
       "produced_at", "",
       "has no time zone (use Z or +00:00)",
       not_iso="is not an ISO 8601 timestamp"),
    TOO_MANY_ERRORS := _c(
       "too_many_errors", ANY,
       "The list of errors was cut: only the first ones are listed, fix them and resend.",
       "$", {"listed": 100},
       "the list of errors was cut after {listed}; fix these and resend"),
    NOT_JSON := _c(
       "not_json", (JSON, RICH, RECORD),
       "Not exactly one JSON value: a Markdown fence, prose around the JSON, two objects, "
       "NaN/Infinity, or bytes that are not UTF-8 JSON.",
       "$",
       {"form": "not_one", "what": "object",
        "error": "unexpected character, expected a JSON value: line 1 column 1 (char 0)"},
       "not one UTF-8 JSON value: {error}",
       no_text="there is no reply text; reply with one JSON {what}",
       too_deep="is nested too deeply to be parsed (more than 1024 levels)",
       not_one="must be exactly one JSON {what} and nothing else: no Markdown fence, no text "
       "around it, no second value ({error})",
       arguments="the json tool call's arguments must be one JSON object",
       not_object="must be one JSON object, not an array, string, number or null",
       null="is null (or absent): a reply is one JSON value other than null",
       plain="is not plain JSON: {error}",
       no_value="the record has no value",
       bare="not one UTF-8 JSON value"),
    DUPLICATE_KEY := _c(
       "duplicate_key", (JSON, RICH, SCHEMA, RECORD),
       "A JSON object with the same key twice, at any depth (a reply, tool-call arguments, a "
       "caller-owned schema's reply): two JSON readers would see two different values, so "
       "neither is taken. The path names the key. In a record's envelope the record is an "
       "`invalid_envelope` dead letter.",
       "segments[0].data.text", "",
       "is a key this object holds more than once; give each key once"),
    LONE_SURROGATE := _c(
       "lone_surrogate", (JSON, RICH, SCHEMA, RECORD),
       "A string with a `\\uD800`-`\\uDFFF` escape that is not half of a surrogate pair: "
       "JSON readers disagree on what it is (replaced, kept or refused). The path names the "
       "string (or key). In a record's envelope the record is a `not_json` dead letter.",
       "segments[0].data.text", "",
       "holds a lone surrogate escape (\\uD800-\\uDFFF without its pair); write the "
       "character itself, or a complete pair",
       at="the JSON text holds a lone surrogate escape (\\uD800-\\uDFFF without its "
       "pair) at character {at}; write the character itself, or a complete pair"),
    # Where the reply comes from (every reply contract).
    AMBIGUOUS_REPLY := _c(
       "ambiguous_reply", SELECT,
       "Both a `json` tool call and `output.text` (or text and `output.chunks`): "
       "which one counts?",
       "output", "",
       "both a json tool call and output.text are present; send the reply in one of them",
       chunks="both output.text and output.chunks are present; send the reply in one of them"),
    MISSING_REPLY := _c(
       "missing_reply", SELECT, "Neither a `json` tool call nor `output.text`.",
       "output", "", "there is neither a json tool call nor output.text",
       text_only="this contract takes output.text; a json tool call is not a reply here",
       progress="a progress summary is output.text"),
    MULTIPLE_JSON_TOOL_CALLS := _c(
       "multiple_json_tool_calls", SELECT, "More than one tool call named `json`.",
       "output.tool_calls", {"count": 2},
       "{count} tool calls are named json; send the reply in exactly one"),
    INCOMPLETE_STREAM := _c(
       "incomplete_stream", SELECT,
       "A streamed final reply (`output.chunks: N`) whose chunks `0 .. N-1` did not all come "
       "before it; still corrected.",
       "output.chunks",
       {"missing": 1, "count": 3, "first": 1},
       "{missing} of {count} chunks never came (the first is seq {first}); send every "
       "chunk before the final reply"),
    STREAM_TOO_LARGE := _c(
       "stream_too_large", SELECT,
       "The chunks of a streamed final reply passed `max_record_bytes` (or the chunk count "
       "limit) for their turn and attempt; still corrected.",
       "output.chunks",
       {"limit": 1048576, "chunks": 10000},
       "the chunks pass the limit of {limit} bytes (or {chunks} chunks) per turn and "
       "attempt; send a shorter reply"),
    INVALID_REPLY := _c(
       "invalid_reply", SELECT,
       "A contract said no without saying why (a registered contract's bug); still corrected.",
       "$", "", "the reply is invalid"),
    # caller-owned contracts (JSON Schema): `schema.` + the failing keyword
    *(_c(f"schema.{keyword}", SCHEMA, meaning, path, message, _SCHEMA_TEMPLATES[keyword])
      for keyword, meaning, path, message in (
        ("type", "A value of a JSON type the schema does not allow.", "items[0].title",
         {"types": "string"}),
        ("enum", "A value outside the schema's `enum`.", "priority",
         ""),
        ("const", "A value other than the schema's `const`.", "version",
         ""),
        ("multipleOf", "A number that is not a multiple of `multipleOf`.", "count",
         {"multiple_of": 5}),
        ("maximum", "A number above `maximum`.", "count", {"limit": 10}),
        ("exclusiveMaximum", "A number not below `exclusiveMaximum`.", "count",
         {"limit": 10}),
        ("minimum", "A number below `minimum`.", "count", {"limit": 0}),
        ("exclusiveMinimum", "A number not above `exclusiveMinimum`.", "count",
         {"limit": 0}),
        ("maxLength", "A string longer than `maxLength` (code points).", "title",
         {"limit": 120}),
        ("minLength", "A string shorter than `minLength` (code points).", "title",
         {"limit": 1}),
        ("pattern", "A string that does not match `pattern`.", "id",
         {"pattern": "^T-[0-9]+$"}),
        ("format", "A string that is not of its `format` (only where the schema asserts "
         "formats).", "email", {"format": "email"}),
        ("maxItems", "An array longer than `maxItems`.", "items", {"limit": 50}),
        ("minItems", "An array shorter than `minItems`.", "items", {"limit": 1}),
        ("uniqueItems", "An array with repeated items under `uniqueItems`.", "tags",
         ""),
        ("contains", "An array without an item matching `contains`.", "items",
         ""),
        ("minContains", "Fewer items matching `contains` than `minContains`.", "items",
         ""),
        ("maxContains", "More items matching `contains` than `maxContains`.", "items",
         ""),
        ("maxProperties", "An object with more properties than `maxProperties`.", "meta",
         {"limit": 10}),
        ("minProperties", "An object with fewer properties than `minProperties`.", "meta",
         {"limit": 1}),
        ("required", "A property the schema requires is absent; the path names it.",
         "items[0].title", ""),
        ("dependentRequired", "A property `dependentRequired` asks for is absent; the path "
         "names it.", "end", ""),
        ("additionalProperties", "A property that `additionalProperties: false` (or its "
         "schema) refuses; the path names it.", "items[0].colour",
         ""),
        ("unevaluatedProperties", "A property no subschema evaluated, under "
         "`unevaluatedProperties`; the path names it.", "colour",
         ""),
        ("unevaluatedItems", "An array item no subschema evaluated, under "
         "`unevaluatedItems`.", "items", ""),
        ("items", "An array item beyond `prefixItems` where `items` is false.", "pair[2]",
         ""),
        ("propertyNames", "A property name that `propertyNames` refuses.", "meta",
         ""),
        ("oneOf", "A value that matches none, or more than one, of the `oneOf` schemas.",
         "items[1]", ""),
        ("anyOf", "A value that matches none of the `anyOf` schemas.", "contact",
         ""),
        ("not", "A value that matches the schema under `not`.", "title",
         ""),
        ("false", "A value where the schema is `false` (e.g. `properties: {x: false}`).",
         "internal", ""),
        ("contentEncoding", "A string not in the `contentEncoding` named (where asserted).",
         "data", ""),
        ("contentMediaType", "A string not of the `contentMediaType` named (where asserted).",
         "data", ""),
      )),
    CORRECTION_MISMATCH := _c(
       "correction_mismatch", ANY,
       "A correction (`attempt` 1) whose conversation, platform or contract is not the one its "
       "pending turn asked for: the turn ends with the failure notice.",
       "contract", {"got": "acme.ticket.v2", "asked": "acme.ticket.v1"},
       "the correction is for {got!r}; the turn asked for {asked!r}"),
    # The record around the reply (these end as dead letters, not corrections).
    UNKNOWN_RECORD := _c(
       "unknown_record", RECORD, "A `check` line with neither `turn_id` nor `call_id`.",
       "$", "", "a record needs turn_id (reply) or call_id (tool)"),
    UNKNOWN_PLATFORM := _c(
       "unknown_platform", RECORD,
       "A platform that this deployment does not serve (for an endpoint's re-check: not the "
       "platform its delivery topic is for).",
       "platform", {"platform": "fax"}, "{platform!r} is not configured",
       topic="is not {platform!r}, this topic's platform"),
    UNKNOWN_CONTRACT := _c(
       "unknown_contract", RECORD, "A contract that is not registered.",
       "contract", {"contract": "acme.ticket.v9", "known": "acme.ticket.v1, acme.note.v1"},
       "{contract!r} is not registered; known: {known}",
       unregistered="is not a registered contract"),
    RECORD_TOO_LARGE := _c(
       "record_too_large", RECORD, "A record over `max_record_bytes`.",
       "$", {"size": 2000000, "limit": 1048576}, "{size} bytes; the limit is {limit}"),
    PROCESSING_ERROR := _c(
       "processing_error", RECORD,
       "The gate itself failed on the record (a bug, or a registered contract that raised); "
       "only the exception's type is said.",
       "$", {"error": "RuntimeError"}, "the gate failed: {error}"),
    TURN_EXPIRED := _c(
       "turn_expired", RECORD,
       "A reply older than the state horizon, for a turn the gate no longer remembers.",
       "produced_at", "",
       "the reply is older than the state horizon: its turn may already be finished"),
    WRONG_KEY := _c(
       "wrong_key", RECORD,
       "An input record whose Kafka key is not the UTF-8 bytes of its `conversation_id` "
       "(`task_id` for a tool call): no key, a JSON-quoted key or the turn id. It is never "
       "judged, since it may sit on another partition than its turn.",
       "(key)", {"field": "conversation_id", "got": "no key"},
       "the record key must be the UTF-8 bytes of its {field}, exactly (no quotes, no "
       "prefix); the record has {got}"),
)


# ---- dead-letter reasons (`DeadLetter.reason`) --------------------------------------------

DEAD_LETTER_REASONS: Final = table(
    Reason("not_json", "The bytes are not one UTF-8 JSON value."),
    Reason("invalid_envelope",
       "JSON, but not a valid RawReply, ToolCall or TurnControl (or an unknown platform)."),
    Reason("unknown_contract", "The reply names a contract that is not registered."),
    Reason("record_too_large", "The record is over `max_record_bytes`."),
    Reason("processing_error", "The gate failed on the record; the worker carried on."),
    Reason("turn_expired", "The reply is older than the state horizon."),
    Reason("wrong_key",
       "The record's key is not its `conversation_id` (`task_id` on `toolcalls.raw`) as UTF-8 "
       "bytes; its turn is not touched."),
)


# fmt: on

# ---- attachment notice reasons (`Delivery.notices[].reason`, im.segments.v1) ----------------

# fmt: off
NOTICE_REASONS: Final = table(
    Reason("attachment_undecodable", "`base64` media that does not decode strictly."),
    Reason("attachment_unreadable", "A `path` that does not exist or cannot be read."),
    Reason("attachment_outside_root", "A `path` whose real path leaves the media root."),
    Reason("attachment_wrong_kind",
       "Bytes whose magic number is not of the segment's kind (a text file as an image)."),
    Reason("attachment_oversized", "Media over `max_attachment_bytes`."),
)
# fmt: on


def unregistered(names: Iterable[str], known: Mapping[str, Code]) -> list[str]:
    """The names `known` does not hold, sorted (empty when every one is registered)."""
    return sorted(set(names) - set(known))


# A contract's own codes under its heading (`ReplyContract.catalogue_title`, `.codes`).
ContractCodes = Sequence[tuple[str, Mapping[str, Code]]]


def all_codes(contract_codes: ContractCodes) -> Mapping[str, Code]:
    """The shared codes and every contract's own, one table (a name used twice is a mistake)."""
    return table(*SHARED_CODES.values(), *(c for _, own in contract_codes for c in own.values()))


if __name__ == "__main__":
    raise SystemExit("docs/error-codes.md is written by `python -m schemas.catalogue` now")
