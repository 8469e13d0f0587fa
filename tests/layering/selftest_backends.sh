#!/usr/bin/env bash
# selftest_backends.sh CHECKER: check_backends.sh catches what it is for: a file outside a
# backend's folder that includes its header or names its private functions fails, naming
# the line; backends.c and the backend's own files may; a clean tree passes.
set -euo pipefail
checker="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/framework/cpu" "$tmp/framework/fake" "$tmp/optim" "$tmp/tests/x"
printf '#include "cpu.h"\nconst tfl__backend tfl__cpu_backend = {0};\nvoid tfl__cpu_gemm(void);\n' \
  > "$tmp/framework/cpu/cpu_device.c"
printf '/* cpu */\n' > "$tmp/framework/cpu/cpu.h"
printf 'const tfl__backend tfl__fake_backend = {0};\n' > "$tmp/framework/fake/fake.c"
printf '#include "cpu/cpu.h"\nextern const tfl__backend tfl__cpu_backend;\n' > "$tmp/framework/backends.c"
printf '#include "internal.h"\nvoid f(void) { tfl__cpu(ctx); }\n/* tfl__cpu_gemm in a comment */\n' \
  > "$tmp/framework/tensor.c"
printf 'extern const tfl__backend tfl__cpu_backend; /* a test registration list */\n' \
  > "$tmp/tests/x/reg.c"
bash "$checker" "$tmp" >/dev/null || { echo "a clean tree was rejected"; bash "$checker" "$tmp"; exit 1; }
printf '#include "cpu/cpu.h"\n' > "$tmp/optim/k.c"
printf 'int x;\nvoid g(void) { tfl__fake_thing(); }\n' > "$tmp/tests/x/t.c"
if out=$(bash "$checker" "$tmp"); then echo "a bad tree passed"; exit 1; fi
for want in 'optim/k.c:1: includes a header of the cpu backend' \
            'tests/x/t.c:2: names a private function or table of the fake backend'; do
  grep -qF "$want" <<<"$out" || { echo "missing: $want"; echo "$out"; exit 1; }
done
echo "ok: check_backends.sh rejects backend headers and names outside the backend"
