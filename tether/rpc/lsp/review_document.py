"""An approval question's diff as a document the client can open before it decides
(`window/showDocument`): `review-N.diff` in the session's private spill directory, a new name for
each question, so an editor that keeps a file it opened once never shows an older diff under it."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio

from tether.rpc.lsp.transcript_document import replace_private

log = logging.getLogger("tether.lsp")


class ReviewDocuments:
    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._count: int | None = None  # the last number used

    async def write(self, text: str) -> Path | None:
        """A new review document holding `text`; None when it could not be written."""
        try:
            return await anyio.to_thread.run_sync(self._write, text)
        except OSError as exc:
            log.warning("could not write a review document in %s: %s", self._dir, exc)
            return None

    def _write(self, text: str) -> Path:
        if self._count is None:  # numbers go on from any the session's directory holds
            taken = [p.stem.removeprefix("review-") for p in self._dir.glob("review-*.diff")]
            self._count = max((int(n) for n in taken if n.isdigit()), default=0)
        self._count += 1
        path = self._dir / f"review-{self._count}.diff"
        replace_private(path, text)
        return path
