#!/usr/bin/env bash
# Debian's Chromium for the dashboard's browser tests (pytest -m browser). Idempotent: does nothing
# when /usr/bin/chromium exists. Never runs `playwright install`: the tests drive this Chromium
# through the playwright package's bundled driver. Exits non-zero, saying why, when it cannot install.
set -euo pipefail
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
    echo "chromium present: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "chromium is missing and installing it needs root (apt-get install -y chromium)" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium is missing and this system has no apt-get" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
echo "installed: $("$CHROMIUM" --version)"
