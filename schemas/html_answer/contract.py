"""The `assistant.html.v1` contract object: the checks in order, and what it delivers.

The fence (`transport`), forbidden characters, the linear pre-scan (`scan`), then lexbor
(selectolax, fragment mode in a `body` context, scripting off) and the tree walk (`walk`).
A `json` tool call is `wrong_transport`; text over `MAX_TEXT_CHARS` is `too_long`.
"""

from __future__ import annotations

import html
import re
from typing import Any, Final

from selectolax.lexbor import LexborHTMLParser

from schemas.codes import MAX_ISSUES, TOO_LONG
from schemas.contract import ContractBase, ContractResult, ReplyContract, ReplyInput
from schemas.html_answer.charrefs import CUT_REFERENCE
from schemas.html_answer.codes import (
    CODES,
    DISALLOWED_ELEMENT,
    DUPLICATE_ATTRIBUTE,
    EMPTY_HTML,
    HTML_PARSE_ERROR,
    INVALID_CHARACTER,
    NOT_FENCED,
    TOO_COMPLEX,
    UNCLOSED_ELEMENT,
    WRONG_TRANSPORT,
    uri_issue,
)
from schemas.html_answer.conformance import FOSTERED, parse_findings, strictly_clean
from schemas.html_answer.rules import (
    ASCII_STREAM_OK,
    BODY,
    MAX_DEPTH,
    MAX_TEXT_CHARS,
    NAME,
    RAG_KEY,
)
from schemas.html_answer.scan import EXPLICIT, line_col, scan_source
from schemas.html_answer.state import Walk
from schemas.html_answer.transport import split_fence
from schemas.html_answer.walk import walk_tree
from schemas.issue import Issue
from schemas.issue_sink import IssueSink
from schemas.preview import MAX_CODE_POINTS, html_text
from schemas.records import Context
from schemas.text_rules import within_ascii
from schemas.uris import UriError, parse_uri

_BAD_CHAR_RE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


_EXPLICIT_FORMS: Final = {
    "image": "image",
    "!doctype": "doctype",
    "frameset": "frameset",
    "frame": "frameset",
}
# What a cut-off construct is, by the WHATWG error that reports it (for the message).
_CUT_OFF: Final = {
    "eof-in-tag": "tag",
    "eof-before-tag-name": "tag",
    "eof-in-comment": "comment",
    "eof-in-doctype": "doctype",
    "eof-in-script-html-comment-like-text": "script",
    "eof-in-cdata": "CDATA section",
    CUT_REFERENCE: "character reference",
}


def _parse_error_form(error: str) -> dict[str, str]:
    """The wording of `html_parse_error` for one parser error (form and its context)."""
    if error in _CUT_OFF:
        return {"form": "eof", "what": _CUT_OFF[error]}
    if error == FOSTERED or "table-voodoo" in error:
        return {"form": "foster"}
    if "character-reference" in error:
        return {"form": "reference"}
    if error.startswith("adoption-agency"):
        return {"form": "nesting"}
    if "end-tag" in error:
        return {"form": "end_tag"}
    if "start-tag" in error:
        return {"form": "start_tag"}
    return {"form": ""}


def _check_tokens(payload: str, walk: Walk) -> bool:
    """What the token scan and a WHATWG parser report; False if no tree may be built. The
    common answer is vouched for by one strict pass (`strictly_clean`): neither runs."""
    if strictly_clean(payload):
        return True
    if not _check_scan(payload, walk):
        return False
    _check_conformance(payload, walk)
    return True


def _check_conformance(payload: str, walk: Walk) -> None:
    """What a WHATWG parser would repair, and what is left open at the end."""
    result = parse_findings(payload, MAX_ISSUES)
    if result.too_deep:
        walk.issues.add(TOO_COMPLEX.issue(BODY, "depth", limit=MAX_DEPTH))
    for finding in result.errors:
        context = _parse_error_form(finding.error)
        form = context.pop("form")
        where = f"line {finding.line}, column {finding.column}"
        walk.issues.add(
            HTML_PARSE_ERROR.issue(BODY, form, error=finding.error[:80], where=where, **context)
        )
    for tag in result.unclosed:
        walk.issues.add(UNCLOSED_ELEMENT.issue(BODY, tag=tag[:40]))


