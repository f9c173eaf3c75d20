"""A session's cgroup (tether/engine/sandbox/session_cgroups.py), where the machine lets tether
make one (cgroup v2; root, or a delegated group): every command of the session joins it, closing
the session kills everything in it, and a SIGKILLed tether's groups are ended by the next
tether, a live one's left alone. Judged by /proc and the cgroup file system."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from tests.support.processes import alive, carrying, probe_argv, probe_tokens
from tether.engine.local import reaper
from tether.engine.local.processes import command_environment
from tether.engine.sandbox import session_cgroups
from tether.engine.sandbox.detect import detect
from tether.engine.sandbox.session_sandbox import Sandbox, Scope

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="cgroups are Linux's"),
    pytest.mark.skipif(session_cgroups.own() is None, reason="no cgroup v2 group to write"),
]


def _group_of(pid: int) -> Path:
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    relative = next(line[3:] for line in lines if line.startswith("0::"))
    return Path(f"{session_cgroups._mount_point()}{relative}")


async def _until(check: Callable[[], bool], timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


@pytest.mark.anyio
@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock", "none"])
async def test_a_session_s_commands_are_in_its_cgroup_and_end_with_it(
    project: Path, tmp_path: Path, mechanism: str
) -> None:
    """Each process the probe leaves behind (tests/support/processes.py) is in the session's group;
    closing the session ends them all and removes the group."""
    box = Sandbox(detect(mechanism), base=tmp_path)
    pid_dir = project / "pids"
    pid_dir.mkdir()
    prefix = f"tether-test-{uuid.uuid4().hex}"
    argv = probe_argv(project, pid_dir, prefix)
    if mechanism == "none":
        argv = await box.unconfined(argv, base=command_environment(), env={})
    else:
        scope = Scope((project,), ())
        argv = await box.wrap(argv, cwd=project, scope=scope, base=command_environment(), env={})
    launcher = await anyio.open_process(argv, cwd=project, start_new_session=True)
    try:
        tokens = probe_tokens(prefix)
        await _until(lambda: all((pid_dir / f"{t}.pid").exists() for t in tokens))
        found = [p for t in tokens for p in carrying(t)]
        assert all(carrying(t) for t in tokens)
        assert box._group is not None and {_group_of(p) for p in found} == {box._group}
        group = box._group
        await anyio.to_thread.run_sync(box.close)
        await _until(lambda: not any(alive(p) for p in found))
        assert not group.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):  # gone with the group
            launcher.kill()
        await launcher.aclose()


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def test_a_killed_tether_s_groups_are_ended_by_the_next_one_and_a_live_one_s_kept(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    parent = session_cgroups.own()
    assert parent is not None
    dead = subprocess.Popen(["true"])
    dead.wait()
    me = reaper.owner().replace(":", "-")
    groups = {
        "gone": parent / f"tether-{dead.pid}-1-1",  # its tether was SIGKILLed
        "live": parent / f"tether-{me}-{uuid.uuid4().int % 10**6}",  # this process's
    }
    for group in groups.values():
        group.mkdir()
        sleepers.append(subprocess.Popen(["sleep", "60"]))
        (group / "cgroup.procs").write_text(str(sleepers[-1].pid))
    try:
        sweep = "from tether.engine.sandbox import session_cgroups as c; c.end(c.make())"
        subprocess.run([sys.executable, "-c", sweep], check=True, timeout=30)
        assert sleepers[0].wait(timeout=10) == -9 and not groups["gone"].exists()
        assert sleepers[1].poll() is None and groups["live"].exists()
    finally:
        for group in groups.values():
            if group.exists():
                session_cgroups.end(group)
