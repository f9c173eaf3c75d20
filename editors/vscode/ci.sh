#!/usr/bin/env bash
# CI for the VS Code extension: install (npm ci), type-check, build (esbuild), the node tests
# against the real `tether acp` and the ACP test double, the panel in headless Chromium
# (screenshots in artifacts/), package the .vsix (out/tether.vsix; `vscode:prepublish` builds),
# then run that .vsix in real VS Code: code-server from npm, on Node 24 from npm, installed once
# into .cache/ by test/code-server/install.sh (screenshots in out/screenshots/). Offline apart
# from npm. Needs Node >= 20, /usr/bin/chromium (apt-get install -y chromium), make, g++ and
# libkrb5-dev (code-server's native modules), and the repository's .venv (or TETHER_PYTHON) with
# tether's dependencies. With CI=true (or TETHER_REQUIRE_CODE_SERVER=1) a code-server that cannot
# be installed fails the run; elsewhere only an impossible install (say, no libkrb5-dev) skips.
set -euo pipefail
cd "$(dirname "$0")"
REPO="$(cd ../.. && pwd)"
export TETHER_PYTHON="${TETHER_PYTHON:-$REPO/.venv/bin/python}"
if [ ! -x "$TETHER_PYTHON" ]; then
  echo "ci.sh: $TETHER_PYTHON not found: create the venv first (see README.md) or set TETHER_PYTHON" >&2
  exit 1
fi
node --version

npm ci --no-audit --no-fund
npx tsc --noEmit -p .
node build.mjs
rm -rf artifacts && mkdir -p artifacts
NODE_PATH=test/stubs node --test test/*.test.mjs test/chromium/*.test.mjs

rm -f out/tether.vsix
npx vsce package --no-dependencies --allow-missing-repository --out out/tether.vsix
# the package holds the bundles and the manifest, and nothing from the tests
listing="$(python3 -m zipfile -l out/tether.vsix)"
for f in extension/out/extension.js extension/out/webview.js extension/out/webview.css extension/package.json extension/media/tether.svg; do
  grep -q "^$f " <<<"$listing" || { echo "ci.sh: $f is missing from the .vsix" >&2; exit 1; }
done
if grep -Eq "extension/(test|src|node_modules)/|testing\.js" <<<"$listing"; then
  echo "ci.sh: the .vsix holds test or source files" >&2
  exit 1
fi
echo "ci.sh: packaged $(du -h out/tether.vsix | cut -f1) out/tether.vsix"

# the packaged extension in code-server, driven by Playwright on /usr/bin/chromium
node --test test/code-server/*.test.mjs
