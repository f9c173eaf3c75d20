"""HTML to Markdown: the tree `html_tree` parses, rendered as Markdown: `#` headings,
lists (nested, numbered), `[links](absolute URLs)`, `**bold**`, `*emphasis*`, `` `code` ``,
fenced code blocks with their language, block quotes and Markdown tables. Scripts, styles,
forms' controls, navigation chrome (`nav`, `aside`, `footer`, a page-level `header`, ARIA
navigation) and hidden elements are dropped.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import urljoin

from tether.engine.web.html_tree import Node, parse
from tether.errors import Stopped

_DROP = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "math",
        "iframe",
        "object",
        "canvas",
        "nav",
        "aside",
        "footer",
        "dialog",
        "button",
        "select",
        "textarea",
        "input",
        "label",
        "head",
    ]
)
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "menu", "menubar"})
_BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "details",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "ul",
        "body",
        "html",
        "li",
        "dd",
        "dt",
        "tr",
        "td",
        "th",
        "thead",
        "tbody",
        "tfoot",
        "caption",
        "summary",
        "center",
        "legend",
    ]
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_WS = re.compile(r"\s+")
_BR = "\ue000"  # a <br> while inline text is collected: whitespace collapsing keeps it


def html_to_markdown(html: str, base_url: str = "", stop: threading.Event | None = None) -> str:
    """The page as Markdown; Stopped when `stop` is set meanwhile (from another thread)."""
    root, title = parse(html, stop)
    body = _Renderer(base_url, stop).blocks(root)
    text = "\n\n".join(b for b in body if b.strip())
    if title and not re.search(r"^# ", text, re.MULTILINE):
        text = f"# {title}\n\n{text}" if text else f"# {title}"
    return _tidy(text)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _dropped(node: Node, in_content: bool) -> bool:
    if node.tag in _DROP or (node.tag == "header" and not in_content):
        return True
    attrs = node.attrs
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    if attrs.get("role") in _DROP_ROLES:
        return True
    return "display:none" in attrs.get("style", "").replace(" ", "").lower()


class _Renderer:
    def __init__(self, base_url: str, stop: threading.Event | None) -> None:
        self.base = base_url
        self.stop = stop
        self.in_content = 0  # inside <main> or <article>: a <header> there is the article's
        self.in_link = False  # a link inside a link is its text (browsers never nest them)

    # --- blocks ----------------------------------------------------------------------------

    def blocks(self, node: Node) -> list[str]:
        """Render a container's children as Markdown blocks (paragraph-sized strings)."""
        if self.stop is not None and self.stop.is_set():
            raise Stopped
        out: list[str] = []
        run: list[str] = []

        def flush() -> None:
            text = _WS.sub(" ", "".join(run)).strip().strip(_BR).strip()
            text = re.sub(f" ?{_BR} ?", "\n", text)
            if text:
                out.append(text)
            run.clear()

        for child in node.children:
            if isinstance(child, str):
                run.append(child)
            elif _dropped(child, self.in_content > 0):
                continue
            elif child.tag in _BLOCK:
                flush()
                out.extend(self.block(child))
            else:
                run.append(self.inline(child))
        flush()
        return out

    def block(self, node: Node) -> list[str]:
        tag = node.tag
        if tag in _HEADINGS:
            text = self._line(node)
            return [f"{'#' * _HEADINGS[tag]} {text}"] if text else []
        if tag in ("ul", "ol"):
            return [self.list(node)] if self._items(node) else []
        if tag == "pre":
            return [self.code_block(node)]
        if tag == "blockquote":
            inner = "\n\n".join(self.blocks(node))
            return ["\n".join(f"> {line}".rstrip() for line in inner.splitlines())] if inner else []
        if tag == "table":
            return self.table(node)
        if tag == "hr":
            return ["---"]
        if tag == "dt":
            text = self._line(node)
            return [f"**{text}**"] if text else []
        if tag == "dd":
            return ["\n".join(f": {line}" for line in "\n\n".join(self.blocks(node)).splitlines())]
        if tag in ("main", "article"):
            self.in_content += 1
            try:
                return self.blocks(node)
            finally:
                self.in_content -= 1
        return self.blocks(node)

    def _items(self, node: Node) -> list[Node]:
        return [c for c in node.children if isinstance(c, Node) and c.tag == "li"]

    def list(self, node: Node) -> str:
        ordered = node.tag == "ol"
        start = _int(node.attrs.get("start"), 1)
        lines: list[str] = []
        for n, item in enumerate(self._items(node)):
            marker = f"{start + n}. " if ordered else "- "
            body = "\n".join(self.blocks(item)) or ""
            pad = " " * len(marker)
            for i, line in enumerate(body.splitlines() or [""]):
                lines.append(f"{marker}{line}" if i == 0 else (f"{pad}{line}" if line else ""))
        return "\n".join(lines)

    def code_block(self, node: Node) -> str:
        code = node.text().strip("\n")
        lang = _language(node) or next(
            (_language(c) for c in node.children if isinstance(c, Node) and c.tag == "code"), ""
        )
        fence = "```"
        while fence in code:
            fence += "`"
        return f"{fence}{lang}\n{code}\n{fence}"

    def table(self, node: Node) -> list[str]:
        rows = _rows(node)
        if node.find("table") is not None or (len(rows) < 2 and all(len(r) <= 1 for r in rows)):
            return self.blocks(node)  # a layout table: its content, not a grid
        grid: list[list[str]] = []
        for row in rows:
            cells: list[str] = []
            for cell in row:
                text = self._line(cell).replace("|", "\\|")
                cells.extend([text] + [""] * (_int(cell.attrs.get("colspan"), 1) - 1))
            grid.append(cells)
        width = max(len(r) for r in grid) if grid else 0
        if width == 0:
            return []
        grid = [r + [""] * (width - len(r)) for r in grid]
        lines = [_row(grid[0]), _row(["---"] * width), *(_row(r) for r in grid[1:])]
        caption = node.find("caption")
        return [*([self._line(caption)] if caption else []), "\n".join(lines)]

    # --- inline ----------------------------------------------------------------------------

    def _line(self, node: Node) -> str:
        return _WS.sub(" ", self.inline_children(node).replace(_BR, " ")).strip()

    def inline_children(self, node: Node) -> str:
        parts: list[str] = []
        for c in node.children:
            if isinstance(c, str):
                parts.append(c)
            elif not _dropped(c, self.in_content > 0):
                parts.append(self.inline(c))
        return "".join(parts)

    def inline(self, node: Node) -> str:
        if self.stop is not None and self.stop.is_set():
            raise Stopped
        tag = node.tag
        if tag == "br":
            return _BR
        if tag == "img":
            alt = _WS.sub(" ", node.attrs.get("alt", "")).strip()
            src = node.attrs.get("src", "")
            return f"![{alt}]({self._url(src)})" if alt and src else alt
        if tag == "a" and not self.in_link:
            self.in_link = True
            try:
                return self.link(node, self.inline_children(node))
            finally:
                self.in_link = False
        inner = self.inline_children(node)
        if tag in ("strong", "b"):
            return _wrap(inner, "**")
        if tag in ("em", "i"):
            return _wrap(inner, "*")
        if tag in ("del", "s", "strike"):
            return _wrap(inner, "~~")
        if tag in ("code", "kbd", "samp", "tt"):
            return _code_span(inner)
        if tag in _BLOCK:  # a block inside inline context (a <p> in a table cell)
            return f" {inner} "
        return inner

    def link(self, node: Node, inner: str) -> str:
        text = _WS.sub(" ", inner).strip()
        href = node.attrs.get("href", "").strip()
        if not href or href.startswith(("#", "javascript:", "data:")):
            return inner
        url = self._url(href)
        return f"[{text or url}]({url})"

    def _url(self, href: str) -> str:
        url = urljoin(self.base, href) if self.base else href
        return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def _rows(table: Node) -> list[list[Node]]:
    rows: list[list[Node]] = []
    for c in table.children:
        if not isinstance(c, Node):
            continue
        if c.tag == "tr":
            rows.append([d for d in c.children if isinstance(d, Node) and d.tag in ("td", "th")])
        elif c.tag in ("thead", "tbody", "tfoot"):
            rows.extend(_rows(c))
    return [r for r in rows if r]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _wrap(inner: str, mark: str) -> str:
    text = inner.strip()
    if not text:
        return inner
    lead = " " if inner[:1].isspace() else ""
    trail = " " if inner[-1:].isspace() else ""
    return f"{lead}{mark}{text}{mark}{trail}"


def _code_span(inner: str) -> str:
    text = _WS.sub(" ", inner).strip()
    if not text:
        return inner
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _language(node: Node) -> str:
    for cls in node.attrs.get("class", "").split():
        for prefix in ("language-", "lang-"):
            if cls.startswith(prefix):
                return cls[len(prefix) :]
    return ""


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value else default
    except ValueError:
        return default
