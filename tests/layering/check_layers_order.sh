#!/usr/bin/env bash
# check_layers_order.sh SOURCE_DIR: the layers and models of layers/ read from the bottom up,
# in the levels layers/layers_internal.h lists (layer_base.c at the bottom, the fit loop and
# its callbacks at the top); a file calls only functions of files of a lower level
# (check_order.sh checks it and names each call that goes sideways or up). The datasets'
# files are not in the order.
set -euo pipefail
exec bash "$(dirname "$0")/check_order.sh" "$1" layers "layer_base.c" "layer_spatial.c" \
  "layer_attention.c" "layer_call.c" "layer.c" "layer_merge.c" "model_graph.c" "model.c" \
  "fit_sums.c" "callbacks.c fit.c generate.c tensorboard.c train_state.c data_parallel.c"
