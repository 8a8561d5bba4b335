#!/usr/bin/env bash
# Build the Debian package of the HAProxy module, haproxy-robotgate, from
# the module haproxy/build.sh builds (debug info stripped), and print its
# path as the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
so="$(bash haproxy/build.sh | tail -n 1)"
mkdir -p target/haproxy-package
objcopy --strip-debug "$so" target/haproxy-package/robotgate.so
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
deb="${CARGO_TARGET_DIR:-target}/debian/haproxy-robotgate.deb"
cargo deb -p robotgate-haproxy --no-build --output "$deb" 2>&1 | grep -v "is detected as Cargo target dir\|will not be built" >&2 || true
[ -f "$deb" ]
echo "$PWD/$deb"
