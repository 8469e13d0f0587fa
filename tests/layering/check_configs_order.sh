#!/usr/bin/env bash
# check_configs_order.sh SOURCE_DIR: configs/ reads from the bottom up, in the levels
# configs/README.md lists (arena.c at the bottom, the run's tools at the top); a file calls
# only functions of files of a lower level, and every file of configs/ has a level
# (check_order.sh --all checks it and names each call that goes sideways or up).
set -euo pipefail
exec bash "$(dirname "$0")/check_order.sh" --all "$1" configs "arena.c" \
  "diag.c schema.c events_read.c" "yaml_doc.c plot_data.c" "override.c resolve.c plot_svg.c" \
  "rules.c graph.c" "build.c emit.c" "config.c" "diff.c run_parallel.c" "run.c" \
  "run_generate.c run_tools.c"
