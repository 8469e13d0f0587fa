#!/usr/bin/env bash
# selftest.sh CHECKER: check_layering.sh catches what it is for: a tree with a "../" include,
# an upward private include, an upward public include, a core file including a header of the
# sub-module framework/io or framework/dist, an io file including internal.h or
# core_api/module_api.h, a dist file including internal.h, a dist file including an io
# header, a tape file including internal.h and a layers file including a sub-module's header
# other than its declared one (dist_internal.h, io/pb.h) fails, naming each line; the same
# tree without them (io including its own header and core_api.h, dist its own and
# core_api/'s, tape core_api/op_api.h, layers dist/dist_api.h and io/io_api.h) passes.
set -euo pipefail
checker="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/framework/ops" "$tmp/framework/include/tapeflow" "$tmp/tape/include/tapeflow" \
  "$tmp/framework/io" "$tmp/framework/core_api" "$tmp/framework/dist" "$tmp/layers"
printf '#include "internal.h"\n' > "$tmp/framework/ops/op.h"
printf '/* internal */\n' > "$tmp/framework/internal.h"
printf '/* tape */\n' > "$tmp/tape/include/tapeflow/tape.h"
printf '#include "core_api/op_api.h"\n#include <tapeflow/tape.h>\n' > "$tmp/tape/tape_internal.h"
printf '#include "core_api.h"\n' > "$tmp/framework/core_api/op_api.h"
printf '/* core api */\n' > "$tmp/framework/core_api/core_api.h"
printf '#include "core_api/core_api.h"\n' >> "$tmp/framework/internal.h"
printf '#include "core_api.h"\n' > "$tmp/framework/io/io_internal.h"
printf '#include "io_internal.h"\n' > "$tmp/framework/io/writer.c"
printf '/* pb */\n' > "$tmp/framework/io/pb.h"
printf '#include "pb.h"\n' > "$tmp/framework/io/io_api.h"
printf '#include "core_api.h"\n' > "$tmp/framework/core_api/module_api.h"
printf '/* native */\n' > "$tmp/framework/core_api/native_api.h"
printf '/* dist api */\n' > "$tmp/framework/dist/dist_api.h"
printf '#include "dist_api.h"\n#include "module_api.h"\n#include "native_api.h"\n' \
  > "$tmp/framework/dist/dist_internal.h"
printf '#include "dist_internal.h"\n' > "$tmp/framework/dist/comm.c"
printf '#include "core_api/module_api.h"\n#include "dist/dist_api.h"\n#include "io/io_api.h"\n' \
  > "$tmp/layers/data_parallel.c"
bash "$checker" "$tmp" >/dev/null || { echo "a clean tree was rejected"; bash "$checker" "$tmp"; exit 1; }
printf '#include "../internal.h"\n' > "$tmp/framework/ops/a.c"
printf '#include "../tape/tape_internal.h"\n#include "tape_internal.h"\n#include <tapeflow/tape.h>\n' \
  > "$tmp/framework/b.c"
printf '#include "internal.h"\n#include "io/io_internal.h"\n' > "$tmp/framework/c.c"
printf '#include "io_internal.h"\n#include "internal.h"\n#include "ops/op.h"\n' \
  > "$tmp/framework/io/d.c"
printf '#include "tape_internal.h"\n#include "internal.h"\n#include "ops/op.h"\n' > "$tmp/tape/e.c"
printf '#include "internal.h"\n#include "dist/dist_api.h"\n' > "$tmp/framework/g.c"
printf '#include "io_internal.h"\n#include "module_api.h"\n' > "$tmp/framework/io/h.c"
printf '#include "dist_internal.h"\n#include "internal.h"\n#include "ops/op.h"\n#include "io/pb.h"\n' \
  > "$tmp/framework/dist/i.c"
printf '#include "dist/dist_api.h"\n#include "dist/dist_internal.h"\n#include "io/pb.h"\n' \
  > "$tmp/layers/j.c"
if out=$(bash "$checker" "$tmp"); then echo "a bad tree passed"; exit 1; fi
for want in 'framework/ops/a.c:1: relative include' 'framework/b.c:1: relative include' \
            'framework/b.c:2: framework includes tape_internal.h of tape' \
            'framework/b.c:3: framework includes tapeflow/tape.h of tape' \
            'framework/c.c:2: includes io/io_internal.h of io/, a framework sub-module' \
            'framework/io/d.c:2: io/ includes internal.h, a private header' \
            'framework/io/d.c:3: io/ includes ops/op.h, a private header' \
            "tape/e.c:2: tape includes internal.h, a private header of the framework's core" \
            "tape/e.c:3: tape includes ops/op.h, a private header of the framework's core" \
            'framework/g.c:2: includes dist/dist_api.h of dist/, a framework sub-module' \
            'framework/io/h.c:2: io/ includes module_api.h, a private header' \
            'framework/dist/i.c:2: dist/ includes internal.h, a private header' \
            'framework/dist/i.c:3: dist/ includes ops/op.h, a private header' \
            'framework/dist/i.c:4: includes io/pb.h of io/, a framework sub-module' \
            'layers/j.c:2: layers includes dist/dist_internal.h, a private header of dist/' \
            'layers/j.c:3: layers includes io/pb.h, a private header of io/'; do
  grep -qF "$want" <<<"$out" || { echo "missing: $want"; echo "$out"; exit 1; }
done
for clean in 'framework/c.c:1:' 'framework/io/d.c:1:' 'framework/io/writer.c' 'tape/e.c:1:' \
             'tape/tape_internal.h:' 'framework/g.c:1:' 'framework/io/h.c:1:' \
             'framework/dist/i.c:1:' 'framework/dist/comm.c' 'framework/dist/dist_internal.h' \
             'layers/j.c:1:' 'layers/data_parallel.c'; do
  if grep -qF "$clean" <<<"$out"; then echo "a good include was rejected: $clean"; echo "$out"; exit 1; fi
done
echo "ok: check_layering.sh rejects climbing and upward includes, includes across io/'s and" \
  "dist/'s boundaries and a module's include of the core's or a sub-module's private headers"
