"""Answers the user typed into a PTY, kept out of what that PTY prints afterwards.

`ask_into_pty` types a secret only while the terminal hides input, but the program may print it
back itself (`echo "logged in as $pw"`). Everything a PTY prints once a secret went in passes
through its filter, and every occurrence becomes `MASK` before anything else sees the text: the
model, the tool card, the store, the transcript and its exports. Output arrives in pieces and a
read may end inside the secret, so the filter holds back the longest tail that could begin one
(a prefix of a secret) until the next piece says whether it does; what is held goes out when the
program ends. A program that prints the secret transformed (reversed, encoded, in pieces with
other text between) is not caught: this keeps a program's own echo of an answer from the model,
it does not make a hostile program safe.
"""

from __future__ import annotations

MASK = "[secret hidden]"


class SecretFilter:
    """The secrets typed into one PTY, and the output held back until it is known not to be
    the start of one."""

    __slots__ = ("_held", "_secrets")

    def __init__(self) -> None:
        self._secrets: list[str] = []
        self._held = ""

    def add(self, secret: str) -> None:
        if secret and secret not in self._secrets:
            self._secrets.append(secret)
            self._secrets.sort(key=len, reverse=True)  # the longest first, where one holds another

    def feed(self, text: str) -> str:
        """What of the output so far (what was held, then `text`) can go out now, masked."""
        if not self._secrets:
            return text
        text = self.scrub(self._held + text)
        keep = self._start_of_secret(text)
        self._held = text[len(text) - keep :]
        return text[: len(text) - keep]

    def flush(self) -> str:
        """What was held back: the program ended, so nothing more can complete a secret."""
        held, self._held = self._held, ""
        return held

    def scrub(self, text: str) -> str:
        """`text` with every whole secret masked (terminal text again, once escape sequences
        and redraws are applied: they may have stood between a secret's characters)."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text

    def _start_of_secret(self, text: str) -> int:
        """The length of the longest end of `text` that a secret begins with."""
        best = 0
        for secret in self._secrets:
            for n in range(min(len(secret) - 1, len(text)), best, -1):
                if text.endswith(secret[:n]):
                    best = n
                    break
        return best
