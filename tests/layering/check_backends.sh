#!/usr/bin/env bash
# check_backends.sh SOURCE_DIR: device backends stay behind the device table (DESIGN.md,
# "Devices and placement"; framework/internal.h, "A backend"). A backend is a folder of
# framework/ whose sources define a `const tfl__backend tfl__<name>_backend` (framework/cpu,
# framework/cuda). Outside its own folder, no source of the library, the examples or the
# tests may
#   - include one of its headers ("cpu/cpu.h", "cpu/kernels.h", "cuda/...");
#   - name one of its private functions or tables (tfl__cpu_..., tfl__cuda_...);
# except framework/backends.c, the registration list. A registration list (backends.c, or a
# test's own list with a fake backend) may name tfl__<name>_backend, the backend's one
# entry point.
# tfl__cpu(ctx) (CPU:0, the host device every context has) is the framework's, not a backend's.
set -euo pipefail
src="$1"
backends=()
while IFS= read -r f; do
  d=$(dirname "$f"); d="${d#"$src"/framework/}"
  [[ "$d" == */* || "$d" == "$src"* ]] && continue
  [[ " ${backends[*]-} " == *" $d "* ]] || backends+=("$d")
done < <(grep -rlE --include='*.c' --include='*.cu' --include='*.cpp' \
           'const[[:space:]]+tfl__backend[[:space:]]+tfl__[a-z0-9]+_backend[[:space:]]*=' \
           "$src/framework" 2>/dev/null | sort)
[ "${#backends[@]}" -gt 0 ] || { echo "no backend found under $src/framework"; exit 1; }
bad=0 checked=0
while IFS= read -r f; do
  rel="${f#"$src"/}"
  [ "$rel" = framework/backends.c ] && continue
  checked=$((checked + 1))
  for b in "${backends[@]}"; do
    [[ "$rel" == framework/"$b"/* ]] && continue
    # headers of the backend's folder, by their path from framework/
    while IFS= read -r line; do
      echo "$rel:${line%%:*}: includes a header of the $b backend (framework/$b/): use the device table"
      bad=1
    done < <(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"$b/" "$f" || true)
    # the backend's private names (tfl__cpu_gemm, tfl__cpu_opt_kernels, ...)
    while IFS= read -r line; do
      echo "$rel:${line%%:*}: names a private function or table of the $b backend: ${line#*:}"
      bad=1
    done < <(grep -nE "\btfl__${b}_[a-z0-9_]+" "$f" | grep -vE '^[0-9]+:[[:space:]]*(/?\*|//)' |
             sed -E "s/\btfl__${b}_backend\b//g" | grep -E "\btfl__${b}_[a-z0-9_]+" || true)
  done
done < <(find "$src" \( -name build -o -name 'build-*' -o -name '.git' \) -prune -o \
           \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \) \
           -type f -print | sort)
[ "$checked" -gt 0 ] || { echo "no sources found under $src"; exit 1; }
[ "$bad" -eq 0 ] && echo "ok: $checked files; the backends (${backends[*]}) are reached only through the device table and backends.c"
exit "$bad"
