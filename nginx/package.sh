#!/usr/bin/env bash
# Build the Debian package of the nginx module, libnginx-mod-http-robotgate, from the module
# nginx/build.sh builds (debug info stripped), and print its path as the last line.
set -euo pipefail
exec bash "$(dirname "$0")/../scripts/module-deb.sh" robotgate-nginx nginx/build.sh nginx-package ngx_http_robotgate_module.so libnginx-mod-http-robotgate
