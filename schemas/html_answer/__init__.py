"""`assistant.html.v1`: an HTML answer in a Markdown fence, checked against a closed element list.

One module per concern: `transport` (the fence), `rules` (bounds and allow-lists), `scan`
(the linear pre-scan), `walk` (the tree walk, text checks), `attributes` (attribute and URI
checks), `state` (issues and citations of one validation), `contract` (the contract object).

Paths. An element is `html/body/TAG[i]/...` (i: 1-based among same-tag siblings), an attribute
`...@name`, a text node `.../text()[i]`, a comment `.../comment()[i]`. Source-level findings
use `html` (`<html>`), `html/head`, `html/body` (explicit tags, too_complex, bad characters,
with line:column in the message) and `!doctype`. Transport errors are at `$`; the trailing
line's items at `optional_rag_fragment_used[i]` (0-based).

Decisions the spec leaves open:
- Comments (and CDATA / `<?...>` bogus comments) are `disallowed_element`, like every other
  node that is not an allowed element or text.
- Control characters (U+0000-U+0008, U+000B, U+000E-U+001F, U+007F-U+009F) and lone surrogates
  in the payload are `invalid_character` (the parser would drop or replace them, so the
  delivered HTML would not be what was checked). An empty or blank payload is `empty_html`.
- Children of disallowed elements are still checked, except inside elements whose content is
  not ordinary HTML (script, style, svg, math, template, textarea, ...).
- Markdown shorthand is looked for in text nodes outside `code` and `pre` (showing Markdown in
  a code block is legitimate): `**x**`, `__x__` (not inside a word), `[t](u)`, `![a](u)`,
  three backticks, and a line starting with `#`..`######` and a space, where a text node
  starts a line if it is the first child or follows a non-inline element or `br`.
- Prose doc links (`docid-113-c0`, and `doc://docid-...` written as text) outside code/pre are
  cited as canonical `doc://...`; the bare ones are also listed, as written, in `reports`.
  Citations are deduplicated by exact string, in document order.
- The element-ID rule applies to every `doc://` URI written out (attributes, prose and the
  trailing line's items), not to bare `docid-` prose links, which cannot carry `?id=`.
- `img src` UUID hex digits may be either case; the extension is lower case. A blank `alt` is
  `invalid_attribute_value`. `b` with neither `class` nor `id` but other attributes gets only
  `disallowed_attribute`; with one of the two, the other is `missing_attribute`.
- An attribute written twice in one start tag (`<a href=... href=...>`, names compared as the
  tokenizer lower-cases them) is `duplicate_attribute`, found by the pre-scan (at `html/body`,
  line:column in the message): the parser keeps the first, other consumers take the last.
- `footer` counts as inside a blockquote when any ancestor is `div` with class `blockquote`
  (or `blockquote doc-embed`, which then fails `doc_embed_not_empty`).
"""

from schemas.html_answer.contract import ASSISTANT_HTML_V1
from schemas.html_answer.rules import ALLOWED_ELEMENTS, MAX_TEXT_CHARS
from schemas.html_answer.scan import scan_source
from schemas.html_answer.transport import Fenced, split_fence

__all__ = [
    "ALLOWED_ELEMENTS",
    "ASSISTANT_HTML_V1",
    "MAX_TEXT_CHARS",
    "Fenced",
    "scan_source",
    "split_fence",
]
