#!/usr/bin/env bash
# check_order.sh [--all] SOURCE_DIR FOLDER LEVEL0 LEVEL1 ...: the files of FOLDER read from the bottom
# up. Each LEVEL argument names the files of one level (space-separated, relative to FOLDER),
# the lowest first; a file calls only functions defined in files of a lower level, never one
# of its own level or above. It fails naming each call that goes sideways or up. Functions are
# those named tfl_* defined (not static) at the start of a line; comments and strings are
# skipped. Calls to files that are in no level are not checked; with --all, every .c file of
# FOLDER must be in a level (a new file gets its place in the order).
set -euo pipefail
all=0
[ "${1:-}" = --all ] && { all=1; shift; }
src="$1" dir="$2"
shift 2
[ "$#" -gt 0 ] || { echo "check_order.sh: no levels given for $dir"; exit 1; }
command -v perl >/dev/null || { echo "check_order.sh needs perl"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A level
files=()
l=0
for lv in "$@"; do
  for f in $lv; do
    [ -f "$src/$dir/$f" ] || { echo "$dir/$f is missing"; exit 1; }
    [ -z "${level[$f]:-}" ] || { echo "$dir/$f is in two levels"; exit 1; }
    level[$f]=$l
    files+=("$f")
  done
  l=$((l + 1))
done
bad=0
if [ "$all" -eq 1 ]; then
  for path in "$src/$dir"/*.c; do
    f=$(basename "$path")
    [ -n "${level[$f]:-}" ] || { echo "$dir/$f is in no level"; bad=1; }
  done
fi
# code FILE: the file without comments and string literals
code() {
  perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{"(?:\\.|[^"\\\n])*"}{""}g' "$1"
}
# definitions: "name file"
for f in "${files[@]}"; do
  code "$src/$dir/$f" |
    perl -ne 'print "$1\n" if /^(?!static\b)[A-Za-z_][^;=(]*?\b(tfl_\w+)\s*\([^;]*$/' |
    sed "s|\$| $f|"
done | sort -u > "$tmp/defs"
calls=0
for f in "${files[@]}"; do
  while read -r name; do
    owner=$(awk -v n="$name" '$1 == n {print $2; exit}' "$tmp/defs")
    [ -n "$owner" ] && [ "$owner" != "$f" ] || continue
    calls=$((calls + 1))
    if [ "${level[$owner]}" -ge "${level[$f]}" ]; then
      echo "$dir/$f (level ${level[$f]}) calls $name of $dir/$owner (level ${level[$owner]})"
      bad=1
    fi
  done < <(code "$src/$dir/$f" | perl -ne 'print "$1\n" while /\b(tfl_\w+)\s*\(/g' | sort -u)
done
[ "$(wc -l < "$tmp/defs")" -gt 0 ] || { echo "no functions found under $src/$dir"; exit 1; }
[ "$bad" -eq 0 ] && echo "ok: ${#files[@]} files of $dir call downwards only ($calls calls between them)"
exit "$bad"
