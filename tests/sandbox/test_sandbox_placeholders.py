"""bubblewrap's placeholders (the empty read-only directories it mounts where a protected path
does not exist yet): none is left after a command; none goes while another sandbox still has
it mounted (which would lift that sandbox's protection); what a killed launcher left goes at the
next start; nothing of the user's is ever removed. Judged by the project's files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.sandbox_world import git
from tether.engine.sandbox.detect import detect
from tether.engine.sandbox.session_sandbox import Sandbox, Scope

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap"), pytest.mark.slow]
WAIT = 30.0


def _project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    git(p, "init", "-q")
    (p / "main.py").write_text("print('hi')\n")
    (p / ".zed").mkdir()  # the user's own empty folder: no placeholder, never removed
    return p.resolve()


def _box(tmp_path: Path) -> Sandbox:
    return Sandbox(detect("bubblewrap"), base=tmp_path, registry=tmp_path / "registry")


def _start(box: Sandbox, p: Path, script: str) -> subprocess.Popen[bytes]:
    argv = box._prepare(
        Scope((p,), ()), p, dict(os.environ), {}
    )  # what `wrap` runs on a worker thread
    return subprocess.Popen(
        [str(argv), "sh", "-c", script], cwd=p, start_new_session=True, stderr=subprocess.PIPE
    )


def _until(found: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not found.exists():
        assert time.monotonic() < deadline, f"{found} never appeared"
        time.sleep(0.02)


def _listing(p: Path) -> list[str]:
    return sorted(os.listdir(p))


def test_no_placeholder_is_left_and_the_users_folder_stays(tmp_path: Path) -> None:
    p = _project(tmp_path)
    before = _listing(p)
    box = _box(tmp_path)
    ran = _start(box, p, "ls -a; mkdir .zed/x .claude/x; echo EVIL > AGENTS.md")
    _, err = ran.communicate(timeout=WAIT)
    assert ran.returncode != 0 and b"Read-only file system" in err, err
    assert _listing(p) == before  # .zed/x refused, and no placeholder left
    box.close()


def test_a_placeholder_in_use_stays_until_its_last_sandbox_ends(tmp_path: Path) -> None:
    p = _project(tmp_path)
    first, second = _box(tmp_path), _box(tmp_path)  # two sessions on one project
    tmp = first.tmp
    waiting = _start(
        first,
        p,
        f"touch {tmp}/ready; while [ ! -e {tmp}/go ]; do sleep 0.02; done; "
        "echo EVIL > AGENTS.md; mkdir -p .claude/skills/evil",
    )
    _until(tmp / "ready")
    quick = _start(second, p, "true")  # ends while the first still runs
    assert quick.communicate(timeout=WAIT)[1] == b"" and quick.returncode == 0
    assert (p / "AGENTS.md").is_dir() and (p / ".claude").is_dir()  # still mounted, kept
    (tmp / "go").touch()
    _, err = waiting.communicate(timeout=WAIT)
    assert waiting.returncode != 0, err  # its placeholders held to the end
    assert _listing(p) == [".git", ".zed", "main.py"]
    first.close()
    second.close()


def test_what_a_killed_launcher_left_goes_at_the_next_start(tmp_path: Path) -> None:
    p = _project(tmp_path)
    box = _box(tmp_path)
    tmp = box.tmp
    ran = _start(box, p, f"touch {tmp}/ready; sleep 600")
    _until(tmp / "ready")
    os.killpg(ran.pid, signal.SIGKILL)  # as when tether is killed: no launcher cleans up
    ran.communicate(timeout=WAIT)
    assert (p / "AGENTS.md").is_dir() and (p / ".vscode").is_dir()  # left behind, for now
    (p / ".vscode" / "settings.json").write_text("{}\n")  # the user puts something in one
    later = _box(tmp_path)  # the next start
    done = _start(later, p, "true")
    assert done.communicate(timeout=WAIT)[1] == b"" and done.returncode == 0
    assert _listing(p) == [".git", ".vscode", ".zed", "main.py"]  # the user's things stay
    assert (p / ".vscode" / "settings.json").read_text() == "{}\n"
    later.close()
    box.close()


def test_a_launcher_that_never_ran_holds_its_places_until_the_session_closes(
    tmp_path: Path,
) -> None:
    p = _project(tmp_path)
    box = _box(tmp_path)
    box._prepare(
        Scope((p,), ()), p, dict(os.environ), {}
    )  # prepared, never started (its spawn failed, say)
    ran = _start(box, p, "true")
    assert ran.communicate(timeout=WAIT)[1] == b"" and ran.returncode == 0
    assert (p / "AGENTS.md").is_dir()  # the pending one lists it: it may start any moment
    box.close()  # its launcher goes with the session's directory, and so do the placeholders
    assert _listing(p) == [".git", ".zed", "main.py"]
