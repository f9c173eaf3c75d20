"""What the system prompt says of the web tools the `[web]` table enables (the paragraphs of
the web tool suite's contract, quoted exactly): apart from the tools themselves
(tools/web_tools.py), so a start writes the system prompt without loading them."""

from __future__ import annotations

from tether.schemas.web import WebConfig

WEB_SEARCH_GUIDANCE = (
    "Use the web_search tool to discover current information on the web. It returns an "
    "optional answer plus a list of source URLs. Follow up with web_fetch when you need the "
    "full content of a specific result, and cite the relevant URLs as markdown links."
)
WEB_FETCH_GUIDANCE = (
    "Use the web_fetch tool to retrieve the content of a specific HTTP(S) URL (for example a "
    "result from web_search). It returns the page content decoded to text. Cite the URL as a "
    "markdown link when you use its content."
)
# The system prompt's web section: both paragraphs, verbatim (see `web_guidance`).
WEB_GUIDANCE = f"{WEB_SEARCH_GUIDANCE}\n\n{WEB_FETCH_GUIDANCE}"


def web_guidance(config: WebConfig | None = None) -> str:
    """The guidance paragraphs of the enabled tools, for the system prompt."""
    config = config or WebConfig()
    parts = [WEB_SEARCH_GUIDANCE] if config.search else []
    parts += [WEB_FETCH_GUIDANCE] if config.fetch else []
    return "\n\n".join(parts)
