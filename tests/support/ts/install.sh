#!/bin/sh
# Install the pinned TypeScript SDK test client (tests/support/ts) from package-lock.json.
set -eu
cd "$(dirname "$0")"
exec npm ci --no-audit --no-fund
