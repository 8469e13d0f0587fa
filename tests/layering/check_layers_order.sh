#!/usr/bin/env bash
# check_layers_order.sh SOURCE_DIR: layers/ reads from the bottom up: the datasets' files in
# the levels layers/dataset_internal.h lists (dataset_corpus.c and dataset_upload.c at the
# bottom, the loaders above dataset.c), then the layers and models in the levels
# layers/layers_internal.h lists (layer_base.c first, the fit loop and its callbacks at the
# top); a file calls only functions of files of a lower level, and every file of layers/ has
# a level (check_order.sh --all checks it and names each call that goes sideways or up).
set -euo pipefail
exec bash "$(dirname "$0")/check_order.sh" --all "$1" layers \
  "dataset_corpus.c dataset_upload.c" "dataset.c" "dataset_io.c dataset_arrays.c dataset_text.c" \
  "dataset_csv.c" \
  "layer_base.c" "layer_spatial.c" \
  "layer_attention.c" "layer_call.c" "layer.c" "layer_merge.c" "model_graph.c" "model.c" \
  "fit_sums.c" "callbacks.c fit.c generate.c tensorboard.c train_state.c data_parallel.c"
