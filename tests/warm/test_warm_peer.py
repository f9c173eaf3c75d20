"""The warm server serves only a launcher the kernel names, and names it by a pidfd made at
connect time (SO_PEERPIDFD), not by a pid read later: a confined process that connects, sends a
request and exits, its pid then taken by an unconfined process, gets no worker. A pid
(SO_PEERCRED) would name the newcomer, and /proc would vouch for it.

The pid is made to be taken again on purpose: in a user and PID namespace of the test's own
(where the test may write ns_last_pid), with the server stopped (SIGSTOP) until it is."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO
from tether.warm.identity import peer_pidfd_known

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="warm starts are Linux-only"),
    pytest.mark.slow,
]

# Runs as PID 1 of a new PID namespace: starts a warm server, stops it, lets a confined process
# connect and exit, gives its pid to an unconfined `sleep`, resumes the server, and says what
# happened (JSON on stdout).
DRIVER = r"""
import ctypes, json, os, signal, socket, subprocess, sys, time
base, out, home, ATTACKER = sys.argv[1:5]
env = {**os.environ, "TETHER_WARM": "1", "TETHER_WARM_DIR": base, "TETHER_HOME": home}
acp = [sys.executable, "-m", "tether", "acp"]
INIT = b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}\n'
subprocess.run(acp, input=b"", env=env, check=True, capture_output=True)
def listening():  # the server's name, once its socket and pid file are there
    for n in os.listdir(base):
        pid = os.path.join(base, n[:-5] + ".pid")
        if n.endswith(".sock") and os.path.exists(pid) and open(pid).read().strip():
            return n[:-5]
deadline = time.monotonic() + 60
while listening() is None and time.monotonic() < deadline:
    time.sleep(0.05)
name = listening()
server = int(open(os.path.join(base, name + ".pid")).read())

os.kill(server, signal.SIGSTOP)  # busy, as a server may be, while the next connects and exits
def confined():
    ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: what tether's sandbox sets
attacker = subprocess.Popen(
    [sys.executable, "-c", ATTACKER, os.path.join(base, name + ".sock"), out],
    env=env, preexec_fn=confined, stdout=subprocess.PIPE,
)
assert attacker.stdout.readline() == b"sent\n"
connector = attacker.pid
attacker.wait()  # the connector exits (its child keeps the connection open)
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(connector - 1))
bystander = subprocess.Popen(["sleep", "300"])  # unconfined, and now it has that pid
os.kill(server, signal.SIGCONT)

served = subprocess.run(acp, input=INIT, env=env, capture_output=True, timeout=60)  # after it
deadline = time.monotonic() + 30
def workers():
    return [c for t in os.listdir(f"/proc/{server}/task")
            for c in open(f"/proc/{server}/task/{t}/children").read().split()]
while workers() and time.monotonic() < deadline:  # what the server forked has ended
    time.sleep(0.05)
print(json.dumps({
    "pid_taken_again": bystander.pid == connector,
    "planted": os.path.exists(out),
    "served_after": served.returncode == 0 and b'"result"' in served.stdout,
    "workers_left": workers(),
}))
"""

# The confined process: a request for a worker running `tether config init`, which writes the
# config file where its environment says; then it exits, a child of it holding the connection.
ATTACKER = r"""
import os, socket, sys, time
from tether.warm.handover import Request
sock, out = sys.argv[1:3]
conn = socket.socket(socket.AF_UNIX)
conn.connect(sock)
env = [b"TETHER_CONFIG=" + out.encode(), b"PATH=" + os.environ["PATH"].encode()]
request = Request(b"/", [b"tether", b"config", b"init"], [p.encode() for p in sys.path], env)
fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
conn.sendmsg([request.encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
if os.fork() == 0:
    time.sleep(300)
    os._exit(0)
print("sent", flush=True)
os._exit(0)
"""


@pytest.mark.skipif(not peer_pidfd_known(), reason="no SO_PEERPIDFD: no warm starts at all")
def test_a_pid_taken_again_does_not_vouch_for_a_confined_peer_that_left(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    assert unshare is not None, "the test needs util-linux's unshare"
    base = tmp_path / "warm"
    base.mkdir(mode=0o700)
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "planted.toml"
    command = [unshare, "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]
    command += [sys.executable, "-c", DRIVER, str(base), str(out), str(home), ATTACKER]
    done = subprocess.run(command, capture_output=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["pid_taken_again"], said  # the setting the check must withstand
    assert said["served_after"] and said["workers_left"] == [], said
    assert not said["planted"] and not out.exists()
