"""assistant.html.v1 (docs/contracts.md section 2): transport, elements, attributes, citations."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from selectolax.lexbor import LexborHTMLParser

from schemas.codes import MAX_ISSUES
from schemas.contract import ContractResult, ReplyContract, ReplyInput
from schemas.html_answer import (
    ALLOWED_ELEMENTS,
    ASSISTANT_HTML_V1,
    MAX_TEXT_CHARS,
    Fenced,
    scan_source,
    split_fence,
)
from schemas.records import EMPTY_CONTEXT, Context

UUID = "123e4567-e89b-12d3-a456-426614174000"
A = '<a class="http-source" target="_blank" href="https://example.com/r">r</a>'
IMG = f'<img class="img-source" src="/document/{UUID}.png" alt="a chart">'
FRAGMENTS = Context(fragments={"docid-17-c2-p3": ["text-21", "text-22"], "docid-9": []})

KNOWN_CODES = {
    "not_fenced",
    "wrong_transport",
    "too_long",
    "empty_html",
    "invalid_character",
    "too_complex",
    "too_many_errors",
    "disallowed_element",
    "disallowed_attribute",
    "duplicate_attribute",
    "invalid_attribute_value",
    "missing_attribute",
    "doc_embed_not_empty",
    "footer_outside_blockquote",
    "invalid_uri",
    "non_canonical_uri",
    "missing_element_ids",
    "unknown_element_id",
    "markdown_shorthand",
    "html_parse_error",
    "unclosed_element",
    "control_character",
}
# The parse check's findings, left out where a test is about another rule.
PARSE_CODES = {"html_parse_error", "unclosed_element"}


def fence(html: str, tail: str = "") -> str:
    return f"```html\n{html}\n```\n{tail}"


def run(text: str | None, context: Context = EMPTY_CONTEXT) -> ContractResult:
    return ASSISTANT_HTML_V1.validate(ReplyInput("text", text), context)


def issues(result: ContractResult) -> list[tuple[str, str]]:
    return [(issue.path, issue.code) for issue in result.issues]


def html_issues(html: str, context: Context = EMPTY_CONTEXT) -> list[tuple[str, str]]:
    return issues(run(fence(html), context))


# --- the contract object ------------------------------------------------------------------


def test_is_a_reply_contract_named_assistant_html_v1() -> None:
    contract: ReplyContract = ASSISTANT_HTML_V1
    assert contract.name == "assistant.html.v1"


def test_spec_example_valid_answer_is_delivered_exactly() -> None:
    payload = (
        '<h2>Revenue</h2>\n<p id="text-1">Revenue grew '
        '<b class="info-source" id="doc://docid-17-c2-p3?id=text-21;https://example.com/q3">12%'
        "</b>, see docid-113-c0 and "
        f"{A}.</p>\n"
        '<div class="blockquote" data-source="doc://docid-17-c2-p3?id=text-22">'
        "<p>Quoted.</p><footer>Annual report</footer></div>\n"
        '<div class="blockquote doc-embed" data-source="kg://Acme?name=Acme%20Corp"></div>\n'
        f'<ul><li id="li-1">one</li><li>two <em>2</em></li></ul>{IMG}'
    )
    rag_line = "optional_rag_fragment_used: doc://docid-17-c2-p3?id=text-21,text-22;kg://Acme"
    text = f"\n  {fence(payload)}{rag_line}\n\n"
    result = run(text, FRAGMENTS)
    assert result.issues == ()
    assert result.message == {
        "html": payload,
        "citations": [
            "doc://docid-17-c2-p3?id=text-21",
            "https://example.com/q3",
            "doc://docid-113-c0",
            "https://example.com/r",
            "doc://docid-17-c2-p3?id=text-22",
            "kg://Acme?name=Acme%20Corp",
        ],
        "rag_fragments_used": ["doc://docid-17-c2-p3?id=text-21,text-22", "kg://Acme"],
    }
    assert result.reports == ("docid-113-c0",)
    Draft202012Validator(ASSISTANT_HTML_V1.json_schema()).validate(result.message)


def test_every_allowed_element_in_one_valid_answer() -> None:
    payload = (
        "<h1>a</h1><h2>b</h2><h3>c</h3><h4>d</h4><h5>e</h5><h6>f</h6>"
        "<p>x<br><b>b</b><strong>s</strong><i>i</i><em>e</em><u>u</u><s>s</s>"
        "<sub>1</sub><sup>2</sup><code>c</code></p><pre>p</pre>"
        "<ol><li>1</li></ol><ul><li>2</li></ul>"
        "<table><thead><tr><th>h</th></tr></thead><tbody><tr><td>d</td></tr></tbody></table>"
        f'{A}{IMG}<div class="blockquote" data-source="https://e.com"><footer>f</footer></div>'
    )
    result = run(fence(payload))
    assert result.issues == ()
    seen = {node.tag for node in LexborHTMLParser(payload).body.traverse()}  # type: ignore[union-attr]
    assert ALLOWED_ELEMENTS.issubset(seen)


# --- transport ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "payload", "rag"),
    [
        ("```html\n<p>x</p>\n```", "<p>x</p>", None),
        ("\n\n  ```html  \n<p>x</p>\n  ```  \n\n", "<p>x</p>", None),
        ("```html\r\n<p>x</p>\r\n```\r\n", "<p>x</p>", None),
        ("```html\n<p>a</p>\n\n<p>b</p>\n```", "<p>a</p>\n\n<p>b</p>", None),
        ("````html\n<pre>```\nx\n```</pre>\n````", "<pre>```\nx\n```</pre>", None),
        (
            "```html\n<p>x</p>\n```\noptional_rag_fragment_used: doc://docid-1",
            "<p>x</p>",
            ("doc://docid-1",),
        ),
        (
            "```html\n<p>x</p>\n```\n\n optional_rag_fragment_used:doc://docid-1 ; kg://a \n",
            "<p>x</p>",
            ("doc://docid-1", "kg://a"),
        ),
    ],
)
def test_fence_split(text: str, payload: str, rag: tuple[str, ...] | None) -> None:
    fenced = split_fence(text)
    assert isinstance(fenced, Fenced)
    assert fenced.payload == payload
    assert fenced.rag_items == rag


@pytest.mark.parametrize(
    "text",
    [
        "<p>no fence</p>",
        "Here you go:\n```html\n<p>x</p>\n```",
        "```html\n<p>x</p>\n```\nThanks!",
        "```\n<p>x</p>\n```",
        "```python\n<p>x</p>\n```",
        "```HTML\n<p>x</p>\n```",
        "```html json\n<p>x</p>\n```",
        "```html\n<p>x</p>",
        "```html\n<p>x</p>\n```x",
        "```html\n<p>x</p>\n```\n```html\n<p>y</p>\n```",
        "optional_rag_fragment_used: doc://docid-1\n```html\n<p>x</p>\n```",
        "```html\n<p>x</p>\n```\noptional_rag_fragment_used: doc://docid-1\n"
        "optional_rag_fragment_used: doc://docid-2",
        "```html\n<p>x</p>\n```\noptional_rag_fragment_used: doc://docid-1\nbye",
        "````html\n<p>x</p>\n```",
        "",
        "   \n\t\n",
        '{"html": "<p>x</p>"}',
    ],
)
def test_not_fenced(text: str) -> None:
    assert issues(run(text)) == [("$", "not_fenced")]


@pytest.mark.parametrize(
    ("text", "forms"),
    [
        ("Sure:\n```html\n{html}\n```", ["before"]),
        ("```html\n{html}\n```\nThanks!", ["text_after"]),
        ("Sure:\n```html\n{html}\n```\nThanks!", ["before", "text_after"]),
        (
            "```html\n{html}\n```\noptional_rag_fragment_used: docid-1\n"
            "optional_rag_fragment_used: doc://docid-2",
            ["second_rag", "rag"],
        ),
        ("```html\n{html}\n```\nbye\noptional_rag_fragment_used: docid-1", ["text_after", "rag"]),
    ],
)
def test_a_broken_transport_around_a_found_payload_reports_every_error(
    text: str, forms: list[str]
) -> None:
    # One correction is all the model gets: the payload's errors come with the transport's,
    # the transport's first (issue order is the correction request's order).
    html = '<p><a rel="x" href="https://e.com">x</a></p>'
    result = run(text.format(html=html))
    found = issues(result)
    transport = [item for item in found if item == ("$", "not_fenced")]
    assert len(transport) == len([form for form in forms if form != "rag"])
    assert found[: len(transport)] == transport
    assert ("html/body/p[1]/a[1]@rel", "disallowed_attribute") in found
    assert ("html/body/p[1]/a[1]@class", "missing_attribute") in found
    if "rag" in forms:
        assert ("optional_rag_fragment_used[0]", "invalid_uri") in found
    # A model that fixes exactly what it was told succeeds with one correction.
    fixed = f"```html\n{A.replace('r</a>', 'x</a>')}\n```"
    assert run(fixed).valid


def test_no_payload_to_check_without_a_closed_html_fence() -> None:
    for text in ["<p><span>x</span></p>", "```html\n<span>x</span>", "```\n<span>x</span>\n```"]:
        assert issues(run(text)) == [("$", "not_fenced")]


def test_missing_text_is_not_fenced() -> None:
    assert issues(run(None)) == [("$", "not_fenced")]


def test_positive_counterpart_of_not_fenced() -> None:
    assert run("```html\n<p>x</p>\n```").valid


def test_json_tool_call_is_wrong_transport() -> None:
    result = ASSISTANT_HTML_V1.validate(
        ReplyInput("tool", arguments={"html": "<p>x</p>"}), EMPTY_CONTEXT
    )
    assert issues(result) == [("$", "wrong_transport")]
    assert result.message is None


def test_text_length_is_bounded() -> None:
    filler = "<p>" + "a" * (MAX_TEXT_CHARS - 40) + "</p>"
    assert run(fence(filler)).valid
    assert issues(run(fence(filler + "a" * 100))) == [("$", "too_long")]


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (
            "optional_rag_fragment_used: doc://docid-1;docid-2",
            [("optional_rag_fragment_used[1]", "invalid_uri")],
        ),
        (
            "optional_rag_fragment_used: doc://d\u043ecid-1",
            [("optional_rag_fragment_used[0]", "invalid_uri")],
        ),
        ("optional_rag_fragment_used: ", [("optional_rag_fragment_used[0]", "invalid_uri")]),
        (
            "optional_rag_fragment_used: kg://a;;kg://b",
            [("optional_rag_fragment_used[1]", "invalid_uri")],
        ),
        ("optional_rag_fragment_used: https://e.com;skill://S/1", []),
    ],
)
def test_rag_line_items_must_be_canonical(tail: str, expected: list[tuple[str, str]]) -> None:
    assert issues(run(fence("<p>x</p>", tail))) == expected


def test_empty_payload_is_empty_html() -> None:
    assert issues(run("```html\n```")) == [("html/body", "empty_html")]
    assert issues(run(fence("  \n "))) == [("html/body", "empty_html")]


# --- elements -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "path"),
    [
        ("<script>alert(1)</script>", "html/body/script[1]"),
        ("<style>p{}</style>", "html/body/style[1]"),
        ('<iframe src="https://e.com"></iframe>', "html/body/iframe[1]"),
        ("<form><input></form>", "html/body/form[1]"),
        ("<svg><circle/></svg>", "html/body/svg[1]"),
        ("<math><mi>x</mi></math>", "html/body/math[1]"),
        ("<p><span>x</span></p>", "html/body/p[1]/span[1]"),
        ("<template><p>x</p></template>", "html/body/template[1]"),
        ("<textarea>x</textarea>", "html/body/textarea[1]"),
        ("<title>x</title>", "html/body/title[1]"),
        ("<blockquote>x</blockquote>", "html/body/blockquote[1]"),
        ("<section><p>x</p></section>", "html/body/section[1]"),
        ("<p><font>x</font></p>", "html/body/p[1]/font[1]"),
        ("<p><my-widget>x</my-widget></p>", "html/body/p[1]/my-widget[1]"),
        ("<p>a</p><p>b<img2>x</img2></p>", "html/body/p[2]/img2[1]"),
    ],
)
def test_disallowed_elements(html: str, path: str) -> None:
    assert (path, "disallowed_element") in html_issues(html)


def test_disallowed_element_children_are_still_checked() -> None:
    found = html_issues('<span><a href="https://e.com">x</a></span>')
    assert ("html/body/span[1]", "disallowed_element") in found
    assert ("html/body/span[1]/a[1]@class", "missing_attribute") in found


def test_opaque_element_content_is_not_checked_twice() -> None:
    assert html_issues("<script>**x** <b>docid-1</b></script>") == [
        ("html/body/script[1]", "disallowed_element")
    ]


@pytest.mark.parametrize(
    ("html", "path"),
    [
        ("<p>x<!-- note --></p>", "html/body/p[1]/comment()[1]"),
        ("<!-- top --><p>x</p>", "html/body/comment()[1]"),
        ("<p>x</p><![CDATA[y]]>", "html/body/comment()[1]"),
        ("<?php echo 1 ?><p>x</p>", "html/body/node()[1]"),
    ],
)
def test_comments_are_disallowed_elements(html: str, path: str) -> None:
    # CDATA and `<?` are parse errors in HTML content as well (cdata-in-html-content, ...).
    found = [item for item in html_issues(html) if item[1] not in PARSE_CODES]
    assert found == [(path, "disallowed_element")]


@pytest.mark.parametrize(
    ("html", "path"),
    [
        ("<html><p>x</p></html>", "html"),
        ("<p>x</p></html>", "html"),
        ("<head></head><p>x</p>", "html/head"),
        ("<body><p>x</p></body>", "html/body"),
        ('<body class="x"><p>x</p>', "html/body"),
        ("<p>x</p></body>", "html/body"),
        ("<!DOCTYPE html><p>x</p>", "!doctype"),
        ("<!doctype html>\n<p>x</p>", "!doctype"),
    ],
)
def test_explicit_document_tags_are_disallowed(html: str, path: str) -> None:
    found = html_issues(html)
    assert [item for item in found if item[1] not in PARSE_CODES] == [(path, "disallowed_element")]
    if "<" + path.split("/")[-1].lstrip("!") in html.lower():  # a start tag, or the doctype
        # A body fragment's parser drops it: a parse error too (unexpected-start-tag, ...).
        assert ("html/body", "html_parse_error") in found


def test_image_tag_is_not_img() -> None:
    image = IMG.replace("<img", "<image")
    found = html_issues(image)
    assert [item for item in found if item[1] not in PARSE_CODES] == [
        ("html/body", "disallowed_element")
    ]
    assert html_issues(IMG) == []


def test_full_document_reports_each_shell_tag_once() -> None:
    found = html_issues("<!DOCTYPE html><html><head></head><body><p>x</p></body></html>")
    assert [item for item in found if item[1] not in PARSE_CODES] == [
        ("!doctype", "disallowed_element"),
        ("html", "disallowed_element"),
        ("html/head", "disallowed_element"),
        ("html/body", "disallowed_element"),
    ]


@pytest.mark.parametrize(
    "html",
    [
        "<p>the &lt;body&gt; and &lt;html&gt; tags</p>",
        f'<img class="img-source" src="/document/{UUID}.png" alt="a <body> tag">',
        "<pre>&lt;!DOCTYPE html&gt;</pre>",
        "<p>a &lt; b and c > d, x &lt;3 y</p>",
        "<p>body html head</p>",
    ],
)
def test_shell_tag_lookalikes_are_fine(html: str) -> None:
    assert html_issues(html) == []


def test_shell_tags_inside_raw_text_are_not_tags() -> None:
    found = html_issues("<textarea><body></textarea><!-- <html> -->")
    assert ("html/body", "disallowed_element") not in found
    assert ("html", "disallowed_element") not in found
    assert ("html/body/textarea[1]", "disallowed_element") in found


# --- attributes ---------------------------------------------------------------------------

ATTRIBUTE_CASES: list[tuple[str, list[tuple[str, str]]]] = [
    # b
    ("<b>x</b>", []),
    ('<b class="info-source" id="doc://docid-1;https://e.com">x</b>', []),
    ('<b class="info-source">x</b>', [("html/body/b[1]@id", "missing_attribute")]),
    ('<b id="doc://docid-1">x</b>', [("html/body/b[1]@class", "missing_attribute")]),
    (
        '<b class="source" id="doc://docid-1">x</b>',
        [("html/body/b[1]@class", "invalid_attribute_value")],
    ),
    (
        '<b class="info-source extra" id="doc://docid-1">x</b>',
        [("html/body/b[1]@class", "invalid_attribute_value")],
    ),
    ('<b style="x">x</b>', [("html/body/b[1]@style", "disallowed_attribute")]),
    (
        '<b class="info-source" id="doc://docid-1" title="t">x</b>',
        [("html/body/b[1]@title", "disallowed_attribute")],
    ),
    ('<b class="info-source" id="docid-1">x</b>', [("html/body/b[1]@id", "non_canonical_uri")]),
    (
        '<b class="info-source" id="doc://docid-1;docid-2">x</b>',
        [("html/body/b[1]@id", "non_canonical_uri")],
    ),
    (
        '<b class="info-source" id="doc://docid-1;;kg://a">x</b>',
        [("html/body/b[1]@id", "invalid_uri")],
    ),
    ('<b class="info-source" id="">x</b>', [("html/body/b[1]@id", "invalid_uri")]),
    ('<b class="info-source" id="source 1">x</b>', [("html/body/b[1]@id", "invalid_uri")]),
    # a
    (A, []),
    ('<A CLASS="http-source" TARGET="_blank" HREF="https://e.com">x</A>', []),
    (
        '<a target="_blank" href="https://e.com">x</a>',
        [("html/body/a[1]@class", "missing_attribute")],
    ),
    (
        '<a class="http-source" href="https://e.com">x</a>',
        [("html/body/a[1]@target", "missing_attribute")],
    ),
    (
        '<a class="http-source" target="_blank">x</a>',
        [("html/body/a[1]@href", "missing_attribute")],
    ),
    (
        '<a class="http-source extra" target="_blank" href="https://e.com">x</a>',
        [("html/body/a[1]@class", "invalid_attribute_value")],
    ),
    (
        '<a class="http-source" target="_self" href="https://e.com">x</a>',
        [("html/body/a[1]@target", "invalid_attribute_value")],
    ),
    (
        '<a class="http-source" target="_blank" href="doc://docid-1">x</a>',
        [("html/body/a[1]@href", "invalid_attribute_value")],
    ),
    (
        '<a class="http-source" target="_blank" href="docid-1">x</a>',
        [("html/body/a[1]@href", "non_canonical_uri")],
    ),
    (
        '<a class="http-source" target="_blank" href="javascript:alert(1)">x</a>',
        [("html/body/a[1]@href", "invalid_uri")],
    ),
    (
        '<a class="http-source" target="_blank" href="/relative">x</a>',
        [("html/body/a[1]@href", "invalid_uri")],
    ),
    (
        '<a class="http-source" target="_blank" href="https://e.com" rel="noopener">x</a>',
        [("html/body/a[1]@rel", "disallowed_attribute")],
    ),
    # img
    (IMG, []),
    (f'<img class="img-source" src="/document/{UUID.upper()}.webp" alt="x">', []),
    (
        f'<img class="img-source" src="/document/{UUID}.bmp" alt="x">',
        [("html/body/img[1]@src", "invalid_attribute_value")],
    ),
    (
        f'<img class="img-source" src="/document/{UUID}.PNG" alt="x">',
        [("html/body/img[1]@src", "invalid_attribute_value")],
    ),
    (
        '<img class="img-source" src="/document/123e4567e89b12d3a456426614174000.png" alt="x">',
        [("html/body/img[1]@src", "invalid_attribute_value")],
    ),
    (
        f'<img class="img-source" src="https://e.com/document/{UUID}.png" alt="x">',
        [("html/body/img[1]@src", "invalid_attribute_value")],
    ),
    (
        f'<img class="img-source" src="/document/{UUID}.png">',
        [("html/body/img[1]@alt", "missing_attribute")],
    ),
    (
        f'<img class="img-source" src="/document/{UUID}.png" alt=" ">',
        [("html/body/img[1]@alt", "invalid_attribute_value")],
    ),
    ('<img class="img-source" alt="x">', [("html/body/img[1]@src", "missing_attribute")]),
    (
        f'<img src="/document/{UUID}.png" alt="x">',
        [("html/body/img[1]@class", "missing_attribute")],
    ),
    (
        f'<img class="img-source" src="/document/{UUID}.png" alt="x" width="9">',
        [("html/body/img[1]@width", "disallowed_attribute")],
    ),
    # div
    ('<div class="blockquote" data-source="doc://docid-1"><p>q</p></div>', []),
    ('<div class="blockquote doc-embed" data-source="doc://docid-1"></div>', []),
    ('<div class="blockquote doc-embed" data-source="doc://docid-1">\n  </div>', []),
    (
        '<div class="blockquote doc-embed" data-source="doc://docid-1">x</div>',
        [("html/body/div[1]", "doc_embed_not_empty")],
    ),
    (
        '<div class="blockquote doc-embed" data-source="doc://docid-1"><br></div>',
        [("html/body/div[1]", "doc_embed_not_empty")],
    ),
    (
        '<div class="blockquote doc-embed" data-source="doc://docid-1"><!--c--></div>',
        [
            ("html/body/div[1]", "doc_embed_not_empty"),
            ("html/body/div[1]/comment()[1]", "disallowed_element"),
        ],
    ),
    (
        '<div class="doc-embed blockquote" data-source="doc://docid-1"></div>',
        [("html/body/div[1]@class", "invalid_attribute_value")],
    ),
    (
        '<div class="quote" data-source="doc://docid-1">x</div>',
        [("html/body/div[1]@class", "invalid_attribute_value")],
    ),
    ('<div data-source="doc://docid-1">x</div>', [("html/body/div[1]@class", "missing_attribute")]),
    ('<div class="blockquote">x</div>', [("html/body/div[1]@data-source", "missing_attribute")]),
    (
        '<div class="blockquote" data-source="docid-1">x</div>',
        [("html/body/div[1]@data-source", "non_canonical_uri")],
    ),
    (
        '<div class="blockquote" data-source="doc://docid-1" id="q">x</div>',
        [("html/body/div[1]@id", "disallowed_attribute")],
    ),
    # p, li
    ('<p id="text-8">x</p><ul><li id="A_1">y</li></ul>', []),
    ('<p id="a b">x</p>', [("html/body/p[1]@id", "invalid_attribute_value")]),
    ('<p id="">x</p>', [("html/body/p[1]@id", "invalid_attribute_value")]),
    (
        '<ol><li id="t\u0435xt">x</li></ol>',
        [("html/body/ol[1]/li[1]@id", "invalid_attribute_value")],
    ),
    ('<p class="lead">x</p>', [("html/body/p[1]@class", "disallowed_attribute")]),
    # footer
    ('<div class="blockquote" data-source="kg://a"><p>q</p><footer>src</footer></div>', []),
    ('<div class="blockquote" data-source="kg://a"><ul><li><footer>f</footer></li></ul></div>', []),
    ("<footer>f</footer>", [("html/body/footer[1]", "footer_outside_blockquote")]),
    (
        '<div class="blockquote" data-source="kg://a"><footer id="f">f</footer></div>',
        [("html/body/div[1]/footer[1]@id", "disallowed_attribute")],
    ),
    # every other element: no attributes
    ('<strong class="x">x</strong>', [("html/body/strong[1]@class", "disallowed_attribute")]),
    ('<h1 id="top">x</h1>', [("html/body/h1[1]@id", "disallowed_attribute")]),
    (
        '<table><tr><td colspan="2">x</td></tr></table>',
        [("html/body/table[1]/tbody[1]/tr[1]/td[1]@colspan", "disallowed_attribute")],
    ),
    ('<p onclick="x()">x</p>', [("html/body/p[1]@onclick", "disallowed_attribute")]),
]


@pytest.mark.parametrize(("html", "expected"), ATTRIBUTE_CASES)
def test_attribute_rules(html: str, expected: list[tuple[str, str]]) -> None:
    assert html_issues(html) == expected


def test_sibling_indexes_are_per_tag_and_one_based() -> None:
    html = (
        '<p>a</p><div class="blockquote" data-source="kg://a"><p>b</p><p>c<b id="x">d</b></p></div>'
    )
    assert html_issues(html) == [
        ("html/body/div[1]/p[2]/b[1]@class", "missing_attribute"),
        ("html/body/div[1]/p[2]/b[1]@id", "invalid_uri"),
    ]


def test_attribute_values_are_checked_after_entity_decoding() -> None:
    result = run(
        fence('<a class="http-source" target="_blank" href="https://e.com/?a=1&amp;b=2">x</a>')
    )
    assert result.message is not None
    assert result.message["citations"] == ["https://e.com/?a=1&b=2"]
    assert html_issues(
        '<a class="http-source" target="_blank" href="https://ex&#1072;mple.com">x</a>'
    ) == [("html/body/a[1]@href", "invalid_uri")]


@pytest.mark.parametrize(
    "href",
    [
        "https://\u0435xample.com",
        "https://example.com/\uff41",
        "https://exam\u200bple.com",
        "doc://d\u043ecid-1",
    ],
)
def test_confusable_uris_in_attributes(href: str) -> None:
    html = f'<b class="info-source" id="{href}">x</b>'
    assert html_issues(html) == [("html/body/b[1]@id", "invalid_uri")]


# --- element IDs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("doc://docid-17-c2-p3?id=text-21", []),
        ("doc://docid-17-c2-p3?id=text-21,text-22", []),
        ("doc://docid-17-c2-p3", ["missing_element_ids"]),
        ("doc://docid-17-c2-p3?id=text-99", ["unknown_element_id"]),
        ("doc://docid-17-c2-p3?id=text-21,x,y", ["unknown_element_id", "unknown_element_id"]),
        ("doc://docid-17-c2", []),
        ("doc://docid-17-c2-p3-x", ["invalid_uri"]),
        ("doc://docid-9", []),
        ("doc://docid-9?id=anything", []),
        ("doc://docid-5?id=anything", []),
    ],
)
def test_element_ids_mandatory_when_known(uri: str, expected: list[str]) -> None:
    for html in (
        f'<b class="info-source" id="{uri}">x</b>',
        f'<div class="blockquote" data-source="{uri}">x</div>',
    ):
        assert [code for _path, code in html_issues(html, FRAGMENTS)] == expected


def test_element_ids_not_required_without_context() -> None:
    assert html_issues('<b class="info-source" id="doc://docid-17-c2-p3">x</b>') == []


RAG = "optional_rag_fragment_used"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("doc://docid-17-c2-p3?id=text-99", [(f"{RAG}[0]", "unknown_element_id")]),
        ("doc://docid-17-c2-p3", [(f"{RAG}[0]", "missing_element_ids")]),
        (
            "kg://Acme;doc://docid-17-c2-p3?id=text-21,x;doc://docid-17-c2-p3",
            [(f"{RAG}[1]", "unknown_element_id"), (f"{RAG}[2]", "missing_element_ids")],
        ),
        ("doc://docid-17-c2-p3?id=text-22,text-21;doc://docid-17-c2", []),
        ("doc://docid-9;doc://docid-5?id=anything;https://e.com", []),
    ],
)
def test_element_ids_mandatory_in_the_trailing_line(
    line: str, expected: list[tuple[str, str]]
) -> None:
    """The trailing line's doc:// URIs obey the same element-ID rule as those in the HTML,
    each error at the item's path like the line's `invalid_uri`."""
    result = run(fence("<p>x</p>", f"{RAG}: {line}"), FRAGMENTS)
    assert issues(result) == expected
    if not expected:
        assert result.message is not None
        assert result.message["citations"] == []  # checked, not cited
        assert result.message["rag_fragments_used"] == line.split(";")


def test_element_ids_in_the_trailing_line_not_required_without_context() -> None:
    assert issues(run(fence("<p>x</p>", f"{RAG}: doc://docid-17-c2-p3"))) == []


def test_element_id_rule_in_prose_applies_to_written_doc_uris_only() -> None:
    assert html_issues("<p>see docid-17-c2-p3</p>", FRAGMENTS) == []
    assert html_issues("<p>see doc://docid-17-c2-p3?id=nope</p>", FRAGMENTS) == [
        ("html/body/p[1]/text()[1]", "unknown_element_id")
    ]


# --- Markdown shorthand -------------------------------------------------------------------


@pytest.mark.parametrize(
    "html",
    [
        "<p>this is **bold** text</p>",
        "<p>this is __bold__ text</p>",
        "<p>see [the docs](https://e.com)</p>",
        "<p>![chart](https://e.com/c.png)</p>",
        "<p># Heading</p>",
        "<p>intro\n## Section</p>",
        "# Heading at the top",
        "<p>a</p>\n# Heading after a block",
        "<p>x<br># after br</p>",
        "<p>use ```python fences```</p>",
        "<p><b>**nested**</b></p>",
        "<p>&#42;&#42;encoded&#42;&#42;</p>",
    ],
)
def test_markdown_shorthand_in_text(html: str) -> None:
    assert "markdown_shorthand" in [code for _path, code in html_issues(html)]


@pytest.mark.parametrize(
    "html",
    [
        "<p>2 * 3 * 4 and a ** b</p>",
        "<p>snake__case__name and __ alone</p>",
        "<p>array[0] (first) and [note]</p>",
        "<p>C# and F# are languages; item #3</p>",
        "<p>#hashtag</p>",
        "<p><b>x</b># not at a line start</p>",
        "<pre>**bold** [a](b)\n# heading\n```</pre>",
        "<p><code>**kwargs</code> and <code>[x](y)</code></p>",
        f'<img class="img-source" src="/document/{UUID}.png" alt="**bold** [a](b)">',
        "<p>two backticks `` are fine</p>",
    ],
)
def test_no_markdown_shorthand(html: str) -> None:
    assert html_issues(html) == []


def test_markdown_path_names_the_text_node() -> None:
    assert html_issues("<p>a<b>b</b>**c**</p>") == [
        ("html/body/p[1]/text()[2]", "markdown_shorthand")
    ]


# --- citations ----------------------------------------------------------------------------


def test_citations_in_document_order_without_repeats() -> None:
    html = (
        '<p>docid-1 then <b class="info-source" id="kg://a;doc://docid-1">x</b></p>'
        '<div class="blockquote" data-source="kg://a"><p>docid-1-c2 and docid-1</p></div>'
        f"<p>{A} {A} doc://docid-3?id=q</p>"
    )
    result = run(fence(html))
    assert result.message is not None
    assert result.message["citations"] == [
        "doc://docid-1",
        "kg://a",
        "doc://docid-1-c2",
        "https://example.com/r",
        "doc://docid-3?id=q",
    ]
    assert result.reports == ("docid-1", "docid-1-c2")


def test_prose_links_in_code_are_not_citations() -> None:
    result = run(fence("<p><code>docid-1</code></p><pre>docid-2</pre>"))
    assert result.message is not None
    assert result.message["citations"] == []
    assert result.reports == ()


def test_invalid_reply_has_no_message() -> None:
    result = run(fence("<span>x</span>"))
    assert not result.valid
    assert result.message is None


# --- bounds and hostile inputs ------------------------------------------------------------


def test_issues_are_bounded_with_too_many_errors() -> None:
    result = run(fence("<span>x</span>" * 150))
    assert len(result.issues) == MAX_ISSUES + 1
    assert result.issues[-1].code == "too_many_errors"
    assert result.issues[-1].path == "$"


def test_exactly_the_limit_has_no_too_many_errors() -> None:
    result = run(fence("<span>x</span>" * MAX_ISSUES))
    assert len(result.issues) == MAX_ISSUES
    assert "too_many_errors" not in [issue.code for issue in result.issues]


def test_depth_is_bounded() -> None:
    assert html_issues("<ul><li>" * 128 + "x" + "</li></ul>" * 128) == []
    found = html_issues("<ul><li>" * 129 + "x" + "</li></ul>" * 129)
    assert found == [("html/body" + "/ul[1]/li[1]" * 128 + "/ul[1]", "too_complex")]


def test_depth_is_bounded_before_the_parse_check() -> None:
    # Left open, the same nesting stops the parse check at the bound (its scope checks walk
    # the stack): too_complex at the top, and the walk's own finding at the deepest path.
    found = html_issues("<ul><li>" * 2000 + "x")
    assert ("html/body", "too_complex") in found
    assert {code for _path, code in found} == {"too_complex"}


def test_element_count_is_bounded_on_the_tree() -> None:
    # Stray </p> end tags each make an element: few start tags, many elements.
    # Each table implies its tbody: three start tags, four elements, no parse error.
    table = "<table><tr><td>x</td></tr></table>"
    assert html_issues(table * 2500) == []
    assert html_issues(table * 2501) == [("html/body", "too_complex")]
    # Stray </p> end tags each make an element too (and are parse errors).
    assert ("html/body", "html_parse_error") in html_issues("<br>" * 50 + "</p>" * 50)


def test_start_tags_are_bounded_before_parsing() -> None:
    found = run(fence("<br>" * 10_001))
    assert issues(found) == [("html/body", "too_complex")]
    assert "start tags" in found.issues[0].message


def hostile_cases() -> list[tuple[str, str, str | None]]:
    bomb = "<div>" * 2000 + "".join(f'<b id="{i}">' for i in range(2000)) + "</div>x" * 2000
    return [
        ("nested_divs", "<div>" * 100_000 + "x" + "</div>" * 10, "too_complex"),
        ("unclosed_tags", "<p><b><i>" * 33_333, "too_complex"),
        ("unclosed_spans", "<span>" * 100_000, "too_complex"),
        ("entity_flood", "<p>" + "&amp;" * 200_000 + "</p>", None),
        ("numeric_entity_flood", "<p>" + "&#x26;" * 150_000 + "</p>", None),
        ("bare_ampersands", "<p>" + "&" * 1_000_000 + "</p>", None),
        ("lt_flood", "<" * 1_000_000, "html_parse_error"),
        ("nul_bytes", "<p>a\x00b</p>" * 1000, "invalid_character"),
        ("lone_surrogate", "<p>\ud800</p>", "invalid_character"),
        ("reconstruction_bomb", bomb, "too_complex"),
        (
            "attribute_flood",
            "<p " + " ".join(f"a{i}" for i in range(100_000)) + ">x</p>",
            "too_complex",
        ),
        ("open_comment", "<p>x</p><!--" + "a" * 500_000, "disallowed_element"),
        ("open_attribute", '<p title="' + "a" * 500_000, "html_parse_error"),
        ("ampersand_text", "<p>" + "AT&T " * 200_000 + "</p><p>x", "unclosed_element"),
        ("deep_tables", "<table><tr><td>" * 3000, "too_complex"),
        (
            "confusable_doc_uri",
            '<b class="info-source" id="doc://docid-\uff11">x</b>',
            "invalid_uri",
        ),
    ]


@pytest.mark.parametrize(
    ("name", "html", "code"), hostile_cases(), ids=[case[0] for case in hostile_cases()]
)
@pytest.mark.timeout(60)  # the bound: a quadratic or backtracking parser would hang here
def test_hostile_inputs_finish_with_a_clear_verdict(name: str, html: str, code: str | None) -> None:
    result = run(fence(html))
    if code is None:
        assert result.valid, result.issues[:3]
        assert result.message is not None
    else:
        assert code in [issue.code for issue in result.issues], result.issues[:3]
        assert len(result.issues) <= MAX_ISSUES + 1


def test_nul_is_reported_with_its_position() -> None:
    result = run(fence("<p>ok</p>\n<p>a\x00b</p>"))
    assert issues(result) == [("html/body", "invalid_character")]
    assert "U+0000" in result.issues[0].message
    assert "line 2, column 5" in result.issues[0].message


# --- the pre-scan -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "explicit"),
    [
        ("<p>x</p>", []),
        ("<HTML><Body>", ["html", "body"]),
        ("<p title='<body>'>x</p>", []),
        ("<p title=<body>x</p>", []),
        ("<!-- <body> --><p>", []),
        ("<!--><body>", ["body"]),
        ("<!---><body>", ["body"]),
        ("<script>'<body>'</script><head>", ["head"]),
        ("<title><html></title>", []),
        ("<style></STYLE ><body>", ["body"]),
        ("<!DOCTYPE html>", ["!doctype"]),
        ("</head>", ["head"]),
        ("<bodyx><htmlx>", []),
        ("<plaintext><body>", []),
    ],
)
def test_scan_finds_explicit_shell_tags(html: str, explicit: list[str]) -> None:
    assert list(scan_source(html).explicit) == explicit


def test_scan_counts_tags_and_stops_at_bounds() -> None:
    scan = scan_source("<p a=1 b='2' c=\"3\" d>x</p><br/>")
    assert (scan.start_tags, scan.end_tags, scan.too_complex) == (2, 1, None)
    assert scan_source("<p " + "a " * 40 + ">").too_complex is not None
    assert scan_source("<b>" * 400).too_complex is not None
    assert scan_source("<b>x</b>" * 5000).too_complex is None


def count_elements(html: str) -> int:
    tree = LexborHTMLParser(html, is_fragment=True, fragment_tag="body")
    total = 0
    node = tree.root
    while node is not None:
        total += sum(1 for _ in node.traverse())
        node = node.next
    return total


TAGS = ["b", "i", "a", "em", "div", "p", "li", "ul", "table", "td", "tr", "span", "code", "s"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(TAGS), st.integers(0, 3), st.booleans()), max_size=120))
def test_cost_model_bounds_what_the_parser_builds(tokens: list[tuple[str, int, bool]]) -> None:
    html = "".join(f"<{tag} id={n}>x" if is_start else f"</{tag}>y" for tag, n, is_start in tokens)
    scan = scan_source(html)
    bound = 3 * scan.start_tags + 33 * scan.end_tags + scan.cost.estimate + 1
    assert count_elements(html) <= bound


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    for candidate in (text, fence(text)):
        result = run(candidate)
        assert result.valid == (result.message is not None)
        assert {issue.code for issue in result.issues} <= KNOWN_CODES


ATTR_NAMES = st.sampled_from(
    ["class", "id", "href", "target", "src", "alt", "data-source", "style", "onclick", "x"]
)
ATTR_VALUES = st.sampled_from(
    [
        "",
        "info-source",
        "http-source",
        "_blank",
        "blockquote",
        "blockquote doc-embed",
        "img-source",
        "doc://docid-1",
        "docid-2",
        "https://e.com",
        f"/document/{UUID}.png",
        'a"b',
        "<body>",
        "text-8",
        "kg://a b",
    ]
)
ELEMENT_TAGS = st.sampled_from(
    [
        *sorted(ALLOWED_ELEMENTS),
        "span",
        "script",
        "svg",
        "html",
        "body",
        "head",
        "table",
        "template",
    ]
)
TEXTS = st.sampled_from(["x", "**b**", "docid-3", "# h", "&amp;", "&", "\x00", "<", "\n", ""])


def element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    attrs = st.lists(st.tuples(ATTR_NAMES, ATTR_VALUES), max_size=3).map(
        lambda pairs: "".join(f' {name}="{value}"' for name, value in pairs)
    )
    return st.builds(
        lambda tag, attr, kids, close: (
            f"<{tag}{attr}>{''.join(kids)}" + (f"</{tag}>" if close else "")
        ),
        ELEMENT_TAGS,
        attrs,
        st.lists(children, max_size=4),
        st.booleans(),
    )


HTML = st.recursive(TEXTS, element, max_leaves=30)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    HTML,
    st.sampled_from(
        ["", "optional_rag_fragment_used: doc://docid-1", "optional_rag_fragment_used: docid-1"]
    ),
)
def test_generated_html_never_raises(html: str, tail: str) -> None:
    result = run(fence(html, tail), FRAGMENTS)
    assert {issue.code for issue in result.issues} <= KNOWN_CODES
    if result.valid:
        assert result.message is not None
        assert result.message["html"] == html
        Draft202012Validator(ASSISTANT_HTML_V1.json_schema()).validate(result.message)
    else:
        assert result.message is None
        assert all(issue.path and issue.message for issue in result.issues)


# --- schema and instructions --------------------------------------------------------------


def test_json_schema_is_closed_draft_2020_12() -> None:
    schema = ASSISTANT_HTML_V1.json_schema()
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    good: dict[str, Any] = {
        "html": "<p>x</p>",
        "citations": ["doc://docid-1"],
        "rag_fragments_used": [],
    }
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "extra": 1})
    assert not validator.is_valid({"html": "<p>x</p>", "citations": []})
    assert not validator.is_valid({**good, "citations": [1]})
    assert not validator.is_valid({**good, "html": 5})


@pytest.mark.parametrize("text", ["Sorry, something went wrong.", "<script>x</script> & **y**"])
def test_notice_message_is_a_valid_escaped_message(text: str) -> None:
    message = ASSISTANT_HTML_V1.notice_message(text)
    Draft202012Validator(ASSISTANT_HTML_V1.json_schema()).validate(message)
    assert message["citations"] == [] and message["rag_fragments_used"] == []
    tree = LexborHTMLParser(message["html"], is_fragment=True, fragment_tag="body")
    assert tree.root is not None and tree.root.tag == "p"
    assert tree.root.text() == text


def test_instructions_are_format_only() -> None:
    text = ASSISTANT_HTML_V1.instructions()
    assert "```html" in text
    assert "optional_rag_fragment_used" in text
    for tag in ALLOWED_ELEMENTS:
        assert tag in text
    for needle in (
        'class="info-source"',
        'class="http-source"',
        'target="_blank"',
        'class="img-source"',
        "doc-embed",
        "data-source",
        "?id=",
        "**bold**",
    ):
        assert needle in text


# --- duplicated attributes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "attr"),
    [
        (
            '<p><a class="http-source" target="_blank" href="https://a.example/" '
            'href="https://b.example/">r</a></p>',
            "href",
        ),
        ('<p id="text-1" ID="text-2">x</p>', "id"),
        ('<p><b class="info-source" id="doc://docid-1" id=doc://docid-2>[1]</b></p>', "id"),
        (f'<p>{IMG[:-1]} alt="another">x</p>', "alt"),
    ],
)
def test_duplicated_attributes_are_rejected(html: str, attr: str) -> None:
    result = run(fence(html))
    found = [i for i in result.issues if i.code == "duplicate_attribute"]
    assert result.message is None
    assert [(i.path, i.code) for i in found] == [("html/body", "duplicate_attribute")]
    assert f"{attr!r} twice" in found[0].message and "line 1, column " in found[0].message


def test_duplicate_attribute_names_the_tag_and_position_only() -> None:
    secret = "https://user:hunter2@b.example/"
    link = f'<a class="http-source" target="_blank" href="{secret}" href="{secret}">r</a>'
    html = f"<p>ok</p>\n<p>{link}</p>"
    (issue,) = [i for i in run(fence(html)).issues if i.code == "duplicate_attribute"]
    assert issue.message.startswith("<a> at line 2, column 4 has the attribute 'href' twice")
    assert "hunter2" not in issue.message


def test_same_attribute_on_different_elements_and_end_tags_is_fine() -> None:
    assert html_issues(f"<p>{A} {A}</p>") == []
    # Attributes on an end tag are dropped by the tokenizer: nothing for a consumer to pick.
    assert ("html/body", "duplicate_attribute") not in html_issues('<p id="a">x</p id=1 id=2>')


def test_scan_lists_duplicates_in_source_order() -> None:
    scan = scan_source("<p id=a id=b>x</p><b class=x CLASS=y id=1 id=2>y</b><p>z</p>")
    assert scan.duplicates == [(0, "p", "id"), (18, "b", "class")]


# --- control and bidi characters (the shared rule, on decoded text) ------------------------


@pytest.mark.parametrize(
    ("html", "path"),
    [
        ("<p>Deploy FAILED \u202egnp.exe</p>", "html/body/p[1]/text()[1][14]"),
        ("<p>a &#x202e; b</p>", "html/body/p[1]/text()[1][2]"),
        ("<p>a &#8238; b</p>", "html/body/p[1]/text()[1][2]"),
        ("<pre><code>x\u2067</code></pre>", "html/body/pre[1]/code[1]/text()[1][1]"),
        ("<p>a</p>\x0c<p>b</p>", "html/body/text()[1][0]"),
        (f"{IMG[:-1].replace('a chart', 'a &#x2066;chart')}>", "html/body/img[1]@alt[2]"),
    ],
)
def test_control_and_bidi_characters_in_text_and_attributes(html: str, path: str) -> None:
    found = html_issues(html)
    assert (path, "control_character") in found
    assert [code for _path, code in found if code != "invalid_character"] == ["control_character"]


def test_the_marks_a_right_to_left_language_needs_stay_valid() -> None:
    assert html_issues("<p>\u05e9\u05dc\u05d5\u05dd \u200f 1 \u200e \u061c x &#x200f;</p>") == []
