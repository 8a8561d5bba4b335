#!/usr/bin/env bash
# Build robotgate.so, robotgate's native Lua module for HAProxy, and print
# its path as the last line.
#
#   bash haproxy/build.sh
#
# Nothing of HAProxy's or Lua's is needed to build it: mlua's module mode
# declares Lua 5.3's C API itself, and HAProxy (built with USE_LUA=1, as
# Debian's is: `haproxy -vv` says "Built with Lua version : Lua 5.3") supplies
# those functions when its Lua loads the module. Lua's `require "robotgate"`
# looks for `robotgate.so` in `package.cpath`: the module is copied into a
# directory of its own, target/haproxy/, under that name, for
# `lua-prepend-path <dir>/?.so cpath`.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p robotgate-haproxy >&2
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
out="$target/haproxy"
mkdir -p "$out"
# Copied aside, then renamed: an HAProxy loading the module meanwhile never reads half a file.
cp "$target/release/librobotgate_haproxy.so" "$out/robotgate.so.new"
mv -f "$out/robotgate.so.new" "$out/robotgate.so"
echo "$out/robotgate.so"
