"""The command safety scan: wrappers, shells and remote hops unwrapped; the denylist refuses a
program wherever it hides; `classify_danger` names what deserves a confirm, and nothing else."""

from __future__ import annotations

import pytest

from tether.command_policy.danger import DangerReason, classify_danger, command_danger
from tether.command_policy.denylist import Denylist, DenyRule
from tether.command_policy.scan import scan
from tether.command_policy.shell_script import split_script
from tether.command_policy.words import parse_options, program_name
from tether.command_policy.wrappers import WRAPPERS

DENY = Denylist.default()


def programs(argv: list[str]) -> list[str]:
    return [inv.program for inv in scan(argv).invocations]


def denied(argv: list[str]) -> str | None:
    hit = DENY.check(argv)
    return hit.invocation.program if hit else None


def reasons(argv: list[str]) -> list[str]:
    return [r for r, _ in command_danger(argv)]


# --- the scan ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "chain"),
    [
        (["env", "-i", "FOO=1", "-u", "X", "pytest"], ["env", "-u"]),  # after NAME=: the program
        (["env", "-i", "-u", "X", "FOO=1", "pytest", "-q"], ["env", "pytest"]),
        (["env", "--chdir=/tmp", "-", "make"], ["env", "make"]),
        (["timeout", "-k", "5", "-s", "KILL", "10", "make", "test"], ["timeout", "make"]),
        (["timeout", "--kill-after", "5", "10s", "make"], ["timeout", "make"]),
        (["nice", "-n", "5", "make"], ["nice", "make"]),
        (["nice", "-10", "make"], ["nice", "make"]),
        (["nohup", "make"], ["nohup", "make"]),
        (["xargs", "-0", "-n", "1", "-I{}", "grep", "x"], ["xargs", "grep"]),
        (["xargs"], ["xargs", "echo"]),
        (["stdbuf", "-oL", "make"], ["stdbuf", "make"]),
        (["ionice", "-c", "3", "make"], ["ionice", "make"]),
        (["ionice", "-p", "123"], ["ionice"]),
        (["command", "-v", "rm"], ["command"]),
        (["uv", "run", "--with", "rich", "-p", "3.12", "pytest"], ["uv", "pytest"]),
        (["uv", "run", "-m", "pytest"], ["uv", "python"]),
        (["poetry", "run", "pytest"], ["poetry", "pytest"]),
        (["npx", "-y", "prettier", "."], ["npx", "prettier"]),
        (["/usr/bin/env", "python3", "x.py"], ["env", "python3"]),
        (["find", ".", "-name", "*.pyc", "-exec", "rm", "{}", "+"], ["find", "rm"]),
        (["sh", "-c", "cd src && make; ls | wc -l"], ["sh", "cd", "make", "ls", "wc"]),
        (["bash", "-euo", "pipefail", "-c", "A=1 make all"], ["bash", "make"]),
        (["ssh", "-p", "22", "prod", "ls", "-l"], ["ssh", "ls"]),
        (["ssh", "prod", "-o", "BatchMode=yes", "uptime"], ["ssh", "uptime"]),
        (["mosh", "prod", "--", "top"], ["mosh", "top"]),
    ],
)
def test_wrappers_are_unwrapped_to_the_program(argv: list[str], chain: list[str]) -> None:
    assert programs(argv) == chain


def test_no_option_swallows_the_program() -> None:
    # -i, -0 and -v are flags: treating any as value options would hide `sudo`.
    for flag in ("-i", "-0", "-v"):
        assert programs(["env", flag, "sudo", "ls"]) == ["env", "sudo"]
    assert programs(["timeout", "-v", "5", "sudo"]) == ["timeout", "sudo"]
    assert programs(["setsid", "-f", "sudo"]) == ["setsid", "sudo"]


def test_every_wrapper_spec_is_consistent() -> None:
    for name, spec in WRAPPERS.items():
        assert not set(spec.flags) & set(spec.values), name
        assert not spec.long_flags & spec.long_values, name


