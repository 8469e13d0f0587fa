#!/usr/bin/env bash
# selftest_layers_order.sh CHECKER: check_layers_order.sh catches what it is for: in a layers/
# whose files call downwards only it passes; a call up (layer.c into model.c, the circle that
# layer_base.c broke) and a call sideways (fit.c into callbacks.c, the same level) fail, each
# named, and a missing file of the order fails. Calls in comments and strings do not count.
set -euo pipefail
checker="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/layers"
w() { printf '%b' "$2" > "$tmp/layers/$1"; }
w layer_base.c 'const char *tfl_layer_kind_name(int kind)\n{\n    return "?";\n}\n'
w layer_spatial.c 'tfl_tensor *tfl__conv_forward(tfl_layer *l)\n{\n    return 0;\n}\n'
w layer_attention.c 'tfl_tensor *tfl__attention_forward(tfl_layer *l)\n{\n    return tfl__conv_forward(l);\n}\n'
w layer_call.c 'tfl_tensor *tfl__layer_forward(tfl_layer *l,\n                               bool training)\n{\n    tfl_layer_kind_name(0);\n    return tfl__attention_forward(l);\n}\n'
w layer.c 'void tfl_layer_free(tfl_layer *l)\n{\n    /* tfl_model_free( */\n    tfl__layer_forward(l, "tfl_model_free()");\n}\n'
w layer_merge.c 'tfl_tensor *tfl_layer_call_n(tfl_layer *l)\n{\n    tfl_layer_free(l);\n    return 0;\n}\n'
w model_graph.c 'bool tfl_model_is_graph(const tfl_model *m)\n{\n    return tfl_layer_call_n(0) != 0;\n}\n'
w model.c 'void tfl_model_free(tfl_model *m)\n{\n    tfl_model_is_graph(m);\n}\n'
w fit_sums.c 'void tfl__fit_sums_free(tfl__fit_sums *fs)\n{\n    tfl_model_free(0);\n}\n'
w callbacks.c 'tfl_callback tfl_callback_progress(void)\n{\n    tfl__fit_sums_free(0);\n}\n'
w fit.c 'tfl_status tfl_model_fit(tfl_model *m)\n{\n    tfl_model_free(m);\n    return 0;\n}\n'
for f in generate.c tensorboard.c train_state.c data_parallel.c; do w "$f" '/* empty */\n'; done
bash "$checker" "$tmp" >/dev/null || { echo "a clean layers/ was rejected"; bash "$checker" "$tmp"; exit 1; }
w layer.c 'void tfl_layer_free(tfl_layer *l)\n{\n    if (l) tfl_model_free(0);\n}\n'
w fit.c 'tfl_status tfl_model_fit(tfl_model *m)\n{\n    tfl_callback_progress();\n    return 0;\n}\n'
if out=$(bash "$checker" "$tmp"); then echo "a layers/ calling upwards passed"; exit 1; fi
for want in 'layers/layer.c (level 4) calls tfl_model_free of layers/model.c (level 7)' \
            'layers/fit.c (level 9) calls tfl_callback_progress of layers/callbacks.c (level 9)'; do
  grep -qF "$want" <<<"$out" || { echo "missing: $want"; echo "$out"; exit 1; }
done
[ "$(grep -c . <<<"$out")" -eq 2 ] || { echo "more than the two calls were named:"; echo "$out"; exit 1; }
rm "$tmp/layers/layer_base.c"
if out=$(bash "$checker" "$tmp"); then echo "a layers/ without layer_base.c passed"; exit 1; fi
grep -qF 'layers/layer_base.c is missing' <<<"$out" || { echo "missing file not named: $out"; exit 1; }
echo "ok: check_layers_order.sh rejects calls up and sideways in layers/"
