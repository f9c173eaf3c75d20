"""Grants: "always allow / always reject" answers, scoped to a tool and what its card named (a
program with its subcommand, an operation on a path, a host). A call a grant covers never asks
again; a scope covers exactly itself, and a scope ending in "/" what lies under it too. An
answer lasts for the session (kept with it) or for the project (kept in the store, for every
later session there, until `/grants revoke`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

import msgspec

Lasting = Literal["session", "project"]


class Grant(msgspec.Struct, frozen=True):
    tool: str
    scope: str
    verdict: Literal["allow", "reject"]
    label: str = ""  # what the card called it ("`git status`", "editing src/app.py")

    def covers(self, tool: str, scope: str) -> bool:
        if tool != self.tool:
            return False
        # Exactly what the card named: "trash /ws/tmp.txt" is neither "delete /ws/tmp.txt" nor
        # "trash /ws/tmp.txt/x" (were tmp.txt a folder one day).
        return scope == self.scope or (self.scope.endswith("/") and scope.startswith(self.scope))

    def describe(self) -> str:
        what = self.label or f"{self.tool} in {self.scope}"
        return f"always {self.verdict}: {what}"


def most_specific(grants: list[Grant], tool: str, scope: str) -> Grant | None:
    # The most specific grant wins, so "reject src/secrets" beats "allow src".
    hits = [g for g in grants if g.covers(tool, scope)]
    return max(hits, key=lambda g: len(g.scope)) if hits else None


class Grants(msgspec.Struct):
    items: list[Grant] = []

    def match(self, tool: str, scope: str) -> Grant | None:
        return most_specific(self.items, tool, scope)

    def add(self, grant: Grant) -> None:
        self.items = [g for g in self.items if (g.tool, g.scope) != (grant.tool, grant.scope)]
        self.items.append(grant)


KeepGrant = Callable[[Grant], Awaitable[None]]


class GrantBook:
    """Where a round's calls look for an "always" answer: the session's grants and the
    project's, the most specific first (a session's answer wins a tie: it is the newer word).
    A new answer goes where `lasting` says."""

    def __init__(
        self,
        session: Grants,
        project: list[Grant] | None = None,
        *,
        lasting: Lasting = "session",
        keep: KeepGrant | None = None,
    ) -> None:
        self.session = session
        self.project = list(project or [])
        self.lasting: Lasting = lasting if keep is not None else "session"
        self._keep = keep

    def match(self, tool: str, scope: str) -> tuple[Grant, Lasting] | None:
        mine = self.session.match(tool, scope)
        theirs = most_specific(self.project, tool, scope)
        if mine is not None and (theirs is None or len(mine.scope) >= len(theirs.scope)):
            return mine, "session"
        return (theirs, "project") if theirs is not None else None

    async def remember(self, grant: Grant) -> Lasting:
        if self.lasting == "project" and self._keep is not None:
            await self._keep(grant)
            self.project = [
                g for g in self.project if (g.tool, g.scope) != (grant.tool, grant.scope)
            ]
            self.project.append(grant)
            return "project"
        self.session.add(grant)
        return "session"
