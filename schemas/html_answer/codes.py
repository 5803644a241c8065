"""The codes only `assistant.html.v1` emits (the catalogue lists them under its name)."""

from __future__ import annotations

from typing import Final

from schemas.codes import code, table
from schemas.html_answer.rules import NAME

# fmt: off
CODES: Final = table(
    code("not_fenced", NAME,
       "The answer is not exactly one ```html fence (plus the optional trailing line): text "
       "before or after it, no fence, or a fence never closed.",
       "$",
       "the answer must start with a Markdown code fence labelled html (```html); found "
       "other text before it"),
    code("wrong_transport", NAME, "The HTML came as a `json` tool call; this contract takes text.",
       "$", "this contract takes a text answer (a ```html fence), not a json tool call"),
    code("empty_html", NAME, "The fence holds no HTML.",
       "html/body", "the ```html fence holds no HTML"),
    code("disallowed_element", NAME,
       "An element outside the allowed list, a comment, or an explicit html/head/body/doctype.",
       "html/body/script[1]",
       "<script> is not allowed (allowed: a b br code div em footer h1 h2 h3 h4 h5 h6 i img "
       "li ol p pre s strong sub sup table tbody td th thead tr u ul)"),
    code("disallowed_attribute", NAME, "An attribute the element may not have.",
       "html/body/p[1]@style", "<p> may not have this attribute (allowed: id)"),
    code("duplicate_attribute", NAME,
       "The same attribute twice on one tag: consumers disagree about which one counts.",
       "html/body",
       "<a> at 3:5 has the attribute 'href' twice; consumers disagree about which one "
       "counts: write it once"),
    code("missing_attribute", NAME, "A required attribute is absent (e.g. `a` without `href`).",
       "html/body/p[1]/a[1]@target", 'is required: target="_blank"'),
    code("invalid_attribute_value", NAME,
       "An attribute with the wrong value: a class or target not exactly as listed, a bad "
       "image source, a blank alt, an element ID outside [A-Za-z0-9_-].",
       "html/body/p[1]/a[1]@class", "is 'link'; must be exactly \"http-source\""),
    code("footer_outside_blockquote", NAME, '`footer` outside `div class="blockquote"`.',
       "html/body/footer[1]", '<footer> is only allowed inside <div class="blockquote">'),
    code("doc_embed_not_empty", NAME, 'A `div class="blockquote doc-embed"` with content.',
       "html/body/div[1]", 'a <div class="blockquote doc-embed"> must be empty'),
    code("invalid_character", NAME,
       "A control character or lone surrogate in the HTML (the parser would drop or change "
       "it, so what is delivered would not be what was checked).",
       "html/body", "contains the control character U+0007 at 2:14 of the HTML; remove it"),
    code("too_complex", NAME,
       "Too many elements or attributes, nesting too deep, or markup whose parse would "
       "explode: refused before parsing.",
       "html/body", "more than 10000 elements"),
    code("markdown_shorthand", NAME,
       "Markdown in the text (`**bold**`, `__bold__`, `[text](url)`, `![alt](url)`, `# ` "
       "headings, fences): it is not rendered here.",
       "html/body/p[1]/text()[1]",
       "Markdown is not rendered here: **bold**/__bold__ (use <strong> or <b>)"),
    code("invalid_uri", NAME, "A cited URI that is not one of the canonical forms.",
       "html/body/div[1]@data-source",
       "'skill://x' is not skill://SkillName/INSTANCE"),
    code("non_canonical_uri", NAME, "A bare `docid-...` inside an attribute, not a doc:// URI.",
       "html/body/div[1]@data-source",
       "'docid-113-c0' is a bare doc reference; write it as doc://docid-113-c0"),
    code("missing_element_ids", NAME,
       "A cited fragment whose element IDs are known, cited without `?id=`.",
       "html/body/b[1]@id",
       "doc://docid-17-c2-p3 cites a fragment whose element IDs are known; add ?id= with "
       "the IDs you used (one of text-21, text-22)"),
    code("unknown_element_id", NAME, "A cited element ID that the fragment does not contain.",
       "html/body/b[1]@id",
       "doc://docid-17-c2-p3?id=text-99: element ID 'text-99' is not in fragment "
       "docid-17-c2-p3 (known: text-21, text-22)"),
)
# fmt: on
