"""Web tools over `ctx.web`: `web_search` and `web_fetch` (the model-facing contract of the web
tool suite: names, one argument each, guidance paragraphs and result shapes, quoted exactly),
and `fetch_local`, the raw HTTP client (any of GET/POST/PUT/DELETE, headers, body; the status
and headers in its result).

The guidance paragraphs the system prompt gives them are in tools/web_guidance.py. Provider
selection, SSRF checks and HTML rendering live behind the seam; these tools only shape
what the model reads. A call that would reach a loopback or private-network address asks the
user first: its plan checks the destination, the permission request names its `host:port`, an
"always" answer covers exactly that host and port for the session, and the call then connects to
the very addresses the plan checked (see `_PlannedTargets`). allow-all waives none of that: only
the user's own answer lets tether reach into their network.
"""

from __future__ import annotations

import contextvars
from typing import Literal, TypeVar

import msgspec

from tether.engine.events import TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolDef, ToolOutput, tool
from tether.engine.seam import Capabilities
from tether.engine.web.types import (
    FetchResult,
    HttpRequest,
    HttpResponse,
    SearchHit,
    SearchResults,
    Target,
)
from tether.errors import WebError
from tether.schemas.web import WebConfig

NO_RESULTS = "No results found."
CITE = "Cite the relevant URLs above as markdown links in your answer."
TRUNCATED = "(Content truncated. Fetch a more specific URL or section for the full text.)"
BLANK_QUERY = "Error: query must be a non-empty string"
BLANK_URL = "Error: url must be a non-empty string"
READ_ONLY_GET = "fetch_local method must be GET in a read-only context (POST/PUT/DELETE mutate)"


def capped_note(count: int) -> str:
    return f"(Showing the first {count} sources. Refine the query for more.)"


def error_text(exc: WebError) -> str:
    """What the model reads for a failed web call: the code first, for routing and retries."""
    return f"Error: {exc.code}: {exc.message}"


# --- result shapes --------------------------------------------------------------------------


def format_search(found: SearchResults) -> str:
    """`<answer>`, a blank line, `Sources:` and one line per source, the capped note, the
    citation sentence; with neither answer nor sources, exactly `No results found.`"""
    answer = found.answer.strip()
    if not answer and not found.hits:
        return NO_RESULTS
    blocks: list[str] = [answer] if answer else []
    if found.hits:
        blocks.append("\n".join(["Sources:", *(source_line(h) for h in found.hits)]))
    tail = [capped_note(len(found.hits))] if found.capped else []
    blocks.append("\n".join([*tail, CITE]))
    return "\n\n".join(blocks)


def source_line(hit: SearchHit) -> str:
    """`- [<title-or-url>](<url>)`, then ` — <snippet>` and ` (<publishedAt>)` when known."""
    url = _link_target(hit.url)
    label = _one_line(hit.title) or hit.url
    line = f"- [{_escape_label(label)}]({url})"
    snippet = _one_line(hit.snippet)
    if snippet:
        line += f" — {snippet}"
    published = _one_line(hit.published_at)
    if published:
        line += f" ({published})"
    return line


