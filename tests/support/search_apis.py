"""Loopback stand-ins for Exa's and Perplexity's search APIs, as their references document them:
the auth header, the request body's required fields, types and allowed values checked as
strictly as the real services do (an unknown field is refused too), errors in each service's
own shape. A request that passes is recorded and answered with the reply the test set.

    with ExaStandIn("key") as exa:
        exa.reply = {"requestId": "r1", "results": [...]}
        exa.base_url  # http://127.0.0.1:PORT
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.web_servers import Page, PageServer, Seen

Body = dict[str, Any]


def _json(status: int, doc: Any) -> Page:
    return Page(json.dumps(doc).encode(), status=status, type="application/json")


def _int_in(value: Any, low: int, high: int | None = None) -> bool:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
    return ok and (high is None or value <= high)


class _StandIn(PageServer):
    path = "/"

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.reply: Any = {}
        self.accepted: list[Body] = []  # the bodies that passed every check
        self.route(self.path, self._serve)

    @property
    def base_url(self) -> str:
        return self.url("").rstrip("/")

    def __enter__(self) -> _StandIn:
        super().__enter__()
        return self

    def _serve(self, seen: Seen) -> Page:
        if seen.method != "POST":
            return self._error(405, f"{seen.method} is not allowed")
        if not self._authorized(seen.headers):
            return self._error(401, "Invalid or missing API key")
        if not seen.headers.get("content-type", "").startswith("application/json"):
            return self._error(400, "Content-Type must be application/json")
        try:
            body = json.loads(seen.body)
        except ValueError:
            return self._error(400, "the body is not JSON")
        problem = self.problem(body) if isinstance(body, dict) else "the body must be an object"
        if problem is not None:
            return self._error(400, problem)
        self.accepted.append(body)
        return _json(200, self.reply)

    def _authorized(self, headers: dict[str, str]) -> bool:
        return headers.get("authorization") == f"Bearer {self.key}"

    def _error(self, status: int, message: str) -> Page:
        raise NotImplementedError

    def problem(self, body: Body) -> str | None:
        raise NotImplementedError


# --- Exa: POST /search (https://exa.ai/docs/reference/search) -----------------------------------

_EXA_FIELDS = {
    "query",
    "type",
    "category",
    "numResults",
    "includeDomains",
    "excludeDomains",
    "startPublishedDate",
    "endPublishedDate",
    "startCrawlDate",
    "endCrawlDate",
    "includeText",
    "excludeText",
    "userLocation",
    "moderation",
    "contents",
}
_EXA_TYPES = {"auto", "neural", "keyword", "fast", "deep"}
_EXA_CONTENTS = {"text", "highlights", "summary", "livecrawl", "livecrawlTimeout", "subpages"}
_EXA_HIGHLIGHTS = {"numSentences", "highlightsPerUrl", "query", "maxCharacters"}


class ExaStandIn(_StandIn):
    path = "/search"

    def _authorized(self, headers: dict[str, str]) -> bool:
        # Exa takes the key in x-api-key (its reference) or as a bearer token.
        return headers.get("x-api-key") == self.key or super()._authorized(headers)

    def _error(self, status: int, message: str) -> Page:
        return _json(status, {"requestId": "req-err", "error": message})

    def problem(self, body: Body) -> str | None:
        unknown = sorted(set(body) - _EXA_FIELDS)
        if unknown:
            return f"Unrecognized key(s) in object: {', '.join(unknown)}"
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return "query: Required, a non-empty string"
        if "type" in body and body["type"] not in _EXA_TYPES:
            return f"type: Invalid enum value {body['type']!r}"
        if "numResults" in body and not _int_in(body["numResults"], 1, 100):
            return "numResults: Expected an integer between 1 and 100"
        return _exa_contents(body.get("contents"))


def _exa_contents(contents: Any) -> str | None:
    if contents is None:
        return None
    if not isinstance(contents, dict):
        return "contents: Expected object"
    unknown = sorted(set(contents) - _EXA_CONTENTS)
    if unknown:
        return f"contents: Unrecognized key(s) in object: {', '.join(unknown)}"
    highlights = contents.get("highlights")
    if highlights is None or isinstance(highlights, bool):
        return None
    if not isinstance(highlights, dict):
        return "contents.highlights: Expected boolean or object"
    unknown = sorted(set(highlights) - _EXA_HIGHLIGHTS)
    if unknown:
        return f"contents.highlights: Unrecognized key(s) in object: {', '.join(unknown)}"
    for name in ("numSentences", "highlightsPerUrl", "maxCharacters"):
        if name in highlights and not _int_in(highlights[name], 1):
            return f"contents.highlights.{name}: Expected a positive integer"
    return None


# --- Perplexity: POST /chat/completions (https://docs.perplexity.ai/api-reference) --------------

_PPLX_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stream",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
    "search_mode",
    "search_domain_filter",
    "search_recency_filter",
    "search_after_date_filter",
    "search_before_date_filter",
    "return_images",
    "return_related_questions",
    "web_search_options",
    "reasoning_effort",
}
_PPLX_MODELS = {
    "sonar",
    "sonar-pro",
    "sonar-reasoning",
    "sonar-reasoning-pro",
    "sonar-deep-research",
}
_PPLX_RECENCY = {"hour", "day", "week", "month", "year"}


class PerplexityStandIn(_StandIn):
    path = "/chat/completions"

    def _error(self, status: int, message: str) -> Page:
        kind = "authentication_error" if status == 401 else "invalid_request_error"
        return _json(status, {"error": {"message": message, "type": kind, "code": status}})

    def problem(self, body: Body) -> str | None:
        unknown = sorted(set(body) - _PPLX_FIELDS)
        if unknown:
            return f"Unrecognized request argument supplied: {', '.join(unknown)}"
        if body.get("model") not in _PPLX_MODELS:
            return f"Invalid model {body.get('model')!r}. Permitted models: {sorted(_PPLX_MODELS)}"
        if "max_tokens" in body and not _int_in(body["max_tokens"], 1):
            return "max_tokens must be a positive integer"
        if "search_recency_filter" in body and body["search_recency_filter"] not in _PPLX_RECENCY:
            return "search_recency_filter must be one of hour, day, week, month, year"
        return _pplx_messages(body.get("messages"))


def _pplx_messages(messages: Any) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: Field required, a non-empty list"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or set(m) - {"role", "content"}:
            return f"messages[{i}]: expected an object with role and content"
        if m.get("role") not in ("system", "user", "assistant"):
            return f"messages[{i}].role must be system, user or assistant"
        if not isinstance(m.get("content"), str):
            return f"messages[{i}].content must be a string"
    if messages[-1]["role"] != "user":
        return "Last message must have role `user`"
    return None
