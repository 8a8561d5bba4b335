#!/usr/bin/env bash
# Regenerates the README's pictures, docs/report.png and docs/status.png:
# runs the browser tests (tests/pages.rs), which drive real headless
# Chromium over a real proxy's violation log and status page, and keeps
# their screenshots. Installs Debian's chromium if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! [ -x /usr/bin/chromium ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
mkdir -p docs
ROBOTGATE_SCREENSHOTS="$PWD/docs" cargo test --release --test pages
ls -l docs/report.png docs/status.png
