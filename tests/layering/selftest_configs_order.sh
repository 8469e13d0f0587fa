#!/usr/bin/env bash
# selftest_configs_order.sh CHECKER SOURCE_DIR: check_configs_order.sh catches what it is for. On
# a copy of configs/ it passes; then a call up (arena.c into config.c's tfl_config_load), a
# call sideways (diag.c into schema.c, the same level) and a file no level lists fail, each
# named. Calls in comments and strings do not count.
set -euo pipefail
checker="$1" src="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/configs"
cp "$src"/configs/*.c "$tmp/configs/"
bash "$checker" "$tmp" >/dev/null || { echo "configs/ as it is was rejected"; bash "$checker" "$tmp"; exit 1; }
printf '%s\n' '/* tfl__config_rules( in a comment */' \
  'void tfl__arena_probe(void) { (void)"tfl__config_graph("; tfl_config_load(0, 0, 0, 0, 0); }' \
  >> "$tmp/configs/arena.c"
printf '%s\n' 'void tfl__diag_probe(void) { tfl__optim_defaults(0, 0); }' >> "$tmp/configs/diag.c"
printf '%s\n' 'void tfl__stray(void) { }' > "$tmp/configs/stray.c"
if out=$(bash "$checker" "$tmp"); then echo "a module calling upwards passed"; exit 1; fi
for want in 'configs/arena.c (level 0) calls tfl_config_load of configs/config.c (level 6)' \
            'configs/diag.c (level 1) calls tfl__optim_defaults of configs/schema.c (level 1)' \
            'configs/stray.c is in no level'; do
  grep -qF "$want" <<<"$out" || { echo "missing: $want"; echo "$out"; exit 1; }
done
[ "$(grep -c . <<<"$out")" -eq 3 ] || { echo "more than the three problems were named:"; echo "$out"; exit 1; }
echo "ok: check_configs_order.sh rejects calls up and sideways, and files in no level"
