#!/usr/bin/env bash
# check_make_train.sh SRC: `make train` builds the library and the tapeflow program alone
# (the tests and benchmarks are `make test`'s): the commands it would run (make -n) build
# the target tapeflow_cli and no whole tree.
set -euo pipefail
src=$1
out=$(make -s -n -C "$src" train BUILD=/nonexistent/build JOBS=2 CONFIG=configs/xor.yaml)
fail() { echo "FAIL: $*" >&2; echo "$out" | sed 's/^/  /' >&2; exit 1; }
echo "$out" | grep -q -- "cmake --build /nonexistent/build -j 2 --target tapeflow_cli" ||
  fail "make train does not build the target tapeflow_cli"
if echo "$out" | grep -E -- "cmake --build /nonexistent/build -j 2 *$" >/dev/null; then
  fail "make train builds the whole tree"
fi
echo "$out" | grep -q -- "/nonexistent/build/examples/tapeflow train configs/xor.yaml" ||
  fail "make train does not train CONFIG"
echo ok
