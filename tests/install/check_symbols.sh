#!/usr/bin/env bash
# check_symbols.sh SHARED_LIB STATIC_LIB: the shared library exports only tfl_ symbols, and
# no object of the library has writable global state (.data or .bss symbols): DESIGN.md's
# "no mutable global state anywhere in the library".
set -euo pipefail
shared="$1" static="$2"
bad=$(nm -D --defined-only "$shared" | awk '{print $3}' | grep -v '^tfl_' || true)
if [ -n "$bad" ]; then echo "exported symbols without the tfl_ prefix:"; echo "$bad"; exit 1; fi
count=$(nm -D --defined-only "$shared" | grep -c ' T tfl_')
[ "$count" -gt 50 ] || { echo "only $count tfl_ functions exported"; exit 1; }
# The CUDA backend's objects (nvcc) carry the runtime's kernel registration: the fat binary
# handle and one static handle per kernel stub, written once when the library is loaded.
# They are the CUDA runtime's, not tapeflow state, and are the only exceptions.
writable=$(objdump -t "$static" | awk '/^[0-9a-f]+ / && ($4 == ".data" || $4 == ".bss") && $NF !~ /^\./ {print $NF}' |
  grep -v -E '__cudaFatCubinHandle|__device_stub__' || true)
if [ -n "$writable" ]; then echo "writable global state in the library:"; echo "$writable"; exit 1; fi
echo "ok: $count tfl_ functions exported, no other symbol, no writable globals"
