#!/usr/bin/env bash
# selftest_core_order.sh CHECKER: check_core_order.sh catches what it is for: in a tree whose
# core files call downwards only it passes; a call up (device.c into context.c) and a call
# sideways (shape.c into handles.c, the same level) fail, each named. Calls in comments and
# strings do not count.
set -euo pipefail
checker="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/framework"
w() { printf '%b' "$2" > "$tmp/framework/$1"; }
w base.c 'tfl_status tfl__set_error(tfl_ctx *ctx, int code)\n{\n    return code;\n}\n'
w shape.c 'bool tfl__same_shape(int a)\n{\n    return tfl__set_error(0, a);\n}\n'
w handles.c 'void *tfl__obj_new(tfl_ctx *ctx,\n                   size_t size)\n{\n    return 0;\n}\n'
w collections.c 'void tfl__vars_free(tfl_ctx *ctx) { }\n'
w allocator.c 'void tfl__allocator_trim(void *a) { }\n'
w device.c 'tfl_status tfl__devices_init(tfl_ctx *ctx)\n{\n    /* tfl_ctx_new( */\n    tfl__allocator_trim(0);\n    return tfl__set_error(ctx, "tfl_ctx_new()");\n}\n'
w tensor.c 'void tfl_tensor_release(tfl_tensor *t)\n{\n    tfl__devices_init(0);\n}\n'
w context.c 'tfl_ctx *tfl_ctx_new(void)\n{\n    tfl__devices_init(0);\n    tfl_tensor_release(0);\n    return 0;\n}\n'
bash "$checker" "$tmp" >/dev/null || { echo "a clean core was rejected"; bash "$checker" "$tmp"; exit 1; }
w device.c 'tfl_status tfl__devices_init(tfl_ctx *ctx)\n{\n    return tfl_ctx_new() != 0;\n}\n'
w shape.c 'bool tfl__same_shape(int a)\n{\n    return tfl__obj_new(0, 1) != 0;\n}\n'
if out=$(bash "$checker" "$tmp"); then echo "a core calling upwards passed"; exit 1; fi
for want in 'framework/device.c (level 2) calls tfl_ctx_new of framework/context.c (level 4)' \
            'framework/shape.c (level 1) calls tfl__obj_new of framework/handles.c (level 1)'; do
  grep -qF "$want" <<<"$out" || { echo "missing: $want"; echo "$out"; exit 1; }
done
[ "$(grep -c . <<<"$out")" -eq 2 ] || { echo "more than the two calls were named:"; echo "$out"; exit 1; }
echo "ok: check_core_order.sh rejects calls up and sideways in the framework's core"