def _check_characters(payload: str, walk: Walk) -> bool:
    """Flag control characters and lone surrogates; False if the payload cannot be parsed."""
    if within_ascii(payload, ASCII_STREAM_OK):
        return True
    match = _BAD_CHAR_RE.search(payload)
    if match is None:
        return True
    char = match.group()
    where = line_col(payload, match.start())
    walk.issues.add(INVALID_CHARACTER.issue(BODY, code_point=ord(char), where=where))
    return not ("\ud800" <= char <= "\udfff" or _has_surrogate(payload))


def _has_surrogate(payload: str) -> bool:
    try:
        payload.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_scan(payload: str, walk: Walk) -> bool:
    """Report what only the token stream shows; False if the parser must not run."""
    scan = scan_source(payload)
    for name, offset in scan.explicit.items():
        where = line_col(payload, offset)
        form = _EXPLICIT_FORMS.get(name, "explicit")
        walk.issues.add(
            DISALLOWED_ELEMENT.issue(EXPLICIT.get(name, "!doctype"), form, tag=name, where=where)
        )
    for offset, tag, attr in scan.duplicates:
        where = line_col(payload, offset)
        walk.issues.add(
            DUPLICATE_ATTRIBUTE.issue(BODY, tag=tag[:40], where=where, attribute=attr[:60])
        )
    if scan.too_complex is not None:
        form, context = scan.too_complex
        where = line_col(payload, scan.too_complex_at)
        walk.issues.add(TOO_COMPLEX.issue(BODY, form, where=where, **context))
        return False
    return True


def _check_rag(items: tuple[str, ...], walk: Walk) -> list[str]:
    """The trailing line's items: canonical URIs, each `doc://` one under the element-ID rule
    like a URI in the HTML (not cited: they go to `rag_fragments_used`)."""
    used: list[str] = []
    for index, item in enumerate(items):
        path = f"{RAG_KEY}[{index}]"
        parsed = parse_uri(item)
        if isinstance(parsed, UriError):
            walk.issues.add(uri_issue(parsed, path, "invalid_uri"))
        else:
            walk.check_element_ids(parsed, path)
            used.append(parsed.value)
    return used


class AssistantHtmlV1(ContractBase):
    """The `assistant.html.v1` reply contract (docs/contracts.md section 2)."""

    name = NAME
    delivers_object = True
    notice_in_message_shape = True
    codes = CODES

    def validate(self, reply: ReplyInput, context: Context) -> ContractResult:
        """Check transport, HTML and citations; report every issue (bounded), repair nothing."""
        if reply.transport != "text":
            return ContractResult(issues=(WRONG_TRANSPORT.issue("$"),))
        text = reply.text
        if not isinstance(text, str):
            return ContractResult(issues=(NOT_FENCED.issue("$", "no_text"),))
        if len(text) > MAX_TEXT_CHARS:
            return ContractResult(issues=(TOO_LONG.issue("$", "chars", limit=MAX_TEXT_CHARS),))
        fenced = split_fence(text)
        if isinstance(fenced, Issue):
            return ContractResult(issues=(fenced,))
        walk = Walk(IssueSink(), context.fragments or {})
        for transport in fenced.transport:  # first: the correction carries every error
            walk.issues.add(transport)
        rag = _check_rag(fenced.rag_items, walk) if fenced.rag_items is not None else []
        _check_payload(fenced.payload, walk)
        issues = tuple(walk.issues.result())
        if issues:
            return ContractResult(issues=issues, reports=tuple(walk.reports))
        message = {"html": fenced.payload, "citations": walk.citations, "rag_fragments_used": rag}
        return ContractResult(message=message, reports=tuple(walk.reports))

    def json_schema(self) -> dict[str, Any]:
        """The delivered message: html, citations and rag_fragments_used, closed."""
        uri_list = {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
        }
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:replygate:contract:assistant.html.v1",
            "title": NAME,
            "type": "object",
            "properties": {
                "html": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the fenced HTML payload, exactly as sent",
                },
                "citations": {**uri_list, "description": "canonical URIs cited, in order"},
                "rag_fragments_used": {
                    **uri_list,
                    "description": "URIs of the optional trailing line",
                },
            },
            "required": ["html", "citations", "rag_fragments_used"],
            "additionalProperties": False,
        }

    def instructions(self) -> str:
        """Format-only correction instructions: the fence, the closed HTML subset, citations."""
        return _INSTRUCTIONS

    def notice_message(self, text: str) -> dict[str, Any]:
        """The host's failure notice as one escaped paragraph, in the delivered message shape."""
        return {"html": f"<p>{html.escape(text)}</p>", "citations": [], "rag_fragments_used": []}

    def model_schema(self) -> None:
        """The model writes a fenced HTML answer, not JSON: the instructions say all there is."""
        return None

    def preview_text(self, message: Any) -> str:
        """The HTML's text, only as far as the one-line preview can show."""
        return html_text(str(message.get("html", "")), MAX_CODE_POINTS)

    def reply_of(self, message: Any) -> ReplyInput:
        """The fenced answer that this contract turns into `message`."""
        payload = message.get("html") if isinstance(message, dict) else None
        text = f"```html\n{payload if isinstance(payload, str) else ''}\n```"
        rag = message.get("rag_fragments_used") if isinstance(message, dict) else None
        if isinstance(rag, list) and rag and all(isinstance(item, str) for item in rag):
            text += f"\n{RAG_KEY}: " + ";".join(rag)
        return ReplyInput("text", text=text)


