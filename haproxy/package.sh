#!/usr/bin/env bash
# Build the Debian package of the HAProxy module, haproxy-robotgate, from the module
# haproxy/build.sh builds (debug info stripped), and print its path as the last line.
set -euo pipefail
exec bash "$(dirname "$0")/../scripts/module-deb.sh" robotgate-haproxy haproxy/build.sh haproxy-package robotgate.so haproxy-robotgate
