#!/usr/bin/env bash
# Build the Debian package of the nginx module, libnginx-mod-http-robotgate,
# from the module nginx/build.sh builds (debug info stripped), and print its
# path as the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
so="$(bash nginx/build.sh | tail -n 1)"
mkdir -p target/nginx-package
objcopy --strip-debug "$so" target/nginx-package/ngx_http_robotgate_module.so
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
deb="${CARGO_TARGET_DIR:-target}/debian/libnginx-mod-http-robotgate.deb"
cargo deb -p robotgate-nginx --no-build --output "$deb" 2>&1 | grep -v "is detected as Cargo target dir\|will not be built" >&2 || true
[ -f "$deb" ]
echo "$PWD/$deb"
