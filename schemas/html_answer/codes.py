"""The codes only `assistant.html.v1` emits (the catalogue lists them under its name)."""

from __future__ import annotations

from typing import Final

from schemas.codes import code, table
from schemas.html_answer.rules import NAME
from schemas.issue import Issue
from schemas.uris import UriError

# A bare `docid-...`: non_canonical_uri in the HTML, invalid_uri on the trailing line.
_BARE_DOC: Final = "{value!r} is a bare doc reference; write it as {hint}"

# fmt: off
CODES: Final = table(
    NOT_FENCED := code(
       "not_fenced", NAME,
       "The answer is not exactly one ```html fence (plus the optional trailing line): text "
       "before or after it, no fence, or a fence never closed.",
       "$",
       "",
       "the answer must start with a Markdown code fence labelled html (```html); found "
       "other text before it",
       no_text="there is no answer text",
       empty="the answer is empty; send one ```html fenced block",
       unclosed="the ```html fence is never closed; end it with a line holding only ```",
       text_after="found text after the closing fence; only one optional_rag_fragment_used: "
       "URI(;URI)* line may follow it",
       second_rag="found a second optional_rag_fragment_used line after the closing fence; "
       "only one optional_rag_fragment_used: URI(;URI)* line may follow it"),
    WRONG_TRANSPORT := code(
       "wrong_transport", NAME, "The HTML came as a `json` tool call; this contract takes text.",
       "$", "",
       "this contract takes a text answer (a ```html fence), not a json tool call"),
    EMPTY_HTML := code(
       "empty_html", NAME, "The fence holds no HTML.",
       "html/body", "",
       "the ```html fence holds no HTML"),
    DISALLOWED_ELEMENT := code(
       "disallowed_element", NAME,
       "An element outside the allowed list, a comment, or an explicit html/head/body/doctype "
       "or frameset/frame.",
       "html/body/script[1]",
       {"tag": "script",
        "allowed": "a b br code div em footer h1 h2 h3 h4 h5 h6 i img li ol p pre s strong sub "
        "sup table tbody td th thead tr u ul"},
       "<{tag}> is not allowed (allowed: {allowed})",
       comment="HTML comments are not allowed",
       node="only elements and text are allowed",
       image="<image> is written at {where}; it is not an allowed element (write <img>)",
       doctype="<!DOCTYPE> is written at {where}; send only the body content, without document, "
       "head or body tags",
       explicit="<{tag}> is written at {where}; send only the body content, without document, "
       "head or body tags",
       frameset="<{tag}> is written at {where}; it is not allowed (in a document it would "
       "replace the body)"),
    HTML_PARSE_ERROR := code(
       "html_parse_error", NAME,
       "A conformant HTML5 (WHATWG) parser reports a parse error: it would repair the markup "
       "(cut-off tags, stray end tags, misnested or fostered content, malformed attributes "
       "or character references), so readers in other contexts would build other trees.",
       "html/body",
       {"form": "eof", "error": "eof-in-tag", "where": "line 1, column 39", "what": "tag"},
       "{error} at {where}: the HTML5 parser would repair this; write the markup exactly "
       "as HTML5 allows, without relying on the parser to fix it",
       eof="{error} at {where}: the {what} is cut off at the end of the answer; finish it",
       foster="{error} at {where}: text or an element stands inside <table>, <thead>, "
       "<tbody> or <tr> outside a cell; the parser moves it out of the table: put it in "
       "a <td> or <th>, or outside the table",
       end_tag="{error} at {where}: an end tag that closes nothing open here (or closes "
       "across other open elements); the parser drops or reorders it: close each element "
       "exactly once, innermost first",
       start_tag="{error} at {where}: a tag that is not allowed where it stands; the parser "
       "drops, moves or reorders it",
       reference="{error} at {where}: write character references in full with a final ; "
       "(&amp; for a literal &)",
       nesting="{error} at {where}: formatting elements are misnested; the parser reopens "
       "and moves them: close each one inside the element it was opened in"),
    UNCLOSED_ELEMENT := code(
       "unclosed_element", NAME,
       "An element still open at the end of the answer: whatever follows the answer on a "
       "page would end up inside it.",
       "html/body",
       {"tag": "p"},
       "<{tag}> is still open at the end of the answer; close it with </{tag}>"),
    DISALLOWED_ATTRIBUTE := code(
       "disallowed_attribute", NAME, "An attribute the element may not have.",
       "html/body/p[1]@style", {"tag": "p", "allowed": "id"},
       "<{tag}> may not have this attribute (allowed: {allowed})"),
    DUPLICATE_ATTRIBUTE := code(
       "duplicate_attribute", NAME,
       "The same attribute twice on one tag: consumers disagree about which one counts.",
       "html/body",
       {"tag": "a", "where": "3:5", "attribute": "href"},
       "<{tag}> at {where} has the attribute {attribute!r} twice; consumers disagree "
       "about which one counts: write it once"),
    MISSING_ATTRIBUTE := code(
       "missing_attribute", NAME, "A required attribute is absent (e.g. `a` without `href`).",
       "html/body/p[1]/a[1]@target", {"name": "target", "value": "_blank"},
       "is required: {name}=\"{value}\"",
       info_source_id="is required with class=\"info-source\": id=\"URI(;URI)*\"",
       href="is required: an absolute http(s) URL",
       src="is required: /document/<uuid>.<ext>",
       alt="is required: describe the image",
       blockquote_class="is required: \"blockquote\" or \"blockquote doc-embed\"",
       data_source="is required: a canonical URI"),
    INVALID_ATTRIBUTE_VALUE := code(
       "invalid_attribute_value", NAME,
       "An attribute with the wrong value: a class or target not exactly as listed, a bad "
       "image source, a blank alt, an element ID outside [A-Za-z0-9_-].",
       "html/body/p[1]/a[1]@class", {"value": "link", "wanted": "http-source"},
       "is {value!r}; must be exactly \"{wanted}\"",
       http_only="{value!r} must be an absolute http(s) URL",
       src="{value!r} must be /document/<uuid>.<ext> (uuid as 8-4-4-4-12 hex; ext png, jpg, "
       "jpeg, gif, webp or svg)",
       blank_alt="is blank; describe the image",
       blockquote_class="is {value!r}; must be exactly \"blockquote\" or \"blockquote doc-embed\"",
       element_id="{value!r} is not an element ID ([A-Za-z0-9_-]+)"),
    FOOTER_OUTSIDE_BLOCKQUOTE := code(
       "footer_outside_blockquote", NAME, '`footer` outside `div class="blockquote"`.',
       "html/body/footer[1]", "",
       "<footer> is only allowed inside <div class=\"blockquote\">"),
    DOC_EMBED_NOT_EMPTY := code(
       "doc_embed_not_empty", NAME, 'A `div class="blockquote doc-embed"` with content.',
       "html/body/div[1]", "",
       "a <div class=\"blockquote doc-embed\"> must be empty"),
    INVALID_CHARACTER := code(
       "invalid_character", NAME,
       "A control character or lone surrogate in the HTML (the parser would drop or change "
       "it, so what is delivered would not be what was checked).",
       "html/body", {"code_point": 7, "where": "2:14"},
       "contains the control character U+{code_point:04X} at {where} of the HTML; remove "
       "it"),
    TOO_COMPLEX := code(
       "too_complex", NAME,
       "Too many elements or attributes, nesting too deep, or markup whose parse would "
       "explode: refused before parsing.",
       "html/body", {"limit": 10000},
       "more than {limit} elements",
       depth="elements nest deeper than {limit} levels",
       attributes="a <{tag}> tag has more than {limit} attributes (at {where})",
       start_tags="more than {limit} start tags (at {where})",
       end_tags="more than {limit} end tags (at {where})",
       reconstruction="too many formatting elements (b, i, a, ...) left open or misnested: "
       "the parser could re-open them over and over; close each one where it belongs (at {where})"),
    MARKDOWN_SHORTHAND := code(
       "markdown_shorthand", NAME,
       "Markdown in the text (`**bold**`, `__bold__`, `[text](url)`, `![alt](url)`, `# ` "
       "headings, fences): it is not rendered here.",
       "html/body/p[1]/text()[1]",
       {"form": "bold"}, "",
       bold="Markdown is not rendered here: **bold**/__bold__ (use <strong> or <b>)",
       image="Markdown is not rendered here: ![alt](url) (use <img>)",
       link="Markdown is not rendered here: [text](url) (use <a>)",
       fence="Markdown is not rendered here: ``` code fence (use <pre><code>)",
       heading="Markdown is not rendered here: # heading (use <h1>..<h6>)"),
    INVALID_URI := code(
       "invalid_uri", NAME, "A cited URI that is not one of the canonical forms.",
       "html/body/div[1]@data-source",
       {"form": "skill", "value": "skill://x"}, "",
       bare=_BARE_DOC,
       non_ascii="{value!r} contains the non-ASCII character U+{code_point:04X} at offset "
       "{offset}; URIs must be plain ASCII (lookalike or invisible characters are not "
       "accepted)",
       empty="{value!r} is empty; expected a canonical URI",
       too_long="{value!r} is longer than {limit} characters",
       other_scheme="{value!r} has the scheme {scheme!r}, which is not allowed; expected doc://, "
       "kg://, inno://, skill://, http:// or https://",
       no_scheme="{value!r} has no scheme; expected doc://, kg://, inno://, skill://, http:// or "
       "https://",
       doc="{value!r} is not doc://docid-N[-cM[-pK]][?id=ID(,ID)*] (N, M, K integers without "
       "sign or leading zeros)",
       entity="{value!r} is not {scheme}://ENTITY[?name=NAME[&alias=ALIAS]] (no whitespace or / "
       "? # & = ; inside the parts; percent-encode them)",
       skill="{value!r} is not skill://SkillName/INSTANCE",
       http="{value!r} is not an absolute {scheme} URL with a host (no user-info, no spaces, "
       "valid %HH escapes)",
       unsupported="{value!r} has the unsupported scheme {scheme!r}; expected doc, kg, inno, "
       "skill, http or https (lower case)"),
    NON_CANONICAL_URI := code(
       "non_canonical_uri", NAME, "A bare `docid-...` inside an attribute, not a doc:// URI.",
       "html/body/div[1]@data-source",
       {"form": "bare", "value": "docid-113-c0", "hint": "doc://docid-113-c0"}, "",
       bare=_BARE_DOC),
    MISSING_ELEMENT_IDS := code(
       "missing_element_ids", NAME,
       "A cited fragment whose element IDs are known, cited without `?id=`.",
       "html/body/b[1]@id",
       {"uri": "doc://docid-17-c2-p3", "known": "text-21, text-22"},
       "{uri} cites a fragment whose element IDs are known; add ?id= with the IDs you "
       "used (one of {known})"),
    UNKNOWN_ELEMENT_ID := code(
       "unknown_element_id", NAME, "A cited element ID that the fragment does not contain.",
       "html/body/b[1]@id",
       {"uri": "doc://docid-17-c2-p3?id=text-99", "element_id": "text-99",
        "fragment": "docid-17-c2-p3", "known": "text-21, text-22"},
       "{uri}: element ID {element_id!r} is not in fragment {fragment} (known: {known})"),
)
# fmt: on


def uri_issue(error: UriError, path: str, code: str = "") -> Issue:
    """The Issue at `path` for a URI that failed the grammar (as `code` where the caller counts
    it so), the URI quoted, cut short, in its message."""
    return CODES[code or error.code].issue(path, error.form, **error.context)
