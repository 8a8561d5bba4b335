#!/usr/bin/env bash
# Build ngx_http_robotgate_module.so for the nginx installed from Debian, and
# print its path as the last line.
#
#   bash nginx/build.sh
#
# The module must be built against the headers and configure flags of the
# nginx that loads it (`load_module` checks the signature): nginx-dev ships
# that nginx's source and flags (/usr/share/nginx/src, conf_flags). Missing
# Debian packages are installed (nginx, nginx-dev, and what its configure
# and bindgen need). The configured source is kept in target/nginx-src.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in nginx nginx-dev libclang-dev libpcre2-dev libssl-dev zlib1g-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "nginx/build.sh: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${need[@]}" >&2
fi

src=target/nginx-src
version=$(dpkg-query -W -f='${Version}' nginx-dev)
if [ "$(cat "$src/.robotgate-configured" 2>/dev/null)" != "$version" ]; then
  rm -rf "$src"
  mkdir -p target
  cp -r /usr/share/nginx/src "$src"
  # shellcheck disable=SC1091
  (cd "$src" && . ./conf_flags && chmod +x configure && ./configure "${NGX_CONF_FLAGS[@]}" >&2)
  echo "$version" > "$src/.robotgate-configured"
fi

# The `nginx` profile: release with whole-program optimisation (Cargo.toml),
# laid out by the profile of nginx/pgo/train.sh when there is one (the code
# requests run kept together; ROBOTGATE_PGO=off builds without it).
# An LLVM older than the one that wrote the profile cannot read it: then
# the module is built without it, and says so.
flags=${RUSTFLAGS:-}
if [ "${ROBOTGATE_PGO:-on}" != off ] && [ -f nginx/pgo/module.profdata ]; then
  llvm=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
  if [ "${llvm:-0}" -ge "$(cat nginx/pgo/module.llvm 2>/dev/null || echo 0)" ]; then
    # Named by its content: Cargo rebuilds when the flags change, not when
    # a file they name does.
    sum=$(sha256sum nginx/pgo/module.profdata | cut -c1-16)
    pgo="${CARGO_TARGET_DIR:-target}/pgo"
    case "$pgo" in /*) ;; *) pgo="$PWD/$pgo" ;; esac
    mkdir -p "$pgo"
    [ -f "$pgo/module-$sum.profdata" ] || cp nginx/pgo/module.profdata "$pgo/module-$sum.profdata"
    flags="$flags -Cprofile-use=$pgo/module-$sum.profdata"
  else
    echo "nginx/build.sh: rustc's LLVM $llvm is older than the profile's; built without it" >&2
  fi
fi
RUSTFLAGS="$flags" NGINX_SOURCE_DIR="$PWD/$src" NGINX_BUILD_DIR="$PWD/$src/objs" \
  cargo build --profile nginx -p robotgate-nginx >&2
# Copied aside, then renamed: an nginx loading the module meanwhile never reads half a file.
out="${CARGO_TARGET_DIR:-target}/nginx"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cp "$out/libngx_http_robotgate_module.so" "$out/ngx_http_robotgate_module.so.new"
mv -f "$out/ngx_http_robotgate_module.so.new" "$out/ngx_http_robotgate_module.so"
echo "$out/ngx_http_robotgate_module.so"
