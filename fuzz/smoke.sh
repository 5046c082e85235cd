#!/usr/bin/env bash
# CI smoke: every fuzz target of BUILD_DIR over its whole corpus and briefly
# beyond (SECONDS each, default 25). Fails on any crash, sanitizer report,
# timeout (-timeout=1) or out-of-memory (-rss_limit_mb=2048).
#   bash fuzz/smoke.sh BUILD_DIR [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: fuzz/smoke.sh BUILD_DIR [SECONDS]}
exec bash "$here/run.sh" "$build" "${2:-25}"
