"""Which of tether's environment variables the commands it runs may see: an allowlist, never
"tether's environment minus a few names". A variable tether was started with (an editor's
whole environment, keys and tokens included) reaches a command only when it is named here or
in `[workspace] command_env`, and never when a configured provider or web provider names it
as its key, whatever the lists say.

What is named, and why:
- the session's basics: who and where the user is (`HOME`, `USER`, `LOGNAME`, `SHELL`),
  where programs are (`PATH`), the locale (`LANG`, `LC_*`), `TZ`, the terminal (`TERM`,
  `COLORTERM`, `COLUMNS`, `LINES`, `NO_COLOR`), temporary and XDG base directories;
- the toolchains' own places, which a project's build and tests need to find the right
  interpreter, compiler and packages (an activated virtualenv or conda env, pyenv, nvm,
  volta, fnm, GOPATH, CARGO_HOME, RUSTUP_HOME, JAVA_HOME, gems, asdf, mise, nix, ...);
- certificate bundles, so a session allowed the network verifies TLS as the user's shell
  does; git's identity, so commits name their author;
- `SSH_AUTH_SOCK`: a path, not a secret (an unconfined, asked `git push` needs it; a program
  that can reach the socket finds it without the variable).
Left out on purpose: anything that may hold a credential (`*_TOKEN`, `*_KEY`, `PIP_*`, `UV_*`,
`NPM_CONFIG_*`, `GOPROXY`, proxy URLs, `TETHER_*`), and everything that makes a program load
code or options (`LD_*`, `PYTHONPATH`, `NODE_OPTIONS`, `GIT_*` beyond the identity, ...).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

_BASICS = (
    "PATH HOME USER LOGNAME USERNAME SHELL TERM COLORTERM COLUMNS LINES NO_COLOR LANG "
    "LANGUAGE TZ TMPDIR TEMP TMP XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME XDG_STATE_HOME "
    "XDG_RUNTIME_DIR XDG_CONFIG_DIRS XDG_DATA_DIRS SSH_AUTH_SOCK"
)
_TOOLCHAINS = (
    "VIRTUAL_ENV CONDA_PREFIX CONDA_DEFAULT_ENV CONDA_EXE CONDA_PYTHON_EXE CONDA_SHLVL "
    "PYENV_ROOT PYENV_VERSION PIPX_HOME PIPX_BIN_DIR "
    "NVM_DIR NVM_BIN NVM_INC VOLTA_HOME FNM_DIR FNM_MULTISHELL_PATH PNPM_HOME BUN_INSTALL "
    "DENO_DIR DENO_INSTALL COREPACK_HOME "
    "GOROOT GOPATH GOBIN GOCACHE GOMODCACHE GOENV GOTOOLCHAIN "
    "CARGO_HOME RUSTUP_HOME RUSTUP_TOOLCHAIN CARGO_TARGET_DIR "
    "JAVA_HOME GRADLE_USER_HOME MAVEN_HOME M2_HOME ANDROID_HOME ANDROID_SDK_ROOT SDKMAN_DIR "
    "GEM_HOME GEM_PATH GEM_ROOT RBENV_ROOT RBENV_VERSION RUBY_ROOT RUBY_ENGINE RUBY_VERSION "
    "ASDF_DIR ASDF_DATA_DIR MISE_DATA_DIR DOTNET_ROOT NIX_PATH NIX_PROFILES PKG_CONFIG_PATH"
)
_TRUST_AND_IDENTITY = (
    "SSL_CERT_FILE SSL_CERT_DIR NIX_SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE "
    "NODE_EXTRA_CA_CERTS GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL"
)
# Windows cannot start most programs without these.
_WINDOWS = (
    "SYSTEMROOT SYSTEMDRIVE WINDIR COMSPEC PATHEXT USERPROFILE APPDATA LOCALAPPDATA "
    "PROGRAMDATA PROGRAMFILES PROGRAMFILES(X86) COMMONPROGRAMFILES HOMEDRIVE HOMEPATH "
    "NUMBER_OF_PROCESSORS PROCESSOR_ARCHITECTURE OS"
)
_GROUPS = (_BASICS, _TOOLCHAINS, _TRUST_AND_IDENTITY, _WINDOWS)
BUILTIN_NAMES = frozenset(name for group in _GROUPS for name in group.split())
BUILTIN_PREFIXES = ("LC_",)
# tether's own provider variables (keys, and base URLs, which may carry credentials): never
# passed, even before a config file says which others are keys.
_SECRETS = (
    "OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL DEEPSEEK_API_KEY "
    "DEEPSEEK_BASE_URL TETHER_SEARXNG_URL"
)
BUILTIN_SECRETS = frozenset(name for name in _SECRETS.split())


class EnvAllowlist:
    """The names commands may see (exact, or `PREFIX*`) and the names they never see."""

    __slots__ = ("names", "prefixes", "secrets")

    def __init__(self, extra: Iterable[str] = (), secrets: Iterable[str] = ()) -> None:
        more = list(extra)
        self.names = BUILTIN_NAMES | {n for n in more if not n.endswith("*")}
        self.prefixes = BUILTIN_PREFIXES + tuple(n[:-1] for n in more if n.endswith("*"))
        self.secrets = BUILTIN_SECRETS | frozenset(secrets)

    def allows(self, name: str) -> bool:
        key = name.upper() if os.name == "nt" else name  # Windows names ignore case
        if key in self.secrets:
            return False
        return key in self.names or key.startswith(self.prefixes)

    def filter(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in environ.items() if self.allows(k)}


_current = EnvAllowlist()


def configure(extra: Iterable[str] = (), secrets: Iterable[str] = ()) -> None:
    """Set the process's allowlist from the config (`[workspace] command_env`, and every
    variable a configured provider or web provider names as its key). Called once by the
    composition root; until then the built-in lists apply."""
    global _current
    _current = EnvAllowlist(extra, secrets)


def current() -> EnvAllowlist:
    return _current
