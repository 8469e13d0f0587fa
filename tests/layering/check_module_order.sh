#!/usr/bin/env bash
# check_module_order.sh SOURCE_DIR MODULE: a module's files read from the bottom up. Each
# module listed here has its files in levels (the module's README.md says what each holds), and
# a file calls only functions defined in files of a lower level, never one of its own level or
# above. It fails naming each call that goes sideways or up, and on a file of the module that
# no level lists. Functions are those named tfl_* defined (not static) at the start of a line;
# comments and strings are skipped. (The framework's core has check_core_order.sh.)
set -euo pipefail
src="$1" module="$2"
case "$module" in
  configs)
    levels=("arena.c"
            "diag.c schema.c events_read.c"
            "yaml_doc.c plot_data.c"
            "override.c resolve.c plot_svg.c"
            "rules.c graph.c"
            "build.c emit.c"
            "config.c"
            "diff.c run_parallel.c"
            "run.c"
            "run_generate.c run_tools.c") ;;
  *) echo "check_module_order.sh: no levels for module '$module'"; exit 2 ;;
esac
command -v perl >/dev/null || { echo "check_module_order.sh needs perl"; exit 1; }
dir="$src/$module"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A level
files=()
for l in "${!levels[@]}"; do
  for f in ${levels[$l]}; do
    [ -f "$dir/$f" ] || { echo "$module/$f is missing"; exit 1; }
    level[$f]=$l
    files+=("$f")
  done
done
bad=0
for path in "$dir"/*.c; do
  f=$(basename "$path")
  [ -n "${level[$f]:-}" ] || { echo "$module/$f is in no level of check_module_order.sh"; bad=1; }
done
# code FILE: the file without comments and string literals
code() {
  perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{"(?:\\.|[^"\\\n])*"}{""}g' "$1"
}
# definitions: "name file"
for f in "${files[@]}"; do
  code "$dir/$f" |
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
      echo "$module/$f (level ${level[$f]}) calls $name of $module/$owner (level ${level[$owner]})"
      bad=1
    fi
  done < <(code "$dir/$f" | perl -ne 'print "$1\n" while /\b(tfl_\w+)\s*\(/g' | sort -u)
done
[ "$(wc -l < "$tmp/defs")" -gt 0 ] || { echo "no functions found under $dir"; exit 1; }
[ "$bad" -eq 0 ] && echo "ok: the ${#files[@]} files of $module/ call downwards only ($calls calls between them)"
exit "$bad"
