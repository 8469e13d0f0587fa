#!/usr/bin/env bash
# count_private.sh SOURCE_DIR: how much of the framework's private side each module above the
# framework's core reaches into. For tape/, optim/, layers/, configs/, framework/dist and
# framework/io it prints the number of distinct framework-private identifiers its sources and
# headers use:
#   names  - tfl__* functions, types and variables, TFL__* macros, and the other TFL_* macros
#            and enumerators, declared in a header of framework/ that is not public
#            (framework/include/ holds the public ones) and not in the module's own folder;
#   fields - members of structs declared in those headers, used as `->f` or `.f`; a member name
#            that some other struct (public, or of any module) also has is left out, so this
#            column is a lower bound;
#   beyond - names and fields outside the declared APIs (every one when the tree has none):
#            the core's, the headers of framework/core_api/, and each framework sub-module's,
#            framework/dist/dist_api.h and framework/io/io_api.h, with the framework headers
#            they include, directly or not (ops/op_list.h, opt_kernels.h, opt_elems.h,
#            io/crc32c.h, io/pb.h), never internal.h: what reaches into another module's
#            own side.
# Definitions come from Universal Ctags; comments and string literals are not counted.
# A measure, not a test: it exits 0 whatever the counts. `-v` lists the names, and those
# beyond.
set -euo pipefail
verbose=0
[ "${1:-}" = -v ] && { verbose=1; shift; }
src="${1:?usage: count_private.sh [-v] SOURCE_DIR}"
command -v ctags >/dev/null || { echo "count_private.sh needs Universal Ctags (ctags)"; exit 1; }
ctags --version 2>/dev/null | grep -q Universal || { echo "count_private.sh needs Universal Ctags"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src"

# defs FILES...: "name<TAB>kind<TAB>file<TAB>scope" for every definition in the files.
defs() {
  [ "$#" -gt 0 ] || return 0
  ctags -x --_xformat='%N	%K	%F	%{scope}' --kinds-C='+px' --language-force=C "$@" 2>/dev/null
}
# tokens FILES...: the identifiers (one a line, "->x"/".x" for member accesses) outside comments
# and string or character literals.
tokens() {
  [ "$#" -gt 0 ] || return 0
  perl -0777 -ne '
    s{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{"(?:\\.|[^"\\\n])*"}{""}g; s{'"'"'(?:\\.|[^'"'"'\\\n])*'"'"'}{0}g;
    while (/((?:->|\.)\s*)?\b([A-Za-z_][A-Za-z0-9_]*)/g) { print(($1 ? "." : ""), "$2\n"); }' "$@"
}

mapfile -t priv_headers < <(find framework \( -name '*.h' -o -name '*.cuh' \) \
  -not -path 'framework/include/*' -not -path '*/build*' | sort)
mapfile -t other_files < <(find framework tape optim layers configs \( -name '*.c' -o -name '*.h' \
  -o -name '*.cu' -o -name '*.cuh' \) -not -path '*/build*' 2>/dev/null | sort)

modules=()
for m in tape optim layers configs framework/dist framework/io; do [ -d "$m" ] && modules+=("$m"); done
printf '%-16s %6s %6s %6s %6s\n' module names fields total beyond
# the declared API's names and members
api=()
for h in framework/core_api/*.h framework/dist/dist_api.h framework/io/io_api.h; do
  [ -f "$h" ] && api+=("$h")
done
for ((i = 0; i < ${#api[@]}; i++)); do
  h=${api[$i]}
  while IFS= read -r inc; do
    for c in "$(dirname "$h")/$inc" "framework/core_api/$inc" "framework/$inc"; do
      [ -f "$c" ] || continue
      [ "$c" != framework/internal.h ] || { echo "$h includes internal.h: no declared API"; exit 1; }
      [[ " ${api[*]} " == *" $c "* ]] || api+=("$c")
      break
    done
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$h")
done
if [ "${#api[@]}" -gt 0 ]; then defs "${api[@]}" | cut -f1 | sort -u > "$tmp/api"; else : > "$tmp/api"; fi
for m in "${modules[@]}"; do
  # the private headers outside the module's folder
  hs=()
  for h in "${priv_headers[@]}"; do [[ "$h" == "$m"/* ]] || hs+=("$h"); done
  defs "${hs[@]}" > "$tmp/d"
  # names: tfl__/TFL_ identifiers (include guards, *_H, left out) that no public header declares
  defs framework/include/tapeflow/*.h | cut -f1 | sort -u > "$tmp/public"
  awk -F'\t' '$2 != "member" && $1 ~ /^(tfl__|TFL_)/ && $1 !~ /_H$/ {print $1}' "$tmp/d" |
    sort -u | comm -23 - "$tmp/public" > "$tmp/names"
  # fields: members of structs of those headers, minus member names of any other struct
  awk -F'\t' '$2 == "member" {print $1}' "$tmp/d" | sort -u > "$tmp/fields_all"
  others=()
  for f in "${other_files[@]}"; do
    [[ "$f" == framework/* && "$f" != framework/include/* && ( "$f" == *.h || "$f" == *.cuh ) ]] &&
      [[ "$f" != "$m"/* ]] && continue
    others+=("$f")
  done
  defs "${others[@]}" framework/include/tapeflow/*.h |
    awk -F'\t' '$2 == "member" {print $1}' | sort -u > "$tmp/fields_other"
  comm -23 "$tmp/fields_all" "$tmp/fields_other" > "$tmp/fields"
  mapfile -t fs < <(find "$m" \( -name '*.c' -o -name '*.h' \) -not -path '*/build*' | sort)
  # the module's own definitions do not count
  defs "${fs[@]}" | awk -F'\t' '$2 != "member" {print $1}' | sort -u > "$tmp/own"
  tokens "${fs[@]}" | sort -u > "$tmp/tok"
  grep -v '^\.' "$tmp/tok" | comm -12 - "$tmp/names" | comm -23 - "$tmp/own" > "$tmp/used_names"
  sed -n 's/^\.//p' "$tmp/tok" | sort -u | comm -12 - "$tmp/fields" > "$tmp/used_fields"
  n=$(wc -l < "$tmp/used_names") f=$(wc -l < "$tmp/used_fields")
  cat "$tmp/used_names" "$tmp/used_fields" | sort -u | comm -23 - "$tmp/api" > "$tmp/beyond"
  beyond=$(wc -l < "$tmp/beyond")
  printf '%-16s %6d %6d %6d %6d\n' "$m" "$n" "$f" $((n + f)) "$beyond"
  if [ "$verbose" = 1 ]; then
    echo "  names: $(tr '\n' ' ' < "$tmp/used_names")"
    echo "  fields: $(tr '\n' ' ' < "$tmp/used_fields")"
    echo "  beyond: $(tr '\n' ' ' < "$tmp/beyond")"
  fi
done
