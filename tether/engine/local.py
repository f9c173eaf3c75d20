"""Local implementations of the seam, used when the client offers nothing better."""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio

from tether.engine.local_fs import BINARY_SNIFF_BYTES as BINARY_SNIFF_BYTES
from tether.engine.local_fs import LocalFileSystem as LocalFileSystem
from tether.engine.local_fs import decode_text as decode_text
from tether.engine.private import private_dir
from tether.engine.process import LocalTerminal as LocalTerminal  # its home; kept importable here
from tether.engine.seam import (
    AskAnswer,
    AskField,
    ConfirmDecision,
    ConfirmRequest,
    FetchResult,
    HttpRequest,
    HttpResponse,
    RoundCard,
    SeamError,
    SearchResults,
    Target,
    WebError,
)


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


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class LocalSpill:
    """Session-scoped spill files: a 0700 directory, owner-only files, traversal-safe names."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    async def save(self, name: str, text: str) -> Path:
        return await anyio.to_thread.run_sync(self._save, name, text)

    def _save(self, name: str, text: str) -> Path:
        private_dir(self.directory.parent)  # the spill root: other sessions' files are there
        private_dir(self.directory)
        stem = _SAFE_NAME.sub("_", name).strip("._") or "result"
        for n in range(1000):
            path = self.directory / (f"{stem}.txt" if n == 0 else f"{stem}-{n}.txt")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            return path
        raise SeamError("SPILL_FAILED", f"could not create a spill file for {name}")
