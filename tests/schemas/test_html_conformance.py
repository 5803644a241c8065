"""`assistant.html.v1` refuses what an HTML5 parser would repair (html_parse_error,
unclosed_element, disallowed_element for frameset/frame).

The yardstick is the WHATWG html5lib-tests suite (tokenizer and tree-construction cases with
their expected errors): bench/html_conformance.py runs all of its inputs in a body context
against the contract (figures in bench/README.md). Here, in our own words: one or more inputs
per WHATWG tokenizer error code and per kind of tree-construction repair, every cut-off point
of valid answers (derived at test time), the shortcut held to the full check, and the cases of
the issue that found the hole.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.contract import ContractResult, ReplyInput
from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.html_answer.charrefs import reference_errors
from schemas.html_answer.conformance import _html5lib, check_conformance, strictly_clean
from schemas.html_answer.scan import Scan, scan_source
from schemas.records import EMPTY_CONTEXT

UUID = "123e4567-e89b-12d3-a456-426614174000"
A = '<a class="http-source" target="_blank" href="https://example.com/r">r</a>'
IMG = f'<img class="img-source" src="/document/{UUID}.png" alt="a chart">'


def run(html: str) -> ContractResult:
    return ASSISTANT_HTML_V1.validate(ReplyInput("text", f"```html\n{html}\n```"), EMPTY_CONTEXT)


def codes(html: str) -> list[str]:
    return [issue.code for issue in run(html).issues]


def parse_errors(html: str) -> list[str]:
    return [issue.message for issue in run(html).issues if issue.code == "html_parse_error"]


# --- the cases of the issue ---------------------------------------------------------------


def test_two_answers_that_build_a_script_together_are_each_refused() -> None:
    first = "<p>Here is the summary.</p><script/x='"
    second = "<p>' >alert(document.domain)</script>Thanks!</p>"
    assert not run(first).valid
    assert any("eof-in-tag" in message for message in parse_errors(first))
    assert not run(second).valid
    assert "html_parse_error" in codes(second)  # a stray </script>


def test_frameset_is_refused_as_an_element_and_a_parse_error() -> None:
    found = run("<frameset onload=alert(1)>").issues
    assert ("html/body", "disallowed_element") in [(i.path, i.code) for i in found]
    assert any("frameset" in issue.message for issue in found)
    assert "html_parse_error" in [issue.code for issue in found]
    assert not run("<p>x</p><frame src=x>").valid


def test_a_tag_cut_off_at_the_end_is_refused_with_its_location() -> None:
    messages = parse_errors("<p>ok</p>\n<IFRAME")
    assert messages
    assert messages[0].startswith("eof-in-tag at line 2, column")
    assert "cut off" in messages[0]


def test_an_element_left_open_is_unclosed_element() -> None:
    result = run("<p>one</p><ul><li>two")
    assert [(i.code, i.message) for i in result.issues] == [
        ("unclosed_element", "<ul> is still open at the end of the answer; close it with </ul>"),
        ("unclosed_element", "<li> is still open at the end of the answer; close it with </li>"),
    ]
    assert run("<p>one</p><ul><li>two</li></ul>").valid
    # Closed by the next start tag, as HTML5 defines: nothing is left open.
    assert run("<ul><li>a<li>b</ul><p>x<p>y</p>").valid


# --- WHATWG tokenizer errors, one input each (our own) ------------------------------------

TOKENIZER_CASES = [
    ("<p>a<>b</p>", "invalid-first-character-of-tag-name"),
    ("<p>1 < 2</p>", "invalid-first-character-of-tag-name"),
    ("<p>x</p></>", "missing-end-tag-name"),
    ("<p>x</p></ p>", "invalid-first-character-of-tag-name"),
    ("<p>x</p><?xml?>", "unexpected-question-mark-instead-of-tag-name"),
    ("<p>x</p></", "eof-before-tag-name"),
    ("<p>x</p><", "invalid-first-character-of-tag-name"),
    ("<p>x</p><b", "eof-in-tag"),
    ('<p>x</p><b class="', "eof-in-tag"),
    ("<p>x</p><b class='a", "eof-in-tag"),
    ("<p>x</p><b class=a", "eof-in-tag"),
    ("<p>x</p><b /", "eof-in-tag"),
    ("<p id='a'class='b'>x</p>", "missing-whitespace-between-attributes"),
    ('<p id=a"b>x</p>', "unexpected-character-in-unquoted-attribute-value"),
    ("<p id=>x</p>", "missing-attribute-value"),
    ('<p a"b>x</p>', "unexpected-character-in-attribute-name"),
    ("<p x/y>z</p>", "unexpected-solidus-in-tag"),
    ("<p>x</p id=1>", "end-tag-with-attributes"),
    ("<p>x</p/>", "end-tag-with-trailing-solidus"),
    ("<p/>x", "non-void-html-element-start-tag-with-trailing-solidus"),
    ("<p id=a id=b>x</p>", None),  # duplicate_attribute says it
    ("<p>x</p><!-->", "abrupt-closing-of-empty-comment"),
    ("<p>x</p><!-- y", "eof-in-comment"),
    ("<p>x</p><!x>", "incorrectly-opened-comment"),
    ("<p>x</p><![CDATA[y]]>", None),  # a comment in HTML content: disallowed_element
    ("<p>a &amp b</p>", "missing-semicolon-after-character-reference"),
    ("<p>a &notit; b</p>", "missing-semicolon-after-character-reference"),
    ("<p>a &bogusname; b</p>", "unknown-named-character-reference"),
    ("<p>a &#; b</p>", "absence-of-digits-in-numeric-character-reference"),
    ("<p>a &#xg; b</p>", "absence-of-digits-in-numeric-character-reference"),
    ("<p>a &#65 b</p>", "missing-semicolon-after-character-reference"),
    ("<p>a &#0; b</p>", "null-character-reference"),
    ("<p>a &#x110000; b</p>", "character-reference-outside-unicode-range"),
    ("<p>a &#99999999999; b</p>", "character-reference-outside-unicode-range"),
    ("<p>a &#xD800; b</p>", "surrogate-character-reference"),
    ("<p>a &#xFFFE; b</p>", "noncharacter-character-reference"),
    ("<p>a &#x1FFFF; b</p>", "noncharacter-character-reference"),
    ("<p>a &#x81; b</p>", "control-character-reference"),
    ("<p>a &#13; b</p>", "control-character-reference"),
    (
        '<a class="http-source" target="_blank" href="https://e.com/?a&lt">x</a>',
        "missing-semicolon-after-character-reference",
    ),
    ("<p>a \ufdd0 b</p>", "noncharacter-in-input-stream"),
    ("<p>x</p>&am", "eof-in-character-reference"),
    ("<p>x</p>&", "eof-in-character-reference"),
    ("<p>x</p>&#1", "eof-in-character-reference"),
]


@pytest.mark.parametrize(("html", "error"), TOKENIZER_CASES)
def test_each_tokenizer_error_is_refused(html: str, error: str | None) -> None:
    result = run(html)
    assert not result.valid, html
    if error is not None:
        assert any(message.startswith(f"{error} at line ") for message in parse_errors(html)), (
            error,
            result.issues,
        )


# --- tree construction: what the parser would drop, move, imply or reorder ----------------

TREE_CASES = [
    "<p>x</p></p>",  # a stray end tag: the parser makes an empty <p>
    "<p>x</div>",  # an end tag that closes nothing
    "<div><p>x</div>",  # </div> across an open <p>
    "<b><i>x</b></i>",  # misnested formatting: the adoption agency reorders
    "<b><p>x</b>y</p>",  # ... and moves content
    "<a><a>x</a></a>",  # a link inside a link
    "<table>x<tr><td>y</td></tr></table>",  # text fostered out of the table
    "<table><tr>x<td>y</td></tr></table>",
    "<table><tr><td>y</td></tr> z</table>",
    "<table><p>y</p></table>",  # an element fostered out
    "<table><tr><td>y</td></tr></table></td>",
    "<td>x</td>",  # a cell outside a table: dropped
    "<tr><td>x</td></tr>",
    "<li>a</li></ul>",
    "<h1>a<h2>b</h2></h1>",  # a heading inside a heading is closed
    "<p>a</br>b</p>",  # </br> becomes <br>
    "<body><p>x</p>",  # the shell
    "<html><p>x</p>",
    "<head></head><p>x</p>",
    "<p>x</p></body>",
    "<!DOCTYPE html><p>x</p>",
    "<frameset><frame></frameset>",
    "<p>x<frameset>",
    "<pre>x</p></pre>",
    "<ul><li>a</ul></li>",
]


@pytest.mark.parametrize("html", TREE_CASES)
def test_each_tree_repair_is_refused(html: str) -> None:
    assert not run(html).valid, html


# --- derived at test time: every cut of valid answers -------------------------------------

VALID_ANSWERS = [
    '<p id="text-1">Revenue grew <b class="info-source" id="doc://docid-1-c2?id=a,b">12%</b>.</p>',
    f"<ul><li>one {A}</li><li>two &amp; three</li></ul>",
    "<table><thead><tr><th>k</th></tr></thead><tbody><tr><td>1 &lt; 2</td></tr></tbody></table>",
    f'<div class="blockquote" data-source="https://e.com/x"><p>q</p><footer>f</footer></div>{IMG}',
    "<h2>T&#246;ne</h2><pre><code>a = 1</code></pre><p>x<br>y</p>",
]


def _top_level_ends(html: str) -> set[int]:
    """Offsets where a prefix of a VALID_ANSWERS entry ends with nothing open (the end of a
    top-level element: every entry is top-level elements only)."""
    ends: set[int] = set()
    depth = 0
    i = 0
    while i < len(html):
        if html.startswith("</", i):
            depth -= 1
            i = html.index(">", i) + 1
            if depth == 0:
                ends.add(i)
        elif html.startswith("<", i):
            name = html[i + 1 :].split(">")[0].split(" ")[0]
            i = html.index(">", i) + 1
            if name not in ("br", "img"):
                depth += 1
            elif depth == 0:
                ends.add(i)
        else:
            i += 1
    return ends


@pytest.mark.parametrize("html", VALID_ANSWERS)
def test_every_cut_of_a_valid_answer_that_leaves_something_open_is_refused(html: str) -> None:
    assert run(html).valid
    ends = _top_level_ends(html)
    for cut in range(1, len(html)):
        prefix = html[:cut]
        if not prefix.strip():
            continue
        if cut in ends:
            assert run(prefix).valid, prefix
        else:
            assert not run(prefix).valid, prefix


# --- the shortcut never vouches for what the full check refuses -----------------------------

_PIECES = st.sampled_from(
    ["<p>", "</p>", "<b>", "</b>", "<div>", "</div>", "<ul>", "</ul>", "<li>", "</li>",
     "<table>", "</table>", "<tbody>", "</tbody>", "<tr>", "</tr>", "<td>", "</td>",
     "<a>", "</a>", "<br>", "<br/>", "<img>", "<pre>", "</pre>", "<h1>", "</h1>",
     "<span>", "</span>", "<p/>", "</br>", "x", " ", "\n", "&amp;", "&amp", "&", "&#65;",
     "&#0;", "<", "<!-- c -->", "<P id=a>", '<p id="a" id="b">', "<p id='a'class=b>",
     '<a href="?a&b=1">', '<a href="&amp">', "<footer>", "</footer>", "<thead>", "<th>",
     '<b class="x" CLASS="y">', "<i>", "</i>", "<em>", "</em>", "<td>", "</td>"]
)  # fmt: skip


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_the_shortcut_agrees_with_html5lib(html: str) -> None:
    if strictly_clean(html):
        scan = scan_source(html)
        errors, open_names = _html5lib(html, 100)
        kept = [
            name
            for _pos, name in errors
            if "entity" not in name and name != "duplicate-attribute"  # the scan's to report
        ]
        assert kept == [] and open_names == [], (html, errors, open_names)
        assert not [code for _at, code in reference_errors(html)]
        assert check_conformance(html, 100).clean
        assert scan_source(html) == Scan(
            start_tags=scan.start_tags, end_tags=scan.end_tags, cost=scan.cost
        )  # nothing for the scan to report


@pytest.mark.parametrize(
    ("html", "clean"),
    [
        ("<p>" + "<b>x</b>" * 5000 + "</p>", True),  # 10,002 tags: the bound replayed, held
        ("<br>" * 10_001, False),  # start tags past the scan's bound
        ("<p " + " ".join(f"a{i}" for i in range(33)) + ">x</p>", False),  # 33 attributes
        ('<p id="a" ID="b">x</p>', False),  # an attribute given twice: the scan's to report
        ("<p>" + "<b>" * 150 + "x" + "</b>" * 150 + "</p>" + "<i>y</i>" * 200, True),  # replayed
        ("<p>" + "<b>" * 300 + "x" + "</b>" * 300 + "</p>", False),  # reconstruction bound
    ],
)
def test_the_shortcut_vouches_only_for_what_the_scan_passes(html: str, clean: bool) -> None:
    scan = scan_source(html)
    assert strictly_clean(html) is clean
    assert clean is (not scan.duplicates and scan.too_complex is None and not scan.explicit)


def test_the_shortcut_takes_the_common_answer() -> None:
    # The cost bound in bench/README.md rests on this: plain nested markup skips html5lib.
    for html in VALID_ANSWERS:
        assert strictly_clean(html), html
    assert not strictly_clean("<ul><li>a<li>b</ul>")  # valid, but for html5lib to say
    assert check_conformance("<ul><li>a<li>b</ul>", 100).clean


# --- references: the WHATWG rules, not html5lib's older ones --------------------------------


@pytest.mark.parametrize(
    "html",
    [
        "<p>AT&T, R&D and Q&A</p>",
        "<p>x</p >",
        "<p>a & b</p>",
        "<p>&amp;&lt;&gt;&quot;&nbsp;&copy;</p>",
        "<p>&#x26;&#38;&#x1F600;</p>",
        '<a class="http-source" target="_blank" href="https://e.com/?a=1&b=2&not=3">x</a>',
        '<a class="http-source" target="_blank" href="https://e.com/?x&copy=1">x</a>',
    ],
)
def test_ampersands_html5_reads_as_text_are_fine(html: str) -> None:
    assert run(html).valid, run(html).issues


def test_references_are_reported_once_each_in_source_order() -> None:
    messages = parse_errors("<p>&amp x &bogus; y</p>")
    assert [message.split(" at ")[0] for message in messages] == [
        "missing-semicolon-after-character-reference",
        "unknown-named-character-reference",
    ]
    assert "line 1, column 4" in messages[0]
