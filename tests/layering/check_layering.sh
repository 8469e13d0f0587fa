#!/usr/bin/env bash
# check_layering.sh SOURCE_DIR: the library's modules depend downwards only (DESIGN.md):
# framework <- tape <- optim <- layers <- configs. In their sources and headers it fails on
#   - a relative include that climbs ("../"): a module's private headers are reached through
#     the module's INTERFACE target (tfl_framework_private, ...), by their path from the
#     module's folder;
#   - an include of a header of a module above the file's own (private "x_internal.h" or
#     public <tapeflow/x.h>), and of the umbrella <tapeflow/tapeflow.h>, which includes all;
#   - across the boundary of a framework sub-module (framework/io, framework/dist): a file of
#     the framework outside it that includes one of its headers (the core and the other
#     sub-modules never depend on it), and a file of it that includes a private header of the
#     framework other than its own and the core's declared API it may use (io/:
#     core_api/core_api.h; dist/: the headers of core_api/), such as internal.h or ops/op.h;
#   - in tape/, optim/, layers/ and configs/: an include of a private header of the framework's core
#     other than those of core_api/ (the core's declared API for the modules: module_api.h,
#     op_api.h, optim_api.h), and of a sub-module's header other than the one it declares for
#     them, <name>_api.h (dist/dist_api.h, io/io_api.h).
# The build enforces the same (a module gets only the include folders of those below it);
# this names the offending line when someone adds an include folder by hand.
set -euo pipefail
src="$1"
modules=()
for m in framework tape optim layers configs; do [ -d "$src/$m" ] && modules+=("$m"); done
level() { local i; for i in "${!modules[@]}"; do [ "${modules[$i]}" = "$1" ] && echo "$i" && return; done; echo -1; }
# owner HEADER QUOTED DIR: the module a header belongs to (empty: system or generated).
owner() {
  local h="$1" quoted="$2" dir="$3" m
  if [ "$quoted" = 1 ] && [ -f "$dir/$h" ]; then
    m="${dir#"$src"/}"; echo "${m%%/*}"; return
  fi
  for m in "${modules[@]}"; do
    if [ "$quoted" = 1 ] && [ -f "$src/$m/$h" ]; then echo "$m"; return; fi
    if [ "$quoted" = 0 ] && [ -f "$src/$m/include/$h" ]; then echo "$m"; return; fi
  done
}
# The framework's sub-modules, and the core headers each may include (a pattern).
submodules=()
for d in framework/io framework/dist; do [ -d "$src/$d" ] && submodules+=("$d"); done
declare -A core_allowed=([framework/io]=framework/core_api/core_api.h
                         [framework/dist]='framework/core_api/*')
# The modules above the core that see only its declared API (core_api/).
declared_only=(tape optim layers configs)
# resolve HEADER DIR: the file a quoted include names, relative to $src (the including file's
# folder first, then framework/ and framework/core_api/, the include folders of the library's
# targets), or nothing.
resolve() {
  local h="$1" dir="$2" c
  for c in "$dir/$h" "$src/framework/$h" "$src/framework/core_api/$h"; do
    [ -f "$c" ] && { c=$(cd "$(dirname "$c")" && pwd -P)/$(basename "$c"); echo "${c#"$srcp"/}"; return; }
  done
  return 0
}
srcp=$(cd "$src" && pwd -P)
# submodule_of PATH: the sub-module folder PATH lies in, or nothing.
submodule_of() {
  local d
  for d in "${submodules[@]}"; do [[ "$1" == "$d"/* ]] && { echo "$d"; return; }; done
  return 0
}
bad=0 checked=0
for m in "${modules[@]}"; do
  lm=$(level "$m")
  while IFS= read -r f; do
    [ "$f" = "$src/framework/include/tapeflow/tapeflow.h" ] && continue   # the umbrella
    checked=$((checked + 1))
    while IFS= read -r line; do
      n="${line%%:*}" inc="${line#*:}"
      if [[ "$inc" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
        h="${BASH_REMATCH[1]}" q=1
      elif [[ "$inc" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<(tapeflow/[^\>]+)\> ]]; then
        h="${BASH_REMATCH[1]}" q=0
      else
        continue
      fi
      rel="${f#"$src"/}"
      if [[ "$h" == ../* || "$h" == */../* ]]; then
        echo "$rel:$n: relative include climbs out of its folder: $h"; bad=1; continue
      fi
      if [ "$h" = tapeflow/tapeflow.h ]; then
        echo "$rel:$n: the umbrella header is for applications, not the library: $h"; bad=1
        continue
      fi
      if [ "$m" = framework ] && [ "$q" = 1 ] && [ "${#submodules[@]}" -gt 0 ]; then
        r=$(resolve "$h" "$(dirname "$f")")
        sf=$(submodule_of "$rel") sr=$(submodule_of "$r")
        if [ -n "$r" ] && [ -n "$sr" ] && [ "$sr" != "$sf" ]; then
          echo "$rel:$n: includes $h of ${sr#framework/}/, a framework sub-module: the core and" \
               "the other sub-modules never depend on it"
          bad=1; continue
        fi
        # shellcheck disable=SC2053 # core_allowed holds patterns
        if [ -n "$r" ] && [ -n "$sf" ] && [ "$sr" != "$sf" ] && [[ "$r" != ${core_allowed[$sf]} ]]
        then
          echo "$rel:$n: ${sf#framework/}/ includes $h, a private header of the framework's" \
               "core: it may use only ${core_allowed[$sf]#framework/} and the public headers"
          bad=1; continue
        fi
      fi
      if [[ " ${declared_only[*]} " == *" $m "* ]] && [ "$q" = 1 ]; then
        r=$(resolve "$h" "$(dirname "$f")")
        sr=$(submodule_of "$r")
        if [ -n "$sr" ] && [ "$r" != "$sr/${sr#framework/}_api.h" ]; then
          echo "$rel:$n: $m includes $h, a private header of ${sr#framework/}/: it may use only" \
               "${sr#framework/}/${sr#framework/}_api.h, the sub-module's declared API"
          bad=1; continue
        fi
        if [[ "$r" == framework/* && "$r" != framework/core_api/* && -z "$sr" ]]; then
          echo "$rel:$n: $m includes $h, a private header of the framework's core: it may use" \
               "only the headers of core_api/, the core's declared API"
          bad=1; continue
        fi
      fi
      o=$(owner "$h" "$q" "$(dirname "$f")")
      [ -n "$o" ] || continue
      lo=$(level "$o")
      if [ "$lo" -gt "$lm" ]; then
        echo "$rel:$n: $m includes $h of $o, a module above it"; bad=1
      fi
    done < <(grep -n '#[[:space:]]*include' "$f" || true)
  done < <(find "$src/$m" \( -name '*.c' -o -name '*.h' \) -not -path '*/build*' | sort)
done
[ "$checked" -gt 0 ] || { echo "no library sources found under $src"; exit 1; }
[ "$bad" -eq 0 ] && echo "ok: $checked files of ${modules[*]} include only their own and lower modules' headers"
exit "$bad"
