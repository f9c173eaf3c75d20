"""Globs as regular expressions: the same paths match as with a direct translation, and patterns
that make a direct translation backtrack for minutes match at once."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.errors import ToolError
from tether.tools.globs import GLOB_MAX_SPELLINGS, glob_regex


def direct(pattern: str) -> re.Pattern[str]:
    """The direct translation tether used before (a class never matching `/` aside): the
    reference for what a glob means."""

    def segment(seg: str) -> str:
        out: list[str] = []
        i = 0
        while i < len(seg):
            c = seg[i]
            if c == "*":
                out.append("[^/]*")
            elif c == "?":
                out.append("[^/]")
            elif c == "[" and seg.find("]", i + 2) > 0:
                end = seg.find("]", i + 2)
                body = seg[i + 1 : end].replace("\\", "\\\\")
                out.append("(?:(?!/)[" + ("^" + body[1:] if body.startswith("!") else body) + "])")
                i = end
            elif c == "{" and "}" in seg[i:]:
                end = seg.index("}", i)
                out.append("(?:" + "|".join(segment(o) for o in seg[i + 1 : end].split(",")) + ")")
                i = end
            else:
                out.append(re.escape(c))
            i += 1
        return "".join(out)

    segments = pattern.strip().removeprefix("./").split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(segment(seg) + ("" if last else "/"))
    return re.compile("".join(out))


def _spelled(segment: str) -> int:
    """How many spellings a segment's `{...}` groups make at most (the pieces above only)."""
    count = 1
    for group in re.findall(r"\{([^{}]*)\}", segment):
        count *= len(group.split(","))
    return count


_PIECES = ["a", "b", ".", "*", "?", "**", "[ab]", "[!a]", "{a,b}", "{a,aa,}", "{*a,b*}", "/"]
_patterns = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join)
_names = st.text(alphabet="ab.", min_size=1, max_size=6)
_paths = st.lists(_names, min_size=1, max_size=5).map("/".join)


@settings(max_examples=400, deadline=None)
@given(pattern=_patterns, paths=st.lists(_paths, min_size=1, max_size=6))
def test_globs_match_what_the_direct_translation_matches(pattern: str, paths: list[str]) -> None:
    if pattern.startswith("/"):
        return
    try:
        ours = glob_regex(pattern)
    except ToolError as refused:  # only a pattern that really spells out too much is refused
        assert max(map(_spelled, pattern.split("/"))) > GLOB_MAX_SPELLINGS, refused
        return
    reference = direct(pattern)
    for path in paths:
        assert bool(ours.fullmatch(path)) == bool(reference.fullmatch(path)), (pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*.py", "src/app.py", True),
        ("**/*.py", "app.py", True),
        ("*.py", "src/app.py", False),
        ("src/**", "src/a/b.txt", True),
        ("src/**", "src", False),
        ("a/**/b/**/c", "a/x/b/y/b/c", True),
        ("a/**/b/**/c", "a/b/c", True),
        ("a/**/b/**/c", "a/x/c", False),
        ("*a*b", "xaxbab", True),
        ("*{ab,a}*b", "ab", True),  # the shorter alternative leaves the `b` for the end
        ("{docs,src}/*.{md,py}", "docs/guide.md", True),
        ("util/?elpers.py", "util/helpers.py", True),
        ("a[!x]b", "a/b", False),  # a class stays inside its segment
        ("**/**/x", "a/x", True),
    ],
)
def test_glob_cases(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is matches


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        # A direct translation: 35 s for six stars and 100 characters (measured), and more
        # for each star; `**` runs the same way over directories.
        ("*a" * 12 + "*b", "a" * 250),
        ("*a" * 12 + "*b", "ab" * 120 + "a"),
        ("**/" * 16 + "x", "a/" * 60 + "y"),
        ("**/a*/" * 8 + "x", "a/" * 60 + "y"),
        ("*{a,aa,aaa}" * 4 + "*b", "a" * 250),
        ("{a,aa}*" * 6 + "c", "a" * 250),
    ],
)
def test_patterns_that_backtrack_catastrophically_when_translated_directly(
    pattern: str, path: str
) -> None:
    assert glob_regex(pattern).fullmatch(path) is None  # and it returned


def test_too_many_alternatives_are_refused() -> None:
    with pytest.raises(ToolError) as e:
        glob_regex("{a,b}" * 9)
    assert e.value.code == "INVALID_ARGS"
    assert f"over {GLOB_MAX_SPELLINGS} alternatives" in e.value.message
    assert glob_regex("{a,b}" * 8).fullmatch("ab" * 4)


def test_bad_globs() -> None:
    for pattern, message in [
        ("", "pattern must not be empty"),
        ("/etc/*", "pattern must be relative"),
        ("[z-a]", "bad glob pattern '[z-a]'"),
    ]:
        with pytest.raises(ToolError, match=re.escape(message)):
            glob_regex(pattern)
