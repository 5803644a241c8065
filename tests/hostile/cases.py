"""The hostile cases, each with its expected verdict, action, codes and bounds.

Memory bounds are tracemalloc peaks during one `CheckSession.line` (the input bytes themselves
are allocated before measuring), with about 2x headroom over what was measured on the
development box; they are there to catch a blow-up (a copy per nesting level, a decode of a
claimed size), not to pin exact figures.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import orjson

from tests.hostile import (
    MEMBER,
    Case,
    MiB,
    b64,
    base64_run,
    csv_arguments,
    deep_array,
    deep_object,
    html_reply,
    im_reply,
    media_segment,
    mp4_claiming_1gb,
    one_line,
    png_claiming_huge,
    reply,
    splice,
    text_segment,
    tool_call,
    wav_claiming_1gb,
)
from tests.support.samples import im_text


def _message(out: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = out["message"]
    return message


def _line_reply(unit: str) -> bytes:
    return im_reply(text_segment(one_line(unit)))


def _base64_reply(segment_type: str, data: bytes) -> bytes:
    return im_reply(media_segment("base64", b64(data), segment_type))


def _path_reply(value: str) -> bytes:
    return im_reply(media_segment("path", value))


def _url_delivered(url: str, out: dict[str, Any]) -> bool:
    return bool(_message(out)["segments"][0]["data"]["url"] == url)


def _segments_kept(out: dict[str, Any]) -> bool:
    """The attachment survived: no segment was replaced by the unavailable notice."""
    return all(s["type"] != "text" for s in _message(out)["segments"])


def _snapshot_labels(*labels: str) -> Any:
    def check(out: dict[str, Any]) -> bool:
        snapshot = out["metadata"]["normalized"]["generic"]["output"]
        return bool(snapshot["resolved_charts"][0]["labels"] == list(labels))

    return check


def _html_kept(out: dict[str, Any]) -> bool:
    return bool(_message(out)["html"].startswith("<p>"))


def size_cases() -> list[Case]:
    ten_mb = 10 * MiB
    return [
        Case(
            "10MB_reply_default_limit",
            lambda: im_reply(text_segment("a" * ten_mb)),
            "dead_letter",
            "dead_letter",
            ("record_too_large",),
            dead_reason="record_too_large",
            max_peak=3 * ten_mb,
        ),
        Case(
            "10MB_reply_raised_limit_valid",
            lambda: im_reply(text_segment("a" * ten_mb)),
            "accepted",
            "deliver",
            settings={"max_record_bytes": 16 * MiB},
            max_peak=20 * ten_mb,
            check=lambda out: _message(out)["segments"][0]["data"]["text"].startswith("aaaa"),
        ),
        Case(
            "10MB_prose_raised_limit_not_json",
            lambda: orjson.dumps(reply({"text": "word " * (2 * MiB)})),
            "rejected",
            "request_correction",
            ("not_json",),
            settings={"max_record_bytes": 16 * MiB},
            max_peak=20 * ten_mb,
            # never truncated: the whole invalid reply goes back to the model
            check=lambda out: len(out["invalid_output"]) == 10 * MiB,
        ),
        Case(
            "4MB_secret_spam_dead_letter_masked_and_cut",
            lambda: ("ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 ").encode() * (4 * MiB // 41),
            "dead_letter",
            "dead_letter",
            ("record_too_large",),
            dead_reason="record_too_large",
            max_peak=3 * 4 * MiB,
            check=lambda out: (
                "ghp_A1b2" not in out["record"] and len(out["record"].encode()) <= 64 * 1024
            ),
        ),
    ]


def depth_cases() -> list[Case]:
    return [
        Case(
            "envelope_array_100k_deep",
            lambda: splice(
                reply({"text": im_text([text_segment("hi")])}, provider="@@HOLE@@"),
                deep_array(100_000),
            ),
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
        ),
        Case(
            "envelope_object_100k_deep",
            lambda: b'{"turn_id":"t-1","output":' + deep_object(100_000) + b"}",
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
        ),
        Case(
            "envelope_context_1000_deep",  # within the JSON parser's depth, a wrong type
            lambda: splice(
                reply({"text": "x"}, context={"sender_id": "@@HOLE@@"}), deep_array(1000)
            ),
            "dead_letter",
            "dead_letter",
            ("wrong_type",),
            dead_reason="invalid_envelope",
        ),
        Case(
            "output_text_array_100k_deep",
            lambda: orjson.dumps(
                reply({"text": '{"segments":' + deep_array(100_000).decode() + "}"})
            ),
            "rejected",
            "request_correction",
            ("not_json",),
        ),
        Case(
            "output_text_object_100k_deep",
            lambda: orjson.dumps(reply({"text": deep_object(100_000).decode()})),
            "rejected",
            "request_correction",
            ("not_json",),
        ),
        Case(
            "output_text_1000_deep_inside_segment",
            lambda: orjson.dumps(
                reply(
                    {
                        "text": '{"segments":[{"type":"text","data":{"text":'
                        + deep_array(1000).decode()
                        + "}}]}"
                    }
                )
            ),
            "rejected",
            "request_correction",
            ("wrong_type",),
        ),
        Case(
            "html_in_output_text_100k_deep_json",
            lambda: orjson.dumps(
                reply({"text": deep_array(100_000).decode()}, "assistant.html.v1")
            ),
            "rejected",
            "request_correction",
            ("not_fenced",),
        ),
        Case(
            "tool_arguments_1000_deep",
            lambda: splice(
                tool_call({"version": 1, "title": "x", "blocks": "@@HOLE@@"}), deep_array(1000)
            ),
            "rejected",
            "tool_error",
        ),
    ]


def encoding_cases() -> list[Case]:
    valid = im_reply(text_segment("hello"))
    return [
        Case(
            "invalid_utf8_in_string",
            lambda: valid.replace(b"hello", b"he\xffllo"),
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
            check=lambda out: "\ufffd" in out["record"],
        ),
        Case(
            "overlong_utf8_slash",
            lambda: valid.replace(b"hello", b"he\xc0\xafllo"),
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
        ),
        Case(
            "utf16_encoded_record",
            lambda: valid.decode().encode("utf-16"),
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
        ),
        Case(
            "raw_nul_between_tokens",
            lambda: valid.replace(b'"turn_id"', b'\x00"turn_id"'),
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
        ),
        Case(
            "raw_nul_inside_string",
            lambda: valid.replace(b"hello", b"he\x00llo"),
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
        ),
        Case(
            "lone_surrogate_escape",
            lambda: valid.replace(b"hello", b"he\\\\ud800llo"),  # inside output.text's JSON
            "rejected",
            "request_correction",
            ("lone_surrogate",),
        ),
        Case(
            "escaped_nul_in_im_text_is_a_control_character",
            lambda: im_reply(text_segment("a\x00b")),
            "rejected",
            "request_correction",
            ("control_character",),
        ),
        Case(
            "escaped_nul_in_html",
            lambda: html_reply("<p>a\x00b</p>"),
            "rejected",
            "request_correction",
            ("invalid_character",),
        ),
        Case(
            "utf8_bom_before_record",
            lambda: b"\xef\xbb\xbf" + valid,
            "dead_letter",
            "dead_letter",
            ("not_json",),
            dead_reason="not_json",
        ),
    ]


# 1,000,000-character single lines aimed at the masking rules; each fits the default 1 MiB.
REGEX_TARGETS: dict[str, str] = {
    "password_eq": "password=",
    "api_key_quote": "api_key='",
    "secret_dquote": 'secret="',
    "token_colon": "token: ",
    "pem_begin_only": "-----BEGIN PRIVATE KEY-----",
    "url_userinfo": "https://a:b@",
    "bearer_header": "Authorization: Bearer ",
    "ghp_prefix": "ghp_",
    "xoxb_prefix": "xoxb-",
    "akia_prefix": "AKIA",
    "jwt_prefix": "eyJ",
    "postgres_userinfo": "postgres://u:",
}


def regex_cases() -> list[Case]:
    # A quote is escaped twice on its way into the record (output.text is JSON in JSON), so
    # those lines need a larger record limit to arrive whole.
    cases = [
        Case(
            f"1MB_line_{name}",
            partial(_line_reply, unit),
            "accepted",
            "deliver",
            settings={"max_record_bytes": 4 * MiB} if '"' in unit else {},
            max_peak=64 * MiB,
        )
        for name, unit in REGEX_TARGETS.items()
    ]
    cases += [
        Case(
            "1MB_pem_without_end",
            lambda: im_reply(text_segment("-----BEGIN PRIVATE KEY-----\n" + base64_run(999_000))),
            "accepted",
            "deliver",
            max_peak=64 * MiB,
        ),
        Case(
            "1MB_base64ish_run",
            lambda: im_reply(text_segment(base64_run())),
            "accepted",
            "deliver",
            max_peak=64 * MiB,
        ),
    ]
    return cases


def html_cases() -> list[Case]:
    return [
        Case(
            "html_div_100k_deep_closed_is_too_long",  # 1.1 M characters, over MAX_TEXT_CHARS
            lambda: html_reply("<div>" * 100_000 + "</div>" * 100_000),
            "rejected",
            "request_correction",
            ("too_long",),
            settings={"max_record_bytes": 2 * MiB},
        ),
        Case(
            "html_div_100k_deep_unclosed",
            lambda: html_reply("<div>" * 100_000 + "x"),
            "rejected",
            "request_correction",
            ("too_complex",),
        ),
        Case(
            "html_b_100k_deep",
            lambda: html_reply("<p>" + "<b>" * 100_000 + "x" + "</b>" * 100_000 + "</p>"),
            "rejected",
            "request_correction",
            ("too_complex",),
        ),
        Case(
            "html_unclosed_tags_100k",
            lambda: html_reply("<p><b><i>" * 100_000),
            "rejected",
            "request_correction",
            ("too_complex",),
        ),
        Case(
            "html_unclosed_p_10k",  # below the pre-scan's limits: parsed; the last <p> open
            lambda: html_reply("<p>x" * 9_000),
            "rejected",
            "request_correction",
            ("unclosed_element",),
        ),
        Case(
            "html_entity_flood_named",
            lambda: html_reply("<p>" + "&amp;" * 190_000 + "</p>"),
            "accepted",
            "deliver",
            check=_html_kept,
        ),
        Case(
            "html_entity_flood_numeric",
            lambda: html_reply("<p>" + "&#x1F600;" * 100_000 + "</p>"),
            "accepted",
            "deliver",
            check=_html_kept,
        ),
        Case(
            "html_entity_flood_bare_ampersands",
            lambda: html_reply("<p>" + "&" * 1_000_000 + "</p>"),
            "accepted",
            "deliver",
        ),
        Case(
            "html_entity_flood_unterminated",  # no ; and out of range: parse errors
            lambda: html_reply("<p>" + "&#99999999999" * 70_000 + "</p>"),
            "rejected",
            "request_correction",
            ("html_parse_error",),
        ),
        Case(
            "html_unclosed_comment",
            lambda: html_reply("<p>x</p><!--" + "a" * 100_000),
            "rejected",
            "request_correction",
            ("disallowed_element",),
        ),
        Case(
            "html_attribute_flood",
            lambda: html_reply("<p " + " ".join(f"a{i}=x" for i in range(100_000)) + ">x</p>"),
            "rejected",
            "request_correction",
            ("too_complex",),
        ),
        Case(
            "html_script_in_unclosed_tag_soup",
            lambda: html_reply("<p>" + "<b>" * 50 + "<script>alert(1)</script>"),
            "rejected",
            "request_correction",
            ("disallowed_element",),
        ),
    ]


def _noncanonical(data: bytes) -> str:
    """The same bytes, spelled with non-zero padding bits (`...Q=` becomes `...R=`)."""
    text = b64(data)
    assert text.endswith("=") and not text.endswith("==")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = text[-2]
    return text[:-2] + alphabet[alphabet.index(last) + 1] + "="


def _wrapped(text: str) -> str:
    return "\n".join(text[i : i + 16] for i in range(0, len(text), 16))


def media_cases() -> list[Case]:
    one_gb_claims = [
        ("png_ihdr_65535x65535", "image", png_claiming_huge()),
        ("wav_riff_1GiB", "audio", wav_claiming_1gb()),
        ("mp4_mdat_1GiB", "video", mp4_claiming_1gb()),
    ]
    cases = [
        Case(
            f"base64_{name}_claims_are_not_trusted",
            partial(_base64_reply, kind, data),
            "accepted",
            "deliver",
            check=_segments_kept,
        )
        for name, kind, data in one_gb_claims
    ]
    oversized = 26 * MiB  # decodes to more than the default 25 MiB max_attachment_bytes
    cases += [
        Case(
            "base64_26MiB_in_a_raised_record_is_oversized",
            lambda: im_reply(media_segment("base64", "A" * (oversized // 3 * 4))),
            "accepted",
            "deliver",
            notices=("attachment_oversized",),
            settings={"max_record_bytes": 48 * MiB},
            max_peak=16 * (oversized // 3 * 4),  # ~14x the record measured: linear, not a blow-up
            max_seconds=60.0,
        ),
        Case(
            "base64_claiming_more_than_limit_by_length",
            lambda: im_reply(media_segment("base64", "QUFB" * (MiB // 3 + 1))),
            "accepted",
            "deliver",
            notices=("attachment_oversized",),
            settings={"max_attachment_bytes": MiB, "max_record_bytes": 2 * MiB},
        ),
        Case(
            "base64_noncanonical_padding_bits",
            lambda: im_reply(media_segment("base64", _noncanonical(png_claiming_huge()[:32]))),
            "accepted",
            "deliver",
            notices=("attachment_undecodable",),
        ),
        Case(
            "base64_with_line_breaks",
            lambda: im_reply(media_segment("base64", _wrapped(b64(png_claiming_huge())))),
            "accepted",
            "deliver",
            notices=("attachment_undecodable",),
        ),
    ]
    paths = [
        ("dotdot_proc", "../../../../proc/self/environ", "attachment_outside_root"),
        ("absolute_proc", "/proc/self/environ", "attachment_outside_root"),
        ("symlink_to_proc", "environ.png", "attachment_outside_root"),
        ("symlink_to_dev_zero", "zero.png", "attachment_outside_root"),
        ("fifo", "fifo.png", "attachment_unreadable"),
        ("symlink_loop", "loop_a.png", "attachment_unreadable"),
        ("directory", "folder.png", "attachment_unreadable"),
    ]
    cases += [
        Case(
            f"media_path_{name}",
            partial(_path_reply, value),
            "accepted",
            "deliver",
            notices=(reason,),
        )
        for name, value, reason in paths
    ]
    # A NUL is a control character in any string of a reply: refused before any file is opened.
    cases.append(
        Case(
            "media_path_nul_in_path",
            partial(_path_reply, "ok.png\x00.txt"),
            "rejected",
            "request_correction",
            codes=("control_character",),
        )
    )
    cases.append(
        Case(
            "media_path_regular_file_claiming_huge",
            lambda: im_reply(media_segment("path", "ok.png")),
            "accepted",
            "deliver",
            check=_segments_kept,
        )
    )
    return cases


def csv_cases() -> list[Case]:
    def call(path: str, workspace: str = "ws", **kw: str) -> bytes:
        return orjson.dumps(tool_call(csv_arguments(path, **kw), workspace))

    return [
        Case(
            "csv_quoted_newlines",
            lambda: call("data/quoted_newlines.csv"),
            "accepted",
            "tool_result",
            check=_snapshot_labels("Jan\nuary", "Feb\r\nruary"),
        ),
        Case(
            "csv_crlf",
            lambda: call("data/crlf.csv"),
            "accepted",
            "tool_result",
            check=_snapshot_labels("Jan", "Feb"),
        ),
        Case(
            "csv_bare_cr_line_endings",
            lambda: call("data/bare_cr.csv"),
            "accepted",
            "tool_result",
            check=_snapshot_labels("Jan", "Feb"),
        ),
        Case(
            "csv_1MB_field_default_limit",
            lambda: call("data/big_field.csv"),
            "rejected",
            "tool_error",
            ("csv_too_large",),
        ),
        Case(
            "csv_1MB_field_raised_limit",
            lambda: call("data/big_field.csv"),
            "rejected",
            "tool_error",
            ("csv_field_too_large",),
            settings={"max_csv_bytes": 2 * MiB},
        ),
        Case(
            "csv_10000_columns",
            lambda: call("data/wide.csv", column="c9999"),
            "accepted",
            "tool_result",
            check=_snapshot_labels("m0", "m1", "m2"),
        ),
        Case(
            "csv_20000_columns",
            lambda: call("data/too_wide.csv", column="c19999"),
            "rejected",
            "tool_error",
            ("csv_too_many_columns",),
        ),
        Case("csv_nul", lambda: call("data/nul.csv"), "rejected", "tool_error", ("csv_nul_byte",)),
        Case(
            "csv_invalid_utf8",
            lambda: call("data/bad_utf8.csv"),
            "rejected",
            "tool_error",
            ("csv_invalid_utf8",),
        ),
        Case(
            "csv_dotdot_proc",
            lambda: call("../../../../proc/self/environ.csv"),
            "rejected",
            "tool_error",
            ("parent_segment",),
        ),
        Case(
            "csv_absolute_proc",
            lambda: call("/proc/self/environ.csv"),
            "rejected",
            "tool_error",
            ("absolute_path",),
        ),
        Case(
            "csv_symlink_to_proc",
            lambda: call("data/environ.csv"),
            "rejected",
            "tool_error",
            ("csv_outside_workspace",),
        ),
        Case(
            "csv_symlink_to_proc_fd",
            lambda: call("data/stdin.csv"),
            "rejected",
            "tool_error",
            ("csv_outside_workspace",),
        ),
        Case(
            "csv_fifo",
            lambda: call("data/fifo.csv"),
            "rejected",
            "tool_error",
            ("csv_not_regular_file",),
        ),
        Case(
            "csv_symlink_loop",
            lambda: call("data/loop_a.csv"),
            "rejected",
            "tool_error",
            ("csv_symlink_loop",),
        ),
        Case(
            "csv_workspace_symlinked_to_proc",
            lambda: call("environ.csv", workspace="procws"),
            "rejected",
            "tool_error",
            ("workspace_outside_root",),
        ),
    ]


# URLs with lookalike or invisible characters.
CYRILLIC_HOST = "https://ex\u0430mple.com/report"  # Cyrillic a
FULLWIDTH_HOST = "https://\uff45xample.com/report"  # fullwidth e
PUNYCODE_HOST = "https://xn--exmple-4nf.com/report"  # the Cyrillic-a host, written in ASCII
RLO_PATH = "https://example.com/\u202egpj.exe"  # right-to-left override
ZWSP_HOST = "https://exa\u200bmple.com/"  # zero-width space
LRI_HOST = "https://example.com\u2066.evil.com/"  # left-to-right isolate
FULLWIDTH_COLON = "https\uff1a//example.com/"
FULLWIDTH_SLASHES = "https:\uff0f\uff0fexample.com/"


def confusable_cases() -> list[Case]:
    def share(url: str) -> bytes:
        return im_reply({"type": "share", "data": {"url": url, "title": "t"}})

    def media(url: str) -> bytes:
        return im_reply(media_segment("url", url))

    def href(url: str) -> bytes:
        return html_reply(f'<p><a class="http-source" target="_blank" href="{url}">x</a></p>')

    def source(uri: str) -> bytes:
        return html_reply(f'<p>y <b class="info-source" id="{uri}">[1]</b></p>')

    cases: list[Case] = []
    # The HTML contract's URIs are ASCII only (schemas/uris.py): every lookalike is invalid.
    for label, url in [
        ("cyrillic_host", CYRILLIC_HOST),
        ("fullwidth_host", FULLWIDTH_HOST),
        ("rlo_path", RLO_PATH),
        ("zwsp_host", ZWSP_HOST),
        ("fullwidth_colon", FULLWIDTH_COLON),
    ]:
        cases.append(
            Case(
                f"html_href_{label}",
                partial(href, url),
                "rejected",
                "request_correction",
                ("invalid_uri",),
            )
        )
    cases.append(
        Case(
            "html_source_fullwidth_digit",
            lambda: source("doc://docid-1\uff17-c2-p3?id=text-21"),
            "rejected",
            "request_correction",
            ("invalid_uri",),
        )
    )
    # im.segments.v1: invisible and direction-changing characters, or a scheme not spelled
    # in ASCII, are not a URL; nor, under the one URL rule (schemas.uris, the citations' own),
    # is a host with a non-ASCII letter: a lookalike host is how a share card misleads, and
    # an IDN written in ASCII (xn--...) passes.
    for label, url in [
        ("rlo_path", RLO_PATH),
        ("zwsp_host", ZWSP_HOST),
        ("lri_host", LRI_HOST),
        ("fullwidth_colon", FULLWIDTH_COLON),
        ("fullwidth_slashes", FULLWIDTH_SLASHES),
        ("cyrillic_host", CYRILLIC_HOST),
        ("fullwidth_host", FULLWIDTH_HOST),
    ]:
        for where, build in (("share_url", share), ("media_url", media)):
            cases.append(
                Case(
                    f"im_{where}_{label}",
                    partial(build, url),
                    "rejected",
                    "request_correction",
                    ("invalid_url",),
                )
            )
    cases.append(
        Case(
            "im_share_url_punycode_host",
            partial(share, PUNYCODE_HOST),
            "accepted",
            "deliver",
            check=partial(_url_delivered, PUNYCODE_HOST),
        )
    )
    # A mention is compared exactly: a lookalike of a member's id is not that member.
    cases.append(
        Case(
            "im_mention_fullwidth_digits",
            # MEMBER with its first three digits fullwidth
            lambda: im_reply(
                {"type": "mention", "data": {"target": "\uff15\uff15\uff15" + MEMBER[3:]}}
            ),
            "rejected",
            "request_correction",
            ("unknown_mention_target",),
        )
    )
    return cases


# A GitHub-format token (fake): the secret that the view cases hide in each form, 20,000 times.
_PAT = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _hidden_everywhere(spelled: str) -> Callable[[dict[str, Any]], bool]:
    """No token left in the delivered text, however a reader decodes it; each one masked."""

    def check(out: dict[str, Any]) -> bool:
        message = _message(out)
        text = message["html"] if "html" in message else message["segments"][0]["data"]["text"]
        return spelled not in text and _PAT[4:] not in text and out["masked"][0]["count"] == 20_000

    return check


# 1 MB floods of what each view decodes: nothing to mask, the view must stay cheap.
VIEW_FLOODS: dict[str, Callable[[], bytes]] = {
    # decoded once: `&amp;amp;...` reads `&amp;...`
    "entity_nesting": lambda: html_reply("<p>&amp;" + "amp;" * 200_000 + "#x67;hp_x</p>"),
    "numeric_references_out_of_range": lambda: html_reply(
        "<p>" + ("&#" + "9" * 5_000 + ";") * 150 + "</p>"
    ),
    "percent_1MB": lambda: im_reply(text_segment("%41" * 330_000)),
    "percent_double_encoded": lambda: im_reply(text_segment("%2541" * 200_000)),
    "percent_utf8_invisible": lambda: im_reply(text_segment("%E2%80%8B" * 110_000)),
    "json_escapes": lambda: im_reply(text_segment("\\u0041" * 100_000)),
    "invisible_flood": lambda: im_reply(text_segment("\u200b" * 300_000)),
    "markup_flood": lambda: im_reply(text_segment("<b>x</b>" * 120_000)),
    "markup_unclosed_tags": lambda: im_reply(text_segment("<b " * 300_000)),
}
# A reference beyond U+10FFFF is a WHATWG parse error: refused, and its correction request still
# goes through every view of the masking.
_FLOOD_OUTCOMES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "numeric_references_out_of_range": ("rejected", "request_correction", ("html_parse_error",)),
}
# The same, with the token hidden in every unit: 20,000 matches to map back and mask.
VIEW_SECRET_SPAM: dict[str, str] = {
    "entity": "&#x67;" + _PAT[1:],
    "percent": "%67" + _PAT[1:],
    "invisible": "gh\u200b" + _PAT[2:],
    "markup_split": "gh<b>" + _PAT[2:] + "</b>",
}


def _spam(spelled: str) -> bytes:
    unit = spelled + " "
    if spelled.startswith("&"):
        return html_reply("<p>" + unit * 20_000 + "</p>")
    return im_reply(text_segment(unit * 20_000))


def view_cases() -> list[Case]:
    """Inputs that make each decoded view of leak masking expensive: 1 MB of references,
    escapes, invisible characters or tags, with and without a hidden secret in each unit."""
    floods = [
        Case(f"view_{name}", build, *_FLOOD_OUTCOMES.get(name, ("accepted", "deliver", ())))
        for name, build in VIEW_FLOODS.items()
    ]
    spam = [
        Case(
            f"view_{name}_secret_spam",
            partial(_spam, spelled),
            "accepted",
            "deliver",
            max_peak=64 * MiB,
            check=_hidden_everywhere(spelled),
        )
        for name, spelled in VIEW_SECRET_SPAM.items()
    ]
    too_complex = Case(
        # 60,000 tags: too complex for the contract; the correction request is masked whole
        "view_html_too_complex_correction_masked",
        lambda: html_reply("<p>" + ("<b>gh</b>p_" + _PAT[4:] + " ") * 20_000 + "</p>"),
        "rejected",
        "request_correction",
        ("too_complex",),
        max_peak=64 * MiB,
        check=lambda out: _PAT[4:] not in out["invalid_output"],
    )
    return [*floods, *spam, too_complex]


# The context detector judges each value after a credential word in Python: a megabyte of
# them is its worst input. Deterministic values, so the check can look for each one.
_CREDENTIAL_WORDS = ("token", "password", "api_key", "client_secret", "AUTH_TOKEN", "pwd")
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@cache
def _distinct_credentials() -> tuple[tuple[str, str], ...]:
    """About 1 MB of `word: value` pairs, every value different and random-looking (built
    when the case runs, once)."""
    rng = random.Random(32)
    pairs, size = [], 0
    while size < 1_000_000:
        value = "".join(rng.choices(_ALNUM, k=rng.randint(12, 40)))
        pairs.append((rng.choice(_CREDENTIAL_WORDS), value))
        size += len(pairs[-1][0]) + len(value) + 3
    return tuple(pairs)


def _distinct_reply() -> bytes:
    return im_reply(text_segment(" ".join(f"{w}: {v}" for w, v in _distinct_credentials())))


def _every_value_masked(out: dict[str, Any]) -> bool:
    """Each value masked whole: one mask per pair, and no value's run of letters left."""
    text = _message(out)["segments"][0]["data"]["text"]
    values = {v for _w, v in _distinct_credentials()}
    masks = sum(m["count"] for m in out["masked"])
    return masks == len(values) and not values & set(re.findall(r"[A-Za-z0-9]{12,}", text))


def context_judge_cases() -> list[Case]:
    """One value repeated (judged once) and ~28,000 distinct ones (past the judging budget the
    rest are masked unjudged): each was 2.5-4 s of judging, ~30 s with tracemalloc under load;
    now ~1 s. The timeout leaves room for a machine 3-4x slower than that, under load."""
    return [
        Case(
            "1MB_line_one_credential_value_repeated",
            partial(_line_reply, 'token: "password=x1y2z3 '),
            "accepted",
            "deliver",
            settings={"max_record_bytes": 4 * MiB},
            max_peak=64 * MiB,
            max_seconds=30.0,
            check=lambda out: "x1y2z3" not in _message(out)["segments"][0]["data"]["text"],
        ),
        Case(
            "1MB_distinct_credential_values",
            _distinct_reply,
            "accepted",
            "deliver",
            max_peak=64 * MiB,
            max_seconds=30.0,
            check=_every_value_masked,
        ),
    ]


def all_cases() -> list[Case]:
    return [
        *size_cases(),
        *depth_cases(),
        *encoding_cases(),
        *regex_cases(),
        *html_cases(),
        *media_cases(),
        *csv_cases(),
        *confusable_cases(),
        *view_cases(),
        *context_judge_cases(),
    ]