def test_unknown_options_stop_the_unwrap_and_are_reviewed() -> None:
    found = scan(["timeout", "--frobnicate", "5", "sudo", "ls"])
    assert [inv.program for inv in found.invocations] == ["timeout"]
    assert found.findings[0].text.startswith("options not understood by timeout: --frobnicate")
    assert "the wrapped program is a guess" in found.findings[0].text
    # The wrapper stays the command the denylist judges, so nothing is refused here ...
    assert denied(["timeout", "--frobnicate", "5", "sudo", "ls"]) is None
    # ... but the call is always reviewed.
    assert classify_danger("run_argv", {"argv": ["timeout", "--frobnicate", "5", "ls"]})


def test_getopt_details() -> None:
    from tether.command_policy.words import Spec

    spec = Spec(flags="ab", values="c", long_flags=frozenset({"--all"}))
    p = parse_options(spec, ["-ab", "-cVALUE", "--all", "--", "-x"])
    assert (p.rest, p.unknown) == (4, None)
    assert p.seen == [("-a", None), ("-b", None), ("-c", "VALUE"), ("--all", None)]
    assert parse_options(spec, ["-c"]).missing_value == "-c"
    assert parse_options(spec, ["-az"]).unknown == "-z (in -az)"
    assert parse_options(spec, ["--all=1"]).unknown == "--all=1"


def test_shell_scripts_split_into_commands() -> None:
    script = 'if true; then A=1 make > out.log 2>&1; fi\nfor f in *; do rm "$f"; done | tee x'
    assert split_script(script) == [
        ["true"],
        ["make"],
        ["rm", "$f"],
        ["tee", "x"],
    ]
    assert split_script("(cd a && ls) || echo 'a;b'") == [["cd", "a"], ["ls"], ["echo", "a;b"]]


def test_substitutions_and_variables() -> None:
    assert "id" in programs(["sh", "-c", 'echo "$(id -u)" `whoami`'])
    assert "whoami" in programs(["sh", "-c", 'echo "$(id -u)" `whoami`'])
    found = scan(["sh", "-c", "$CMD --go"])
    assert "chosen at run time" in found.findings[0].text


def test_unparsable_shell_code_is_still_searched() -> None:
    found = scan(["sh", "-c", "echo 'unclosed; sudo ls"])
    assert any("quoting does not parse" in f.text for f in found.findings)
    assert denied(["sh", "-c", "echo 'unclosed; sudo ls"]) == "sudo"


def test_program_names() -> None:
    assert program_name("/usr/bin/RM") == "rm"
    assert program_name("C:\\Windows\\System32\\shutdown.exe") == "shutdown"
    assert program_name("./script.sh") == "script.sh"


