"""Session grants: "always allow / always reject" answers, scoped to a tool and an argument
pattern (a program name, a path prefix). A call a grant covers never asks again."""

from __future__ import annotations

from typing import Literal

import msgspec


class Grant(msgspec.Struct, frozen=True):
    tool: str
    scope: str
    verdict: Literal["allow", "reject"]

    def covers(self, tool: str, scope: str) -> bool:
        if tool != self.tool:
            return False
        return scope == self.scope or scope.startswith(self.scope.rstrip("/") + "/")


class Grants(msgspec.Struct):
    items: list[Grant] = []

    def match(self, tool: str, scope: str) -> Grant | None:
        # The most specific grant wins, so "reject src/secrets" beats "allow src".
        hits = [g for g in self.items if g.covers(tool, scope)]
        return max(hits, key=lambda g: len(g.scope)) if hits else None

    def add(self, grant: Grant) -> None:
        self.items = [g for g in self.items if (g.tool, g.scope) != (grant.tool, grant.scope)]
        self.items.append(grant)
