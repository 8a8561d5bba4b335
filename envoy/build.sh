#!/usr/bin/env bash
# Build librobotgate_envoy.so, robotgate's Envoy dynamic module, and print
# its path as the last line.
#
#   bash envoy/build.sh
#
# Nothing of Envoy is needed to build it: the module declares the part of
# Envoy's dynamic-module ABI it calls itself (envoy/src/abi.rs, Envoy 1.40's
# abi.h), and Envoy supplies those functions when it loads the module. Envoy
# loads `lib<name>.so` for `dynamic_module_config: { name: robotgate_envoy }`
# from the directory ENVOY_DYNAMIC_MODULES_SEARCH_PATH names: the module is
# copied into a directory of its own, target/envoy/, for that.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p robotgate-envoy >&2
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
out="$target/envoy"
mkdir -p "$out"
# Copied aside, then renamed: an Envoy loading the module meanwhile never reads half a file.
cp "$target/release/librobotgate_envoy.so" "$out/librobotgate_envoy.so.new"
mv -f "$out/librobotgate_envoy.so.new" "$out/librobotgate_envoy.so"
echo "$out/librobotgate_envoy.so"
