#!/usr/bin/env bash
# Installs real VS Code for the .vsix test: the npm package `code-server` and the Node it runs on
# (Node 24, from the npm package `node-linux-<arch>`, which also carries the headers its native
# modules are compiled against: nothing is downloaded but npm packages). Cached: a finished
# install is kept in $TETHER_VSCODE_CACHE (default editors/vscode/.cache, gitignored) and reused.
# Prints the install's directory on stdout (progress goes to stderr). Exit 2: impossible here (a
# missing prerequisite, named, or no npm registry); any other failure is npm's or the build's
# (its log is printed).
# Needs npm, make, a C++ compiler, python3, and libkrb5-dev (the `kerberos` module's headers).
set -euo pipefail
CODE_SERVER_VERSION=4.139.1
NODE_VERSION=24.22.3

here="$(cd "$(dirname "$0")" && pwd)"
cache="${TETHER_VSCODE_CACHE:-$here/../../.cache}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "install.sh: no Node package for $(uname -m)" >&2; exit 2 ;;
esac
dir="$cache/code-server-$CODE_SERVER_VERSION-node-$NODE_VERSION-$arch"
if [ -f "$dir/.installed" ]; then
  echo "$dir"
  exit 0
fi

missing=()
for program in npm make g++ python3; do
  command -v "$program" >/dev/null 2>&1 || missing+=("$program")
done
command -v krb5-config >/dev/null 2>&1 || missing+=("krb5-config (apt-get install -y libkrb5-dev)")
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install.sh: cannot build code-server's native modules; missing: ${missing[*]}" >&2
  exit 2
fi

echo "install.sh: installing Node $NODE_VERSION and code-server $CODE_SERVER_VERSION into $dir (once; a few minutes)" >&2
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
# Recent npm runs a dependency's install scripts only when allowed here: code-server's
# postinstall installs and builds VS Code's own modules (lib/vscode), which list theirs.
cat >package.json <<EOF
{ "private": true, "allowScripts": { "code-server": true, "argon2": true } }
EOF
log="$dir/install.log"
# npm failing to reach the registry means the install is impossible here (exit 2), not broken
unreachable() {
  grep -Eq "ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network request" "$log"
}
if ! npm install --no-audit --no-fund --loglevel=error "node-linux-$arch@$NODE_VERSION" >"$log" 2>&1; then
  cat "$log" >&2
  echo "install.sh: npm could not install node-linux-$arch@$NODE_VERSION" >&2
  if unreachable; then exit 2; fi
  exit 1
fi
node_home="$dir/node_modules/node-linux-$arch"
# code-server's postinstall checks the Node in npm's user agent (v24) and compiles with node-gyp:
# npm runs on Node 24 here, and node-gyp takes the headers from the package (never a download)
if ! PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home" \
  npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >>"$log" 2>&1; then
  tail -60 "$log" >&2
  echo "install.sh: npm could not install code-server@$CODE_SERVER_VERSION (log: $log)" >&2
  if unreachable; then exit 2; fi
  exit 1
fi
entry="$dir/node_modules/code-server/out/node/entry.js"
# (its config file and logs go to the cache, not the user's home)
if ! version="$(XDG_CONFIG_HOME="$dir/.xdg" XDG_DATA_HOME="$dir/.xdg" "$node_home/bin/node" "$entry" --version 2>&1 | tail -1)"; then
  echo "$version" >&2
  echo "install.sh: the installed code-server does not run" >&2
  exit 1
fi
if [ ! -e "$dir/node_modules/code-server/lib/vscode/node_modules/node-pty" ]; then
  tail -60 "$log" >&2
  echo "install.sh: code-server's postinstall did not install VS Code's modules (lib/vscode)" >&2
  exit 1
fi
echo "install.sh: code-server $version" >&2
touch "$dir/.installed"
echo "$dir"
