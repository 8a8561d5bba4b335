#!/usr/bin/env bash
# The Debian package of one of robotgate's in-process modules, from the
# module its build script builds (debug info stripped), its path printed
# as the last line. Each module's package.sh calls it:
#
#   bash scripts/module-deb.sh CRATE BUILD_SCRIPT DIR FILE PACKAGE
#
# CRATE: the Cargo package whose [package.metadata.deb] names the files;
# BUILD_SCRIPT: prints the module's path last; DIR: target/DIR holds the
# stripped module as FILE (the metadata's asset); PACKAGE: the .deb's name.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 5 ] || { echo "usage: $0 CRATE BUILD_SCRIPT DIR FILE PACKAGE" >&2; exit 2; }
crate=$1 build=$2 dir=$3 file=$4 package=$5
so="$(bash "$build" | tail -n 1)"
mkdir -p "target/$dir"
objcopy --strip-debug "$so" "target/$dir/$file"
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
deb="${CARGO_TARGET_DIR:-target}/debian/$package.deb"
cargo deb -p "$crate" --no-build --output "$deb" 2>&1 | grep -v "is detected as Cargo target dir\|will not be built" >&2 || true
[ -f "$deb" ]
echo "$PWD/$deb"
