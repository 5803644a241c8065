"""What `assistant.html.v1` allows: the bounds and the closed element list.

One place for the allow-lists, so the pre-scan, the tree walk and the instructions agree.
"""

from __future__ import annotations

from typing import Final

NAME: Final = "assistant.html.v1"
MAX_TEXT_CHARS: Final = 1_048_576
MAX_ELEMENTS: Final = 10_000
MAX_DEPTH: Final = 256
MAX_START_TAGS: Final = 10_000
MAX_END_TAGS: Final = 10_000
MAX_ATTRIBUTES_PER_TAG: Final = 32
# The ASCII the HTML input stream takes without a parse error: printable, tab, LF, FF and CR
# (for `text_rules.within_ascii`, which clears such an answer without a regex search).
ASCII_STREAM_OK: Final = bytes(range(0x20, 0x7F)) + b"\t\n\x0c\r"
MAX_RECONSTRUCTION: Final = 100_000
RAG_KEY: Final = "optional_rag_fragment_used"
BODY: Final = "html/body"

ALLOWED_ELEMENTS: Final = frozenset(
    {
        "p",
        "br",
        "b",
        "strong",
        "i",
        "em",
        "u",
        "s",
        "sub",
        "sup",
        "code",
        "pre",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
        "img",
        "div",
        "footer",
    }
)
INLINE: Final = frozenset({"b", "strong", "i", "em", "u", "s", "sub", "sup", "code", "a", "img"})
CODE: Final = frozenset({"code", "pre"})
# Elements whose children are not ordinary HTML content: reported, not descended into.
OPAQUE: Final = frozenset(
    {
        "script",
        "style",
        "template",
        "svg",
        "math",
        "textarea",
        "title",
        "xmp",
        "iframe",
        "noembed",
        "noframes",
        "noscript",
        "plaintext",
        "select",
        "object",
        "embed",
        "head",
    }
)
BLOCKQUOTE_CLASSES: Final = frozenset({"blockquote", "blockquote doc-embed"})
