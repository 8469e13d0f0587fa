#!/usr/bin/env bash
# check_core_order.sh SOURCE_DIR: the framework's core reads from the bottom up. Its files
# are in levels (framework/README.md):
#   0 base.c (errors, logging, host memory)
#   1 shape.c handles.c collections.c allocator.c
#   2 device.c
#   3 tensor.c
#   4 context.c
# and a file calls only functions defined in files of a lower level, never one of its own
# level or above (check_order.sh checks it and names each call that goes sideways or up).
set -euo pipefail
exec bash "$(dirname "$0")/check_order.sh" "$1" framework "base.c" \
  "shape.c handles.c collections.c allocator.c" "device.c" "tensor.c" "context.c"
