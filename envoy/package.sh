#!/usr/bin/env bash
# Build the Debian package of the Envoy module, envoy-robotgate, from the module
# envoy/build.sh builds (debug info stripped), and print its path as the last line.
set -euo pipefail
exec bash "$(dirname "$0")/../scripts/module-deb.sh" robotgate-envoy envoy/build.sh envoy-package librobotgate_envoy.so envoy-robotgate
