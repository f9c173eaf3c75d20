"""An HTML document as a small tree of `Node`s, from libxml2's HTML parser (through `lxml`).

libxml2 tokenizes and repairs in C: it closes what browsers close (an unclosed `<p>` or `<li>`,
cells without `</td>`) and drops stray end tags. Like every HTML parser (lexbor's too) it looks
through the open elements at each tag, so markup nested a hundred thousand deep (`<div>` or
`<em></b>` repeated) is quadratic; browsers cap the nesting, and so does `bound_nesting`: a
linear pass that leaves out the start tags nested deeper than `NESTING` before libxml2 sees
them. The standard library's `html.parser` (used before) was quadratic on `</a` repeated too.

lexbor (selectolax) parses as fast, but an HTML5 tree builder re-opens formatting elements at
every paragraph: 5 MB of `<p>x` after a few unclosed `<b>`s became 21 million nodes and 7.6 GB,
in one C call that cannot be stopped. libxml2 builds no such copies, and is fed in pieces.

libxml2's events build plain `Node`s for the Markdown renderer (libxml2's own tree stops at 2048
levels); markup nested deeper than `MAX_DEPTH` goes into the deepest element kept (rendering
recurses). Between pieces the parse looks at `stop`, an event another thread sets when the fetch
timed out, and ends with `Stopped`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from tether.errors import Stopped

MAX_DEPTH = 256
NESTING = 200  # elements open at once (of those that need an end tag), at most
FEED_BYTES = 64 * 1024  # fed to the parser between looks at `stop`
_WS = re.compile(r"\s+")


@dataclass
class Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict[str, str])
    children: list[Node | str] = field(default_factory=list["Node | str"])

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find(self, tag: str) -> Node | None:
        for c in self.children:
            if isinstance(c, Node):
                if c.tag == tag:
                    return c
                found = c.find(tag)
                if found is not None:
                    return found
        return None


def parse(html: str, stop: threading.Event | None = None) -> tuple[Node, str]:
    """The document as a tree (`#root`), and its `<title>`."""
    import lxml.etree  # C extension: loaded by the first fetch of a page

    builder = _Builder()
    parser = lxml.etree.HTMLParser(target=builder, encoding="utf-8")
    data = bound_nesting(html).encode("utf-8", "replace")
    for at in range(0, len(data), FEED_BYTES):
        if stop is not None and stop.is_set():
            raise Stopped
        parser.feed(data[at : at + FEED_BYTES])
    if data:
        parser.close()
    return builder.root, _WS.sub(" ", "".join(builder.title)).strip()


class _Builder:
    """libxml2's parser target: its (balanced) start, end and text events as `Node`s."""

    def __init__(self) -> None:
        self.root = Node("#root")
        self.stack: list[Node] = [self.root]
        self.beyond = 0  # open elements deeper than MAX_DEPTH, not on the stack
        self.title: list[str] = []
        self._in_title = False

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        if tag == "title":
            self._in_title = True
            return
        node = Node(tag, dict(attrib))
        self.stack[-1].children.append(node)
        if len(self.stack) <= MAX_DEPTH:
            self.stack.append(node)
        else:
            self.beyond += 1

    def end(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif self.beyond:
            self.beyond -= 1
        elif len(self.stack) > 1:
            self.stack.pop()

    def data(self, text: str) -> None:
        if self._in_title:
            self.title.append(text)
        else:
            self.stack[-1].children.append(text)

    def close(self) -> Node:
        return self.root


# Comments and the elements whose content is text (a `<div>` in a script is no tag), or a tag:
# its name, then up to 1 KB of attributes. Bounded, and nothing is looked at twice: linear.
_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|iframe|noembed|noframes)\b.*?(?:</\1\s*>|\Z)"
    r"|<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]{0,1024}>?",
    re.DOTALL | re.IGNORECASE,
)
# Elements a later tag closes by itself (`<p>`, `<li>`, ...) or that never have content: they
# do not nest, so they are not counted.
_UNCOUNTED = frozenset(
    [
        "p",
        "li",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "option",
        "optgroup",
        "thead",
        "tbody",
        "tfoot",
        "colgroup",
        "caption",
        "rb",
        "rt",
        "rp",
        "html",
        "head",
        "body",
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)


def bound_nesting(html: str) -> str:
    """`html` without the start tags that would open more than NESTING elements at once.

    An end tag closes the nearest open element of its name and what was opened after it; an
    end tag of no open element is ignored, as browsers ignore it. Each element is opened and
    closed once, so the pass is linear."""
    open_tags: list[str] = []
    open_count: dict[str, int] = {}
    kept: list[str] = []
    kept_from = 0
    for m in _TOKEN.finditer(html):
        name = m.group(3)
        if name is None:
            continue  # a comment or a raw-text element
        name = name.lower()
        if name in _UNCOUNTED:
            continue
        if m.group(2):
            if open_count.get(name):
                while True:
                    closed = open_tags.pop()
                    open_count[closed] -= 1
                    if closed == name:
                        break
        elif m.group(0).endswith("/>") and (open_count.get("svg") or open_count.get("math")):
            continue  # SVG and MathML elements close themselves (an HTML `<div/>` does not)
        elif len(open_tags) < NESTING:
            open_tags.append(name)
            open_count[name] = open_count.get(name, 0) + 1
        else:
            kept.append(html[kept_from : m.start()])
            kept_from = m.end()
    if not kept:
        return html
    kept.append(html[kept_from:])
    return "".join(kept)
