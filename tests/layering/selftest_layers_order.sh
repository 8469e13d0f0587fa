#!/usr/bin/env bash
# selftest_layers_order.sh CHECKER: check_layers_order.sh catches what it is for: in a layers/
# whose files call downwards only it passes; a call up (layer.c into model.c, the circle that
# layer_base.c broke; dataset.c into dataset_text.c, the circle that dataset_corpus.c broke)
# and a call sideways (fit.c into callbacks.c, the same level) fail, each named, and a
# missing file of the order and a file in no level fail. Calls in comments and strings do
# not count.
set -euo pipefail
checker="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/layers"
w() { printf '%b' "$2" > "$tmp/layers/$1"; }
w dataset_corpus.c 'int tfl__ds_text_vocab(const struct tfl__ds_text *t)\n{\n    return 0;\n}\n'
w dataset_upload.c 'void tfl__ds_upload_free(tfl__ds_upload *up)\n{\n}\n'
w dataset.c 'tfl_dataset *tfl__dataset_wrap(tfl_ctx *ctx)\n{\n    tfl__ds_upload_free(0);\n    return tfl__ds_text_vocab(0) ? 0 : 0;\n}\n'
w dataset_io.c 'void *tfl__ds_open(tfl_ctx *ctx)\n{\n    return tfl__dataset_wrap(ctx);\n}\n'
w dataset_arrays.c 'tfl_dataset *tfl_dataset_from_arrays(tfl_ctx *ctx)\n{\n    return tfl__dataset_wrap(ctx);\n}\n'
w dataset_text.c 'tfl_dataset *tfl_dataset_from_text(tfl_ctx *ctx)\n{\n    tfl__ds_text_vocab(0);\n    return tfl__dataset_wrap(ctx);\n}\n'
w dataset_csv.c 'tfl_dataset *tfl_dataset_from_csv(tfl_ctx *ctx)\n{\n    tfl__ds_open(ctx);\n    return tfl__dataset_wrap(ctx);\n}\n'
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
w dataset.c 'tfl_dataset *tfl__dataset_wrap(tfl_ctx *ctx)\n{\n    return tfl_dataset_from_text(ctx);\n}\n'
if out=$(bash "$checker" "$tmp"); then echo "a layers/ calling upwards passed"; exit 1; fi
for want in 'layers/layer.c (level 8) calls tfl_model_free of layers/model.c (level 11)' \
            'layers/fit.c (level 13) calls tfl_callback_progress of layers/callbacks.c (level 13)' \
            'layers/dataset.c (level 1) calls tfl_dataset_from_text of layers/dataset_text.c (level 2)'; do
  grep -qF "$want" <<<"$out" || { echo "missing: $want"; echo "$out"; exit 1; }
done
[ "$(grep -c . <<<"$out")" -eq 3 ] || { echo "more than the three calls were named:"; echo "$out"; exit 1; }
w new_file.c '/* empty */\n'
out=$(bash "$checker" "$tmp") || true
grep -qF 'layers/new_file.c is in no level' <<<"$out" || { echo "a file in no level passed: $out"; exit 1; }
rm "$tmp/layers/new_file.c"
rm "$tmp/layers/layer_base.c"
if out=$(bash "$checker" "$tmp"); then echo "a layers/ without layer_base.c passed"; exit 1; fi
grep -qF 'layers/layer_base.c is missing' <<<"$out" || { echo "missing file not named: $out"; exit 1; }
echo "ok: check_layers_order.sh rejects calls up and sideways in layers/ and a file in no level"
