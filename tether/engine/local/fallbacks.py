"""What a session gets where nothing can serve a seam: approvals decided by a policy (`--yes`,
`--no`, tests), no questions, no web."""

from __future__ import annotations

from tether.engine.seam import AskAnswer, AskField, ConfirmDecision, ConfirmRequest, RoundCard
from tether.engine.web.types import FetchResult, HttpRequest, HttpResponse, SearchResults, Target
from tether.errors import SeamError, WebError


class PolicyApproval:
    """Answers every confirm the same way: for headless runs (`--yes`) and tests."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow

    async def confirm(
        self, batch: list[ConfirmRequest], card: RoundCard | None = None
    ) -> list[ConfirmDecision]:
        verdict = "allow" if self.allow else "reject"
        return [ConfirmDecision(verdict, by="policy") for _ in batch]


class NoAsk:
    async def ask(
        self, question: str, options: list[str], fields: list[AskField], call_id: str | None
    ) -> AskAnswer:
        raise SeamError("ASK_UNAVAILABLE", "this client cannot ask the user questions")


class NoWeb:
    """No web access: every operation is WEB_PROVIDER_UNAVAILABLE (the tools stay offered)."""

    def _unavailable(self, what: str) -> WebError:
        return WebError("WEB_PROVIDER_UNAVAILABLE", f"no web {what} provider is configured")

    async def search(self, query: str, *, max_results: int) -> SearchResults:
        raise self._unavailable("search")

    async def fetch(self, url: str, *, target: Target | None = None) -> FetchResult:
        raise self._unavailable("fetch")

    async def fetch_target(self, url: str) -> Target | None:
        return None

    async def http_target(self, url: str) -> Target:
        raise self._unavailable("HTTP")

    async def http(self, request: HttpRequest, *, target: Target | None = None) -> HttpResponse:
        raise self._unavailable("HTTP")