def _check_payload(payload: str, walk: Walk) -> None:
    if not payload.strip():
        walk.issues.add(EMPTY_HTML.issue(BODY))
        return
    if not _check_characters(payload, walk):
        return
    if not _check_tokens(payload, walk):
        return
    tree = LexborHTMLParser(payload, is_fragment=True, fragment_tag="body", scripting=False)
    walk_tree(tree.root, walk)


ASSISTANT_HTML_V1: Final = AssistantHtmlV1()
_: ReplyContract = ASSISTANT_HTML_V1

_INSTRUCTIONS = """\
Answer with exactly one Markdown code fence labelled html that holds the whole answer:
```html
<p>...</p>
```
Optionally, after the closing fence, add ONE line listing the fragments you used:
optional_rag_fragment_used: doc://docid-1-c0;doc://docid-2
Nothing else may appear outside the fence.

Inside the fence write only these HTML elements (no <html>, <head>, <body>, doctype, comments,
script, style, span or any other element):
p br b strong i em u s sub sup code pre ul ol li h1 h2 h3 h4 h5 h6 table thead tbody tr th td
a img div footer

Attributes, exactly as listed (no other attribute, no other class):
- <b> none, or class="info-source" id="URI;URI" (the sources it cites)
- <a class="http-source" target="_blank" href="https://..."> (absolute http or https URL)
- <img class="img-source" src="/document/<uuid>.<ext>" alt="description"> (ext png, jpg, jpeg,
  gif, webp or svg)
- <div class="blockquote" data-source="URI"> a quotation, optionally ending in <footer>;
  or <div class="blockquote doc-embed" data-source="URI"></div>, which must be empty
- <p> and <li>: optional id="text-8" (letters, digits, _ and -)
- <footer> only inside <div class="blockquote">; every other element: no attributes

Citation URIs (plain ASCII):
- doc://docid-N, doc://docid-N-cM, doc://docid-N-cM-pK, optionally with ?id=ID,ID listing the
  element IDs cited; when the fragment's element IDs are known, ?id= is required and may only
  name those IDs. Never write a bare docid-... inside an attribute.
- kg://ENTITY?name=NAME&alias=ALIAS and inno://... (name and alias optional; percent-encode
  spaces and / ? # & = ;), skill://SkillName/INSTANCE, https://host/path

Do not use Markdown anywhere in the text: no **bold**, __bold__, [text](url), ![alt](url),
# headings or ``` fences; use the HTML elements above.
"""