# --- the denylist --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "program"),
    [
        (["sudo", "ls"], "sudo"),
        (["su", "-c", "id"], "su"),
        (["doas", "id"], "doas"),
        (["pkexec", "id"], "pkexec"),
        (["run0", "id"], "run0"),
        (["systemd-run", "--user", "id"], "systemd-run"),
        (["env", "FOO=1", "sudo", "ls"], "sudo"),
        (["nohup", "sudo", "ls"], "sudo"),
        (["timeout", "10", "nice", "-n", "1", "sudo", "ls"], "sudo"),
        (["xargs", "-0", "sudo"], "sudo"),
        (["sh", "-c", "echo hi && sudo rm -rf /tmp/x"], "sudo"),
        (["bash", "-lc", "FOO=1 exec doas ls"], "doas"),
        (["env", "-S", "sudo ls"], "sudo"),
        (["ssh", "prod", "rm", "-rf", "/"], "rm"),
        (["ssh", "prod", "bash -c 'sudo reboot'"], "sudo"),
        (["find", "/", "-exec", "sudo", "rm", "{}", ";"], "sudo"),
        (["uv", "run", "sudo", "ls"], "sudo"),
        (["flock", "/tmp/l", "-c", "sudo ls"], "sudo"),
        (["watch", "-n", "1", "reboot"], "reboot"),
        (["rm", "-rf", "/"], "rm"),
        (["rm", "-fr", "/*"], "rm"),
        (["rm", "-r", "-f", "//"], "rm"),
        (["rm", "--recursive", "--force", "/."], "rm"),
        (["rm", "-rf", "~"], "rm"),
        (["sh", "-c", "rm -rf $HOME"], "rm"),
        (["RM.EXE", "-rf", "/"], "rm"),
        (["mkfs.ext4", "/dev/sda1"], "mkfs.ext4"),
        (["dd", "if=/dev/zero", "of=x"], "dd"),
        (["chown", "-R", "me", "/"], "chown"),
        (["mount", "/dev/sdb", "/mnt"], "mount"),
        (["shutdown", "-h", "now"], "shutdown"),
        (["poweroff"], "poweroff"),
        (["halt"], "halt"),
        (["systemctl", "reboot"], "systemctl"),
        (["systemctl", "start", "reboot.target"], "systemctl"),
        (["systemctl", "poweroff", "-i"], "systemctl"),
    ],
)
def test_denylisted_commands_are_found_wherever_they_hide(argv: list[str], program: str) -> None:
    assert denied(argv) == program


@pytest.mark.parametrize(
    "argv",
    [
        ["rm", "-rf", "build"],
        ["rm", "/tmp/x"],  # not recursive
        ["chown", "me", "file"],
        ["systemctl", "status"],
        ["systemctl", "restart", "nginx"],
        ["echo", "sudo"],
        ["grep", "-r", "sudo", "."],
        ["git", "commit", "-m", "reboot the thing"],
        ["ssh", "prod", "ls"],
        ["ls", "-la", "/"],
    ],
)
def test_harmless_commands_are_not_refused(argv: list[str]) -> None:
    assert denied(argv) is None


def test_the_refusal_says_why() -> None:
    hit = DENY.check(["env", "FOO=1", "nohup", "sudo", "ls"])
    assert hit is not None
    message = hit.message()
    assert message.startswith("denylisted: sudo ls (behind env, nohup) — privilege escalation")
    assert "in every mode" in message
    remote = DENY.check(["ssh", "prod", "rm", "-rf", "/"])
    assert remote is not None and "on 'prod'" in remote.message()


def test_configured_entries() -> None:
    rule = DenyRule.parse("kubectl delete drain")
    custom = Denylist([rule])
    assert custom.check(["kubectl", "delete", "pod", "x"]) is not None
    assert custom.check(["kubectl", "get", "pods"]) is None
    assert custom.check(["sudo", "ls"]) is None
    added = Denylist.from_config(["pm-*", "  "])  # added to the built-in entries
    assert added.check(["sudo", "ls"]) is not None
    assert added.check(["pm-suspend"]) is not None and added.check(["pmap", "1"]) is None
    alone = Denylist.from_config(["pm-*"], builtin=False)
    assert alone.check(["sudo", "ls"]) is None and alone.check(["pm-hibernate"]) is not None


