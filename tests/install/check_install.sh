#!/usr/bin/env bash
# check_install.sh BUILD_DIR SOURCE_DIR: installs tapeflow into a temporary prefix and
# builds a small consumer twice, with find_package(tapeflow) and with pkg-config, and runs
# both: what an application embedding the library does.
set -euo pipefail
build="$1" src="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# 1. CMake package
cmake -S "$src/tests/install/consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cm/consumer"
# 2. pkg-config
libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n 1)
export PKG_CONFIG_PATH="$libdir"
cc -std=c11 "$src/tests/install/consumer/consumer.c" -o "$tmp/pc_consumer" \
   $(pkg-config --cflags --libs tapeflow) -Wl,-rpath,"$(dirname "$libdir")"
"$tmp/pc_consumer"
echo "ok: find_package and pkg-config consumers built and ran"
