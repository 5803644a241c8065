"""The tree walk: every node of the parsed fragment checked, iteratively (no recursion limit
can be reached), each finding at its path (see the package docstring)."""

from __future__ import annotations

import re2
from selectolax.lexbor import LexborNode

from schemas.html_answer.attributes import check_attributes, read_attributes
from schemas.html_answer.rules import (
    ALLOWED_ELEMENTS,
    BLOCKQUOTE_CLASSES,
    BODY,
    CODE,
    INLINE,
    MAX_DEPTH,
    MAX_ELEMENTS,
    OPAQUE,
)
from schemas.html_answer.state import Walk
from schemas.uris import find_doc_links

_BOLD_STAR_RE = re2.compile(r"\*\*[^*\s](?:[^*\n]*[^*\s])?\*\*")
_BOLD_UNDER_RE = re2.compile(r"(?:^|[^A-Za-z0-9_])__[^_\s](?:[^_\n]*[^_\s])?__(?:$|[^A-Za-z0-9_])")
_LINK_RE = re2.compile(r"(!?)\[[^\[\]\n]*\]\([^()\n]*\)")
_HEADING_RE = re2.compile(r"(?:^|\n)[ \t]*#{1,6}[ \t]")
_HEADING_AFTER_NL_RE = re2.compile(r"\n[ \t]*#{1,6}[ \t]")


def _check_text(walk: Walk, path: str, text: str, line_start: bool) -> None:
    # Cheap substring tests first: the RE2 wrapper costs microseconds per call.
    found: list[str] = []
    if ("**" in text and _BOLD_STAR_RE.search(text)) or (
        "__" in text and _BOLD_UNDER_RE.search(text)
    ):
        found.append("**bold**/__bold__ (use <strong> or <b>)")
    if "](" in text:
        match = _LINK_RE.search(text)
        if match is not None:
            found.append("![alt](url) (use <img>)" if match.group(1) else "[text](url) (use <a>)")
    if "```" in text:
        found.append("``` code fence (use <pre><code>)")
    if "#" in text and (_HEADING_RE if line_start else _HEADING_AFTER_NL_RE).search(text):
        found.append("# heading (use <h1>..<h6>)")
    for what in found:
        walk.issues.add(path, "markdown_shorthand", f"Markdown is not rendered here: {what}")
    if "docid-" in text:
        for link in find_doc_links(text):
            walk.cite(link.uri, path, check_ids=not link.bare)
            if link.bare:
                walk.report(link.written)


def _has_content(node: LexborNode) -> bool:
    child = node.first_child
    while child is not None:
        if not child.is_text_node or (child.text_content or "").strip():
            return True
        child = child.next
    return False


# A frame: node, path, depth, inside code/pre, inside div.blockquote, starts a line, and the
# text of a text node ("" otherwise: read once here, where it decides the next line start).
_Frame = tuple[LexborNode, str, int, bool, bool, bool, str]


def _child_frames(
    first: LexborNode | None, base: str, depth: int, in_code: bool, in_quote: bool
) -> list[_Frame]:
    """Frames for a node's children in reverse document order (ready for a LIFO stack)."""
    counts: dict[str, int] = {}
    frames: list[_Frame] = []
    line_start = True
    node = first
    while node is not None:
        text = ""
        if node.is_element_node:
            key = node.tag or "?"
            next_line_start = key not in INLINE
        elif node.is_text_node:
            key = "text()"
            text = node.text_content or ""
            next_line_start = (line_start and not text.strip()) or text.endswith("\n")
        else:
            key = "comment()" if node.is_comment_node else "node()"
            next_line_start = False
        index = counts.get(key, 0) + 1
        counts[key] = index
        frames.append((node, f"{base}/{key}[{index}]", depth, in_code, in_quote, line_start, text))
        line_start = next_line_start
        node = node.next
    frames.reverse()
    return frames


def _visit_element(walk: Walk, frame: _Frame) -> list[_Frame]:
    node, path, depth, in_code, in_quote, _, _ = frame
    walk.elements += 1
    if walk.elements > MAX_ELEMENTS:
        walk.issues.add(BODY, "too_complex", f"more than {MAX_ELEMENTS} elements")
        walk.stopped = True
        return []
    if depth > MAX_DEPTH:
        if not walk.too_deep:
            walk.too_deep = True
            walk.issues.add(path, "too_complex", f"elements nest deeper than {MAX_DEPTH} levels")
        return []
    tag = node.tag or "?"
    if tag not in ALLOWED_ELEMENTS:
        walk.issues.add(
            path,
            "disallowed_element",
            f"<{tag[:60]}> is not allowed (allowed: {' '.join(sorted(ALLOWED_ELEMENTS))})",
        )
        if tag in OPAQUE:
            return []
    else:
        attrs = read_attributes(node)
        check_attributes(walk, tag, path, attrs)
        if tag == "footer" and not in_quote:
            walk.issues.add(
                path,
                "footer_outside_blockquote",
                '<footer> is only allowed inside <div class="blockquote">',
            )
        if tag == "div":
            cls = attrs.get("class")
            if cls == "blockquote doc-embed" and _has_content(node):
                walk.issues.add(
                    path,
                    "doc_embed_not_empty",
                    'a <div class="blockquote doc-embed"> must be empty',
                )
            in_quote = in_quote or cls in BLOCKQUOTE_CLASSES
    return _child_frames(node.first_child, path, depth + 1, in_code or tag in CODE, in_quote)


def walk_tree(first: LexborNode | None, walk: Walk) -> None:
    """Check every node, iteratively (a 100,000-deep tree cannot reach Python's stack)."""
    stack = _child_frames(first, BODY, 1, False, False)
    while stack and not walk.stopped and not walk.issues.full:
        frame = stack.pop()
        node, path, _depth, in_code, _in_quote, line_start, text = frame
        if node.is_element_node:
            stack.extend(_visit_element(walk, frame))
        elif node.is_text_node:
            if not in_code:
                _check_text(walk, path, text, line_start)
        elif node.is_comment_node:
            walk.issues.add(path, "disallowed_element", "HTML comments are not allowed")
        else:
            walk.issues.add(path, "disallowed_element", "only elements and text are allowed")