# --- danger --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python", "-c", "print(1)"], "python runs inline code (-c)"),
        (["python3", "-Ic", "print(1)"], "python3 runs inline code (-c)"),
        (["python", "-m", "http.server"], "python runs the module http.server"),
        (["python", "x.py"], "python runs the script x.py"),
        (["python"], "python starts an interactive interpreter"),
        (["bash", "-c", "ls"], "bash runs inline code (-c)"),
        (["sh", "deploy.sh"], "sh runs the script deploy.sh"),
        (["node", "-e", "1"], "node runs inline code (-e)"),
        (["node", "--eval=1"], "node runs inline code (--eval)"),
        (["perl", "-ne", "print", "f"], "perl runs inline code (-e)"),
        (["ruby", "-e", "1"], "ruby runs inline code (-e)"),
        (["deno", "eval", "1"], "deno runs inline code (eval)"),
        (["./scripts/release.sh"], "runs the script ./scripts/release.sh"),
        (["nohup", "make"], "nohup detaches the command"),
        (["setsid", "-f", "server"], "setsid detaches the command"),
        (["env", "-S", "make all"], "env -S carries a command line"),
        (["ssh", "prod"], "remote shell on 'prod' (ssh with no command; its input is not checked)"),
        (["ssh", "prod", "uptime"], "runs commands on the remote host 'prod'"),
        (["ssh", "-o", "BatchMode=yes", "prod", "ls"], "ssh -o BatchMode=yes"),
        (["rm", "notes.txt"], "deletes files: notes.txt"),
        (["mv", "a", "b"], "moves files"),
        (["cp", "a", "b"], "copies files (may replace b)"),
        (["sed", "-i", "s/a/b/", "f"], "edits files in place"),
        (["find", ".", "-delete"], "deletes the files it finds"),
        (["git", "push", "origin", "main"], "pushes to a remote"),
        (["git", "-C", "sub", "reset", "--hard"], "discards uncommitted changes"),
        (["git", "clean", "-fdx"], "deletes untracked files"),
        (["curl", "-X", "POST", "https://x"], "sends a POST request"),
        (["curl", "-d", "a=1", "https://x"], "sends data over the network"),
        (["wget", "--post-data=a", "https://x"], "sends data over the network"),
        (["scp", "f", "prod:/tmp"], "copies files over the network"),
        (["npm", "publish"], "publishes a package"),
        (["kill", "-9", "123"], "sends signals to other processes"),
    ],
)
def test_dangerous_commands_name_their_reason(argv: list[str], expected: str) -> None:
    assert any(r.startswith(expected) for r in reasons(argv)), reasons(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["grep", "-c", "x", "f"],
        ["od", "-c", "f"],
        ["git", "status"],
        ["git", "diff", "--stat"],
        ["git", "checkout", "main"],
        ["git", "restore", "--staged", "f"],
        ["pytest", "-q"],
        ["uv", "run", "pytest"],
        ["ls", "-la"],
        ["cp", "-n", "a", "b"],
        ["curl", "-s", "https://example.com"],
        ["python", "--version"],
        ["node", "-v"],
        ["make", "test"],
        ["sed", "-n", "1p", "f"],
        ["bun", "install"],
    ],
)
def test_harmless_commands_have_no_reason(argv: list[str]) -> None:
    assert reasons(argv) == []


def test_inline_code_is_previewed() -> None:
    found = classify_danger("run_argv", {"argv": ["python", "-c", "import os\nos.remove('x')"]})
    assert found == DangerReason(
        ("python runs inline code (-c)",), ("python -c:\nimport os\nos.remove('x')",)
    )
    carried = classify_danger("run_argv", {"argv": ["env", "-S", "make all"]})
    assert carried is not None and carried.previews == ("env -S: make all",)


def test_remote_reasons_say_where() -> None:
    assert "on 'prod': deletes files: x" in reasons(["ssh", "prod", "rm", "x"])
    assert "on 'prod': bash runs inline code (-c)" in reasons(["ssh", "prod", "bash -c 'ls'"])


def test_batches_are_judged_node_by_node() -> None:
    args = {
        "nodes": [
            {
                "argv": ["ls"],
                "then": {"argv": ["python", "-c", "1"]},
                "else": [{"argv": ["echo"]}],
                "pipe": [{"argv": ["rm", "x"]}],
            },
            {"argv": ["git", "status"]},
        ]
    }
    found = classify_danger("run_argv_batch", args)
    assert found is not None
    assert found.reasons == ("python runs inline code (-c)", "deletes files: x")
    assert classify_danger("run_argv_batch", {"nodes": [{"argv": ["ls"]}]}) is None
    assert classify_danger("run_argv_batch", {"nodes": "junk"}) is None
    assert classify_danger("read_file", {"path": "x"}) is None