def format_fetch(page: FetchResult) -> str:
    text = f"Fetched {page.final_url} (HTTP {page.status})\n\n{page.body}"
    return f"{text}\n\n{TRUNCATED}" if page.truncated else text


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape_label(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def _link_target(url: str) -> str:
    return url.strip().replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def _text(text: str) -> ToolOutput:
    return ToolOutput(text, [TextOut(text)])


def _error(text: str) -> ToolOutput:
    """The seed's exact `Error: ...` text, as a failed call."""
    return ToolOutput(text, [TextOut(text)], is_error=True)


# --- plan -> run: the destination the user was asked about --------------------------------


class _PlannedTargets:
    """Plan-time SSRF checks handed to the same call's run.

    The pipeline plans a call, asks the user when the plan says so, then runs the call with the
    same argument object. The plan resolves and judges the destination; the run must connect to
    exactly that (a second DNS answer must not send an approved - or a public - call elsewhere).
    Keyed by the argument object's identity, holding it so the identity stays unique; calls
    that never run (rejected) age out past `LIMIT`.
    """

    LIMIT = 1024

    def __init__(self) -> None:
        self._items: dict[int, tuple[object, Target]] = {}

    def put(self, args: object, target: Target) -> None:
        while len(self._items) >= self.LIMIT:
            del self._items[next(iter(self._items))]
        self._items[id(args)] = (args, target)

    def take(self, args: object) -> Target | None:
        entry = self._items.pop(id(args), None)
        return entry[1] if entry is not None and entry[0] is args else None


_PLANNED = _PlannedTargets()
A = TypeVar("A")
_TARGET: contextvars.ContextVar[Target | None] = contextvars.ContextVar(
    "tether_web_target", default=None
)


class _PlannedTool(ToolDef[A]):
    """A ToolDef whose run sees the target its plan checked (in `_TARGET`, for this task)."""

    async def invoke(self, ctx: Capabilities, args: A) -> ToolOutput:
        token = _TARGET.set(_PLANNED.take(args))
        try:
            return await super().invoke(ctx, args)
        finally:
            _TARGET.reset(token)


def _planned(t: ToolDef[A]) -> ToolDef[A]:
    fields = {f.name: getattr(t, f.name) for f in msgspec.structs.fields(t)}
    return _PlannedTool(**fields)


def _consent_note(target: Target) -> str:
    return f"{target.reach} host {target.host_port}"


# --- web_search -----------------------------------------------------------------------------


class WebSearchArgs(ToolArgs):
    query: str


def _search_tool(max_results: int, timeout: float) -> ToolDef[WebSearchArgs]:
    @tool(
        kind="search",
        read_only=True,
        timeout=timeout,
        name="web_search",
        timeout_key="[web] search_timeout_ms",
    )
    async def web_search(ctx: Capabilities, args: WebSearchArgs) -> ToolOutput:
        """Search the web. Returns an optional answer plus a list of source URLs, with snippets
        and dates when the search provider has them.

        Args:
            query: What to search for.
        """
        query = args.query
        if not query.strip():
            return _error(BLANK_QUERY)
        try:
            found = await ctx.web.search(query.strip(), max_results=max_results)
        except WebError as exc:
            return _error(error_text(exc))
        return _text(format_search(found))

    @web_search.planned_by
    async def _plan(ctx: Capabilities, args: WebSearchArgs, mode: str) -> CallPlan:
        query = _one_line(args.query)
        return CallPlan(title=f"Search the web: {_clip(query)}", kind="search", scope=query)

    return web_search


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# --- web_fetch ------------------------------------------------------------------------------


class WebFetchArgs(ToolArgs):
    url: str


def _fetch_tool(timeout: float) -> ToolDef[WebFetchArgs]:
    @tool(
        kind="fetch",
        read_only=True,
        timeout=timeout,
        name="web_fetch",
        timeout_key="[web] fetch_timeout_ms",
    )
    async def web_fetch(ctx: Capabilities, args: WebFetchArgs) -> ToolOutput:
        """Retrieve the content of a specific HTTP(S) URL: HTML comes back as Markdown, text as
        it is. A non-2xx status is reported with the body, not as an error. Loopback and
        local-network addresses are fetched only after the user allows them.

        Args:
            url: The absolute http:// or https:// URL to retrieve.
        """
        url = args.url
        if not url.strip():
            return _error(BLANK_URL)
        try:
            page = await ctx.web.fetch(url.strip(), target=_TARGET.get())
        except WebError as exc:
            return _error(error_text(exc))
        text = format_fetch(page)
        card = f"Fetched {page.final_url} (HTTP {page.status}): {len(page.body)} characters"
        return ToolOutput(text, [TextOut(card)], raw_output={"status": page.status})

    @web_fetch.planned_by
    async def _plan(ctx: Capabilities, args: WebFetchArgs, mode: str) -> CallPlan:
        url = args.url.strip()
        if not url:
            return CallPlan(title="Fetch (no URL)", kind="fetch")
        try:
            target = await ctx.web.fetch_target(url)
        except WebError:
            target = None  # the run reports why, in the tool's own words
        if target is None:
            return CallPlan(title=f"Fetch {url}", kind="fetch", scope=url)
        _PLANNED.put(args, target)
        if not target.needs_consent:
            return CallPlan(title=f"Fetch {url}", kind="fetch", scope=target.host_port)
        return CallPlan(
            title=f"Fetch {url} ({_consent_note(target)})",
            kind="fetch",
            confirm=True,
            asks_in_every_mode=True,
            scope=target.host_port,
            target=url,  # a round of fetches is titled "Fetch a, b", not "Fetch Fetch a"
        )

    return _planned(web_fetch)


# --- fetch_local ----------------------------------------------------------------------------

Method = Literal["GET", "POST", "PUT", "DELETE"]


class FetchLocalArgs(ToolArgs):
    url: str
    method: Method = "GET"
    headers: dict[str, str] | None = None
    body: str | None = None
    user_agent: str | None = None


def _fetch_local_tool(timeout: float) -> ToolDef[FetchLocalArgs]:
    @tool(
        kind="fetch",
        read_only=False,
        timeout=timeout,
        name="fetch_local",
        timeout_key="[web] fetch_timeout_ms",
    )
    async def fetch_local(ctx: Capabilities, args: FetchLocalArgs) -> ToolOutput:
        """Send one raw HTTP request from this machine and read the status, the response
        headers and the body. For APIs, other methods than GET, localhost or LAN services, and
        inspecting headers or redirects; use web_fetch to read a page. A GET follows
        redirects. Methods other than GET, cleartext http:// URLs and loopback or
        local-network hosts ask the user first.

        Args:
            url: The absolute http:// or https:// URL.
            method: The HTTP method.
            headers: Request headers, name to value.
            body: The request body, sent as UTF-8 text.
            user_agent: The User-Agent to send, when the server expects a particular client
                (otherwise a User-Agent header, else tether's own).
        """
        if not args.url.strip():
            return _error(BLANK_URL)
        request = HttpRequest(
            method=args.method,
            url=args.url.strip(),
            headers=request_headers(args),
            body=args.body.encode("utf-8") if args.body is not None else None,
        )
        resp = await ctx.web.http(request, target=_TARGET.get())  # WebError: error [CODE]
        text = format_http(request, resp)
        card = f"{request.method} {resp.url} -> HTTP {resp.status} {resp.reason}".rstrip()
        return ToolOutput(text, [TextOut(card)], raw_output={"status": resp.status})

    @fetch_local.planned_by
    async def _plan(ctx: Capabilities, args: FetchLocalArgs, mode: str) -> CallPlan:
        url, method = args.url.strip(), args.method
        title = f"{method} {url or '(no URL)'}"
        if not url:
            return CallPlan(title=title, kind="fetch")
        try:
            target = await ctx.web.http_target(url)
        except WebError:
            return CallPlan(title=title, kind="fetch", scope=url)  # the run reports why
        _PLANNED.put(args, target)
        reasons = [_consent_note(target)] if target.needs_consent else []
        if url.lower().startswith("http://"):
            reasons.append("cleartext HTTP")
        scope = target.host_port if method == "GET" else f"{method} {target.host_port}"
        return CallPlan(
            title=f"{title} ({', '.join(reasons)})" if reasons else title,
            kind="fetch",
            confirm=bool(reasons) or method != "GET",
            asks_in_every_mode=target.needs_consent,
            scope=scope,
            target=title,
        )

    fetch_local.read_only_calls = _get_only
    return _planned(fetch_local)


def _get_only(args: FetchLocalArgs) -> str | None:
    """In read-only mode (and /btw) a GET reads; the other methods change things."""
    return None if args.method == "GET" else READ_ONLY_GET


def request_headers(args: FetchLocalArgs) -> dict[str, str]:
    """The caller's headers; `user_agent`, when given, replaces any User-Agent among them (and
    either one replaces tether's default)."""
    headers = dict(args.headers or {})
    if args.user_agent is not None and args.user_agent.strip():
        headers = {k: v for k, v in headers.items() if k.lower() != "user-agent"}
        headers["User-Agent"] = args.user_agent.strip()
    return headers


def format_http(request: HttpRequest, resp: HttpResponse) -> str:
    lines = [f"HTTP {resp.status} {resp.reason}".rstrip(), f"URL: {resp.url}"]
    if resp.redirects:
        lines.append("Redirected from: " + " -> ".join(resp.redirects))
    lines.append("")
    lines.append("Headers:")
    lines.extend(f"{name}: {value}" for name, value in resp.headers)
    lines.append("")
    kind = resp.media_type or "no content type"
    if resp.size == 0:
        lines.append("Body: empty")
    elif resp.binary:
        lines.append(f"Body: {resp.size} bytes of {kind} (binary, not shown)")
    else:
        lines.append(f"Body ({resp.size} bytes, {kind}):")
        lines.append(resp.body)
        if resp.truncated:
            lines.append(f"(Body truncated at {len(resp.body)} characters.)")
    return "\n".join(lines)


# --- the catalog ----------------------------------------------------------------------------


def web_tools(config: WebConfig | None = None) -> list[ToolDef]:
    """The web tools the configuration enables, each with its configured time budget."""
    config = config or WebConfig()
    tools: list[ToolDef] = []
    if config.search:
        tools.append(_search_tool(config.search_max_results, config.search_timeout_ms / 1000))
    if config.fetch:
        tools.append(_fetch_tool(config.fetch_timeout_ms / 1000))
    if config.fetch_local:
        tools.append(_fetch_local_tool(config.fetch_timeout_ms / 1000))
    return tools
