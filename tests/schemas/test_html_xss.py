"""Shapes of public XSS and mutation-XSS material (written here in our own words): none of
them may be accepted by `assistant.html.v1`, alone or as the first or second of two answers
shown one after the other."""

from __future__ import annotations

import pytest

from schemas.contract import ReplyInput
from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.records import EMPTY_CONTEXT

UUID = "123e4567-e89b-12d3-a456-426614174000"
SAFE = "<p>Here is the summary.</p>"

PAYLOADS = [
    # script and handlers, plain and obfuscated
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//x.test/a.js></SCRIPT>",
    "<script/x>alert(1)</script>",
    "<p>ok</p><script/x='",
    "<p>' >alert(document.domain)</script>Thanks!</p>",
    "<img src=x onerror=alert(1)>",
    f'<img class="img-source" src="/document/{UUID}.png" alt="x" onerror="alert(1)">',
    f'<img class="img-source" src="/document/{UUID}.png" alt="x"/onerror=alert(1)>',
    f'<img class="img-source" src="/document/{UUID}.png" alt="x"onerror=alert(1)>',
    "<img src=`x`onerror=alert(1)>",
    "<img\nsrc=x\nonerror\n=\nalert(1)>",
    "<body onload=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<p onmouseover=alert(1)>x</p>",
    "<details open ontoggle=alert(1)>",
    "<frameset onload=alert(1)>",
    "<p>ok</p><IFRAME",
    "<iframe src=javascript:alert(1)>",
    "<iframe srcdoc='&lt;script&gt;alert(1)&lt;/script&gt;'></iframe>",
    "<object data=javascript:alert(1)>",
    "<embed src=javascript:alert(1)>",
    "<form><button formaction=javascript:alert(1)>x</button></form>",
    "<form><form><input name=x></form></form>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    # javascript: URLs with entities, blanks and case
    '<a class="http-source" target="_blank" href="javascript:alert(1)">x</a>',
    '<a class="http-source" target="_blank" href="jav&#x09;ascript:alert(1)">x</a>',
    '<a class="http-source" target="_blank" href="jav&#9ascript:alert(1)">x</a>',
    '<a class="http-source" target="_blank" href="&#106;avascript:alert(1)">x</a>',
    '<a class="http-source" target="_blank" href="JaVaScRiPt:alert(1)">x</a>',
    '<a class="http-source" target="_blank" href=" javascript:alert(1)">x</a>',
    '<a class="http-source" target="_blank" href="javascript&colon;alert(1)">x</a>',
    '<a class="http-source" target="_blank" href="data:text/html,<script>alert(1)</script>">',
    '<a class="http-source" target="_blank" href="https://e.com" href="javascript:alert(1)">x</a>',
    '<a class="http-source" target="_blank" href="https://e.com"/href="javascript:x">x</a>',
    # mutation XSS: namespace confusion, raw text, templates, comments
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    "<template><p><img src=x onerror=alert(1)></p></template>",
    '<svg></p><style><a id="</style><img src=1 onerror=alert(1)>">',
    "<math><mi><table><mi><svg><style><img src=x onerror=alert(1)>",
    "<svg><foreignObject><p>x</p></foreignObject></svg>",
    '<math><mtext><h1><a><h6></a></h6><mglyph><svg><mtext><style><a title="</style><img>">',
    "<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>",
    "<textarea></textarea><img src=x onerror=alert(1)>",
    "<title><img src=x onerror=alert(1)></title>",
    '<xmp><p title="</xmp><img src=x onerror=alert(1)>">',
    "<!--><img src=x onerror=alert(1)>-->",
    "<!-- --!><img src=x onerror=alert(1)> -->",
    "<p>x</p><![CDATA[<img src=x onerror=alert(1)>]]>",
    "<?xml ?><img src=x onerror=alert(1)>",
    "<!DOCTYPE html><p>x</p>",
    "<p>x</p><!--",
    # stray and misplaced tags the parser repairs
    "<p>x</p></p>",
    "<table><a href=javascript:alert(1)>x</a></table>",
    "<table><td>x</td></table><b>",
    "<b><table><td></b><i>x",
    "<a><p><a>x</a></p></a>",
    "<p>x</p><plaintext><script>",
    "<p>x</p><base href=javascript:/a/>",
    "<p>x</p><meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    "<p>x</p><link rel=import href=//x.test>",
    '<p style="background:url(javascript:alert(1))">x</p>',
    '<div class="blockquote" data-source="javascript:alert(1)"></div>',
    # references without semicolons and cut off at the end
    "<p>&lt</p><img src=x onerror=alert(1)>",
    "<p>x &#60</p>",
    "<p>x</p><a",
    "<p>x</p></scr",
    '<p title="x',
]


def valid(html: str) -> bool:
    text = f"```html\n{html}\n```"
    return ASSISTANT_HTML_V1.validate(ReplyInput("text", text), EMPTY_CONTEXT).valid


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_xss_shape_is_accepted(payload: str) -> None:
    assert not valid(payload)
    assert not valid(SAFE + payload)
    assert not valid(payload + SAFE)


def test_the_safe_answer_alone_is_accepted() -> None:
    assert valid(SAFE)
