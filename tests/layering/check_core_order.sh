#!/usr/bin/env bash
# check_core_order.sh SOURCE_DIR: the framework's core reads from the bottom up. Its files
# are in levels (framework/README.md):
#   0 base.c (errors, logging, host memory)
#   1 shape.c handles.c collections.c allocator.c
#   2 device.c
#   3 tensor.c
#   4 context.c
# and a file calls only functions defined in files of a lower level, never one of its own
# level or above. It fails naming each call that goes sideways or up. Functions are those
# named tfl_* defined (not static) at the start of a line; comments and strings are skipped.
set -euo pipefail
src="$1"
levels=("base.c" "shape.c handles.c collections.c allocator.c" "device.c" "tensor.c" "context.c")
command -v perl >/dev/null || { echo "check_core_order.sh needs perl"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A level
files=()
for l in "${!levels[@]}"; do
  for f in ${levels[$l]}; do
    [ -f "$src/framework/$f" ] || { echo "framework/$f is missing"; exit 1; }
    level[$f]=$l
    files+=("$f")
  done
done
# code FILE: the file without comments and string literals
code() {
  perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{"(?:\\.|[^"\\\n])*"}{""}g' "$1"
}
# definitions: "name file"
for f in "${files[@]}"; do
  code "$src/framework/$f" |
    perl -ne 'print "$1\n" if /^(?!static\b)[A-Za-z_][^;=(]*?\b(tfl_\w+)\s*\([^;]*$/' |
    sed "s|\$| $f|"
done | sort -u > "$tmp/defs"
bad=0 calls=0
for f in "${files[@]}"; do
  while read -r name; do
    owner=$(awk -v n="$name" '$1 == n {print $2; exit}' "$tmp/defs")
    [ -n "$owner" ] && [ "$owner" != "$f" ] || continue
    calls=$((calls + 1))
    if [ "${level[$owner]}" -ge "${level[$f]}" ]; then
      echo "framework/$f (level ${level[$f]}) calls $name of framework/$owner (level ${level[$owner]})"
      bad=1
    fi
  done < <(code "$src/framework/$f" | perl -ne 'print "$1\n" while /\b(tfl_\w+)\s*\(/g' | sort -u)
done
[ "$(wc -l < "$tmp/defs")" -gt 0 ] || { echo "no functions found under $src/framework"; exit 1; }
[ "$bad" -eq 0 ] && echo "ok: ${#files[@]} files of the framework's core call downwards only ($calls calls between them)"
exit "$bad"
