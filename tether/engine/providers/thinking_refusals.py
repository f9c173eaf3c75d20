"""Thinking settings a Claude model refused, learned once and remembered.

From Claude 4.7 on, `thinking.type: enabled` (a budget) is a 400 asking for adaptive thinking
and `output_config.effort`; a model that predates adaptive thinking refuses it; a model whose
thinking is always on refuses `thinking.type: disabled`. tether guesses the shape from the
model id (or the config's `thinking`), and when the API refuses it before anything streamed,
retries once with the shape the refusal asks for and remembers it per provider, URL and model
for every later request of the process, so only the first request pays the round trip.
"""

from __future__ import annotations

from typing import Literal

from tether.errors import ProviderError

# What a request's thinking looked like: a budget, adaptive with an effort, or switched off.
Shape = Literal["budget", "effort", "disabled"]
# What to send instead: the other control, or no thinking block at all (the model's own).
Fallback = Literal["budget", "effort", "omit"]
Key = tuple[str, str, str]  # (provider name, base URL, model)

_INSTEAD: dict[Shape, Fallback] = {"budget": "effort", "effort": "budget", "disabled": "omit"}
_learned: dict[Key, Fallback] = {}


def learned(key: Key) -> Fallback | None:
    return _learned.get(key)


def fallback_for(shape: Shape | None, error: ProviderError) -> Fallback | None:
    """The shape to retry with when `error` is the API refusing `shape`; else None."""
    if shape is None or error.status != 400 or "thinking" not in str(error).lower():
        return None
    return _INSTEAD[shape]


def remember(key: Key, fallback: Fallback) -> None:
    _learned[key] = fallback


def forget(key: Key) -> None:
    """The retry was refused too: the guess stands again (the config may have changed)."""
    _learned.pop(key, None)
