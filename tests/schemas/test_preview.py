"""`preview` (docs/contracts.md, Previews): each projection, one line, 280 code points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.preview import MAX_CODE_POINTS, html_text, one_line, preview
from schemas.registry import CONTRACTS
from schemas.schema_contract import SchemaContract
from schemas.text_rules import escape_controls, find_control
from streams.cli.check_session import CheckSession
from streams.core.leaks import Masker
from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.samples import (
    GITHUB_PAT,
    HTML_ANSWER,
    NOW,
    encode,
    html_reply,
    im_text,
    raw_reply,
)

MASKER = Masker.from_settings(Settings())


def mask(text: str) -> str:
    return MASKER.mask_text(text)[0]


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Gate:
    tmp: Path = tmp_path_factory.mktemp("preview")
    return disk_gate(Settings(workspaces_root=tmp, media_root=tmp))


def delivered_preview(gate: Gate, record: dict[str, Any]) -> str:
    line = CheckSession(gate).line(encode(record), 1, NOW).line()
    assert line["output"] is not None, line
    value: str = line["output"]["preview"]
    return value


def test_the_spec_example(gate: Gate) -> None:
    segments = [
        {"type": "markdown", "data": {"content": "**Result**\n"}},
        {"type": "mention", "data": {"target": "123"}},
        {"type": "text", "data": {"text": ", please look."}},
        {"type": "image", "data": {"media": {"kind": "url", "value": "https://e.com/a.png"}}},
    ]
    record = raw_reply(output={"text": im_text(segments)}, context={"sender_id": "123"})
    assert delivered_preview(gate, record) == "**Result** @123, please look.[image]"


def test_every_segment_type_has_its_token() -> None:
    media = {"media": {"kind": "file", "value": "f"}}
    segments = [
        {"type": "text", "data": {"text": "a"}},
        {"type": "audio", "data": media},
        {"type": "video", "data": media},
        {"type": "file", "data": media},
        {"type": "reply", "data": {"message_id": "m"}},
        {"type": "forward", "data": {"forward_id": "f"}},
        {"type": "face", "data": {"id": 1}},
        {"type": "dice", "data": {}},
        {"type": "rps", "data": {}},
        {"type": "share", "data": {"url": "https://e.com", "title": "The  Title"}},
    ]
    text = CONTRACTS["im.segments.v1"].preview_text({"segments": segments})
    assert text == "a[audio][video][file][reply][forward][face][dice][rps][share: The  Title]"


def test_html_is_its_text_content_with_spaces_at_block_boundaries(gate: Gate) -> None:
    assert one_line(html_text("<p>One &amp; <b>two</b></p><ul><li>x</li><li>y</li></ul>z")) == (
        "One & two x y z"
    )
    assert one_line(html_text("<p>a<br>b</p><table><tr><td>c</td><td>d</td></tr></table>")) == (
        "a b c d"
    )
    preview_text = delivered_preview(gate, html_reply())
    assert preview_text.startswith("Revenue grew 12% [1]. See the report and docid-113-c0.")
    assert "<" not in preview_text and "optional_rag" not in preview_text
    assert HTML_ANSWER  # the sample the reply is built from


def test_a_caller_owned_message_is_compact_json() -> None:
    ticket = SchemaContract("acme.ticket.v1", {"type": "object"})
    assert ticket.preview_text({"title": "x", "n": [1, 2]}) == '{"title":"x","n":[1,2]}'


def test_whitespace_runs_become_one_space_and_the_ends_are_trimmed() -> None:
    assert one_line("  a \n\n b\t\tc\r\n ") == "a b c"
    assert one_line("\u2003a\u00a0\u00a0b ") == "a b"


def test_long_text_is_cut_to_279_code_points_and_an_ellipsis() -> None:
    exact = "é" * MAX_CODE_POINTS
    assert one_line(exact) == exact
    long = "😀" * (MAX_CODE_POINTS + 1)
    cut = one_line(long)
    assert len(cut) == MAX_CODE_POINTS and cut == "😀" * 279 + "…"


def test_the_preview_is_made_from_the_masked_message(gate: Gate) -> None:
    segments = [{"type": "text", "data": {"text": f"key {GITHUB_PAT}"}}]
    text = delivered_preview(gate, raw_reply(output={"text": im_text(segments)}))
    assert text == "key [REDACTED:github-pat]"


def test_a_secret_formed_by_joining_segments_is_masked_in_the_preview() -> None:
    half = len(GITHUB_PAT) // 2
    message = {
        "segments": [
            {"type": "text", "data": {"text": GITHUB_PAT[:half]}},
            {"type": "text", "data": {"text": GITHUB_PAT[half:]}},
        ]
    }
    line = preview(CONTRACTS["im.segments.v1"].preview_text(message), mask)
    assert GITHUB_PAT not in line and "[REDACTED:github-pat]" in line


def test_a_replaced_attachment_shows_the_notice_text(gate: Gate) -> None:
    segments = [{"type": "image", "data": {"media": {"kind": "path", "value": "missing.png"}}}]
    text = delivered_preview(gate, raw_reply(output={"text": im_text(segments)}))
    assert text == Settings().attachment_unavailable_text


def test_a_failure_notice_previews_the_notice_text(gate: Gate) -> None:
    record = raw_reply(attempt=1, output={"text": "prose"})
    assert delivered_preview(gate, record) == one_line(Settings().failure_notice_text)


# ---- properties ------------------------------------------------------------------------------

PIECES = st.sampled_from(
    [GITHUB_PAT, GITHUB_PAT[:20], GITHUB_PAT[20:], "ghp_", "password=", "hunter2", " ", "\n",
     "\t", "  ", "é", "😀", "a", "xyz ", "AKIA", "IOSFODNN7EXAMPLE", "…", "postgres://u:p@h/db"]
)  # fmt: skip
TEXTS = st.one_of(
    st.text(max_size=600),
    st.lists(PIECES, max_size=120).map("".join),
)


@given(TEXTS)
@settings(max_examples=300, deadline=None)
def test_property_never_longer_than_280_code_points(text: str) -> None:
    assert len(preview(text, mask)) <= MAX_CODE_POINTS


@given(TEXTS)
@settings(max_examples=300, deadline=None)
def test_property_never_holds_a_string_masking_would_change(text: str) -> None:
    line = preview(text, mask)
    assert mask(line) == line


@given(TEXTS)
@settings(max_examples=200, deadline=None)
def test_property_one_line_without_outer_whitespace(text: str) -> None:
    line = preview(text, mask)
    assert line == line.strip() and "\n" not in line and "  " not in line


# Text a reply may hold (one with a control character is refused: test_text_rules.py).
REPLY_TEXTS = TEXTS.filter(lambda t: find_control(t) is None)
SEGMENT = st.one_of(
    st.builds(lambda t: {"type": "text", "data": {"text": t}}, REPLY_TEXTS),
    st.builds(lambda t: {"type": "markdown", "data": {"content": t}}, REPLY_TEXTS),
    st.just({"type": "dice", "data": {}}),
    st.builds(
        lambda t: {"type": "share", "data": {"url": "https://e.com", "title": t}}, REPLY_TEXTS
    ),
)


@given(st.lists(SEGMENT, min_size=1, max_size=6))
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_property_the_delivered_preview_is_deterministic_bounded_and_clean(
    gate: Gate, segments: list[dict[str, Any]]
) -> None:
    record = raw_reply(output={"text": im_text(segments)})
    first = delivered_preview(gate, record)
    assert delivered_preview(gate, record) == first
    assert len(first) <= MAX_CODE_POINTS and mask(first) == first


@given(TEXTS)
@settings(max_examples=300, deadline=None)
def test_property_a_preview_never_carries_a_control_character(text: str) -> None:
    line = preview(text, mask)
    assert escape_controls(line) == line


def test_terminal_and_bidi_controls_are_shown_escaped() -> None:
    line = preview("Deploy \x1b[2J\x1b[31mFAILED\x07 \u202egnp.exe\x9b", mask)
    assert line == "Deploy \\x1b[2J\\x1b[31mFAILED\\x07 \\u202egnp.exe\\x9b"


_HALVES = st.sampled_from(
    [GITHUB_PAT[:20], GITHUB_PAT[20:], GITHUB_PAT, "password = ", "Hunter2Hunter2!", " ", "\n"]
)
SECRET_SEGMENT = st.builds(
    lambda parts: {"type": "text", "data": {"text": "".join(parts)}},
    st.lists(_HALVES | REPLY_TEXTS, min_size=1, max_size=4),
)


@given(
    st.lists(SECRET_SEGMENT | SEGMENT, min_size=1, max_size=5), st.sampled_from(["t-1", GITHUB_PAT])
)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_property_the_delivered_preview_is_the_preview_of_the_delivered_message(
    gate: Gate, segments: list[dict[str, Any]], turn_id: str
) -> None:
    """The gate checks the preview line and the ids in one pass when none holds a secret; the
    result is `preview` of the delivered (masked) message's text all the same."""
    record = raw_reply(output={"text": im_text(segments)}, turn_id=turn_id)
    line = CheckSession(gate).line(encode(record), 1, NOW).line()
    output = line["output"]
    text = CONTRACTS["im.segments.v1"].preview_text(output["message"])
    assert output["preview"] == preview(text, mask)
    assert (output["turn_id"] == turn_id) is (turn_id == "t-1")
