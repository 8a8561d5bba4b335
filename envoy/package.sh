#!/usr/bin/env bash
# Build the Debian package of the Envoy module, envoy-robotgate, from the
# module envoy/build.sh builds (debug info stripped), and print its path as
# the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
so="$(bash envoy/build.sh | tail -n 1)"
mkdir -p target/envoy-package
objcopy --strip-debug "$so" target/envoy-package/librobotgate_envoy.so
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
deb="${CARGO_TARGET_DIR:-target}/debian/envoy-robotgate.deb"
cargo deb -p robotgate-envoy --no-build --output "$deb" 2>&1 | grep -v "is detected as Cargo target dir\|will not be built" >&2 || true
[ -f "$deb" ]
echo "$PWD/$deb"
