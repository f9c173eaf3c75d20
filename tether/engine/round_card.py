"""The card a round's aggregated confirm is shown on, when two or more calls need consent.

It names what it covers (`Edit notes.md, app.py`; `Run pytest -q and 2 more`), uses the calls'
common kind, and carries their diffs first: clients render a card from its title, kind and first
content items, and some only look for a diff there.
"""

from __future__ import annotations

import uuid

from tether.engine.events import DiffOut, Location, TextOut, ToolContent
from tether.engine.seam import ConfirmDecision, ConfirmRequest, RoundCard

_VERBS = {
    "edit": "Edit",
    "delete": "Delete",
    "move": "Move",
    "read": "Read",
    "search": "Search",
    "fetch": "Fetch",
}
TITLE_ITEMS = 3  # targets named in a title before "and N more"


def round_card(batch: list[ConfirmRequest]) -> RoundCard:
    kinds = {r.kind for r in batch}
    kind = kinds.pop() if len(kinds) == 1 else "other"
    diffs: list[ToolContent] = [c for r in batch for c in r.content if isinstance(c, DiffOut)]
    listing = "\n".join(f"{i + 1}. {r.title}" for i, r in enumerate(batch))
    locations: list[Location] = [loc for r in batch for loc in r.locations]
    return RoundCard(
        id=f"round_{uuid.uuid4().hex[:12]}",
        title=round_title(batch, kind),
        kind=kind,
        content=[*diffs, TextOut(f"This round asks to:\n{listing}")],
        locations=locations,
        raw_input={
            "calls": [{"id": r.call_id, "tool": r.tool, "input": r.raw_input} for r in batch]
        },
    )


def _raw(r: ConfirmRequest) -> dict[str, object]:
    return {"id": r.call_id, "tool": r.tool, "input": r.raw_input}


def round_title(batch: list[ConfirmRequest], kind: str) -> str:
    targets = [r.target or r.title for r in batch]
    if kind == "execute":
        more = len(batch) - 1
        return f"Run {targets[0]}" + (f" and {more} more" if more else "")
    verb = _VERBS.get(kind)
    if verb is not None:
        return f"{verb} {_join(targets)}"
    return _join([r.title for r in batch])


def outcome(batch: list[ConfirmRequest], decisions: list[ConfirmDecision]) -> list[ToolContent]:
    """The card's content once decided: the diffs, then what happened to each call."""
    words = {"allow": "allowed", "reject": "rejected", "cancelled": "cancelled"}
    lines = [f"{words[d.verdict]}: {r.title}" for r, d in zip(batch, decisions, strict=True)]
    diffs: list[ToolContent] = [c for r in batch for c in r.content if isinstance(c, DiffOut)]
    return [*diffs, TextOut("\n".join(lines))]


def _join(items: list[str]) -> str:
    if len(items) <= TITLE_ITEMS:
        return ", ".join(items)
    shown = items[: TITLE_ITEMS - 1]
    return f"{', '.join(shown)} and {len(items) - len(shown)} more"
