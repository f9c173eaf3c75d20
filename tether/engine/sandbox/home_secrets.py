"""The credential stores of a developer's home directory, which no confined command may read:
keys, tokens, passwords and what was typed at a prompt. Each group says why. The list follows
what maintained sandboxes hide (firejail's `disable-common.inc`: its "top secret", "cloud
provider" and history sections; Anthropic's sandbox-runtime; the auth files other agents keep),
plus the stores the issue that asked for it named. Literal paths, relative to the home
directory: the command policy also asks before an allowlisted reader names one."""

from __future__ import annotations

HOME_SECRET_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("keys that sign, log in and decrypt", (
        ".ssh", ".gnupg", ".pki", ".local/share/pki", ".cert",
    )),
    ("keyrings and password stores: every other password the user keeps", (
        ".password-store", ".local/share/keyrings", ".gnome2/keyrings",
        ".local/share/kwalletd", ".vaults",
    )),
    ("other coding agents' logins, and their transcripts (which hold what was pasted)", (
        ".codex/auth.json", ".codex/sessions", ".codex/history.jsonl",
        ".claude/.credentials.json", ".claude.json", ".claude/projects",
        ".claude/history.jsonl", ".gemini/oauth_creds.json", ".config/github-copilot",
        ".config/cursor/auth.json", ".cursor/auth.json", ".grok/auth.json",
        ".local/share/opencode/auth.json",
    )),
    ("cloud and cluster credentials", (
        ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".boto", ".s3cfg",
        ".passwd-s3fs", ".oci", ".config/doctl", ".terraform.d/credentials.tfrc.json",
        ".vault-token",
    )),
    ("git hosting tokens", (
        ".git-credentials", ".git-credential-cache", ".config/gh", ".config/hub",
        ".config/glab-cli",
    )),
    ("package registry tokens (publishing rights)", (
        ".npmrc", ".yarnrc", ".pypirc", ".config/pypoetry/auth.toml", ".cargo/credentials",
        ".cargo/credentials.toml", ".gem/credentials",
    )),
    ("network logins and mail passwords", (
        ".netrc", ".smbcredentials", ".config/rclone", ".davfs2/secrets", ".fetchmailrc",
        ".msmtprc",
    )),
    ("database passwords", (".pgpass", ".my.cnf", ".mylogin.cnf")),
    ("shell and REPL histories: passwords and tokens typed at a prompt", (
        ".bash_history", ".zsh_history", ".zhistory", ".histfile", ".history", ".sh_history",
        ".local/share/fish/fish_history", ".python_history", ".node_repl_history",
        ".psql_history", ".mysql_history", ".sqlite_history", ".rediscli_history",
        ".irb_history", ".lesshst", ".viminfo",
    )),
)  # fmt: skip

HOME_SECRETS: tuple[str, ...] = tuple(p for _, paths in HOME_SECRET_GROUPS for p in paths)
