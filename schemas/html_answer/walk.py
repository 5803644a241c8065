"""The tree walk: every node of the parsed fragment checked, iteratively (no recursion limit
can be reached), each finding at its path (see the package docstring)."""

from __future__ import annotations

import re2
from selectolax.lexbor import LexborNode

from schemas.html_answer.attributes import check_attributes, read_attributes
from schemas.html_answer.codes import (
    DISALLOWED_ELEMENT,
    DOC_EMBED_NOT_EMPTY,
    FOOTER_OUTSIDE_BLOCKQUOTE,
    MARKDOWN_SHORTHAND,
    TOO_COMPLEX,
)
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
from schemas.text_rules import control_character_issues, find_control
from schemas.uris import find_doc_links

_BOLD_STAR_RE = re2.compile(r"\*\*[^*\s](?:[^*\n]*[^*\s])?\*\*")
_BOLD_UNDER_RE = re2.compile(r"(?:^|[^A-Za-z0-9_])__[^_\s](?:[^_\n]*[^_\s])?__(?:$|[^A-Za-z0-9_])")
_LINK_RE = re2.compile(r"(!?)\[[^\[\]\n]*\]\([^()\n]*\)")
_HEADING_RE = re2.compile(r"(?:^|\n)[ \t]*#{1,6}[ \t]")
_HEADING_AFTER_NL_RE = re2.compile(r"\n[ \t]*#{1,6}[ \t]")


def _check_text(walk: Walk, path: str, text: str, line_start: bool) -> None:
    # Cheap substring tests first: the RE2 wrapper costs microseconds per call.
    found: list[str] = []  # MARKDOWN_SHORTHAND's forms
    if ("**" in text and _BOLD_STAR_RE.search(text)) or (
        "__" in text and _BOLD_UNDER_RE.search(text)
    ):
        found.append("bold")
    if "](" in text:
        match = _LINK_RE.search(text)
        if match is not None:
            found.append("image" if match.group(1) else "link")
    if "```" in text:
        found.append("fence")
    if "#" in text and (_HEADING_RE if line_start else _HEADING_AFTER_NL_RE).search(text):
        found.append("heading")
    for form in found:
        walk.issues.add(MARKDOWN_SHORTHAND.issue(path, form))
    if "docid-" in text:
        for link in find_doc_links(text):
            walk.cite(link.uri, path, check_ids=not link.bare)
            if link.bare:
                walk.report(link.written)


def _check_controls(walk: Walk, path: str, text: str) -> None:
    """The shared rule for control and bidi characters, on text as the parser decoded it
    (`&#x202e;` is U+202E here): `control_character` at `path[index]`."""
    if find_control(text) is not None:
        for issue in control_character_issues(text, path):
            walk.issues.add(issue)


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
        walk.issues.add(TOO_COMPLEX.issue(BODY, limit=MAX_ELEMENTS))
        walk.stopped = True
        return []
    if depth > MAX_DEPTH:
        if not walk.too_deep:
            walk.too_deep = True
            walk.issues.add(TOO_COMPLEX.issue(path, "depth", limit=MAX_DEPTH))
        return []
    tag = node.tag or "?"
    if tag not in ALLOWED_ELEMENTS:
        allowed = " ".join(sorted(ALLOWED_ELEMENTS))
        walk.issues.add(DISALLOWED_ELEMENT.issue(path, tag=tag[:60], allowed=allowed))
        if tag in OPAQUE:
            return []
    else:
        attrs = read_attributes(node)
        check_attributes(walk, tag, path, attrs)
        for name, value in attrs.items():
            _check_controls(walk, f"{path}@{name[:60]}", value)
        if tag == "footer" and not in_quote:
            walk.issues.add(FOOTER_OUTSIDE_BLOCKQUOTE.issue(path))
        if tag == "div":
            cls = attrs.get("class")
            if cls == "blockquote doc-embed" and _has_content(node):
                walk.issues.add(DOC_EMBED_NOT_EMPTY.issue(path))
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
            _check_controls(walk, path, text)
            if not in_code:
                _check_text(walk, path, text, line_start)
        elif node.is_comment_node:
            walk.issues.add(DISALLOWED_ELEMENT.issue(path, "comment"))
        else:
            walk.issues.add(DISALLOWED_ELEMENT.issue(path, "node"))
