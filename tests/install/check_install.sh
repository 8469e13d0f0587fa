#!/usr/bin/env bash
# check_install.sh BUILD_DIR SOURCE_DIR: installs tapeflow into a temporary prefix and
# builds the small consumer four ways, as applications embedding the library do, and runs
# each: find_package with tapeflow::tapeflow and with tapeflow::tapeflow_static, pkg-config
# tapeflow (shared, found at run time through the .pc's rpath variable, not LD_LIBRARY_PATH)
# and pkg-config --static tapeflow-static. The static programs must not need libtapeflow.so.
# Also: the installed headers and .pc files are the ones the README names, and no .pc
# requires a package the library does not use.
set -euo pipefail
build="$1" src="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_install: $*" >&2; exit 1; }
# The programs below must find libtapeflow through their own rpath, never the loader's path:
# they run with LD_LIBRARY_PATH stripped of every folder holding a libtapeflow.so. Folders of
# the dependencies stay (a machine whose libyaml or BLIS live in a prefix of their own, found
# through LD_LIBRARY_PATH, as on a GPU machine without Debian's packages).
deps_only=""
IFS=: read -ra _ld_dirs <<< "${LD_LIBRARY_PATH:-}"
for d in "${_ld_dirs[@]}"; do
  [ -n "$d" ] && ! ls "$d"/libtapeflow.so* >/dev/null 2>&1 && deps_only="${deps_only:+$deps_only:}$d"
done
# run_alone CMD...: CMD with that LD_LIBRARY_PATH
run_alone() { env LD_LIBRARY_PATH="$deps_only" "$@"; }
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pcdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n 1)
libdir=$(dirname "$pcdir")
[ -f "$tmp/prefix/include/tapeflow/version.h" ] || fail "tapeflow/version.h is not installed"
[ -f "$tmp/prefix/include/tapeflow/config.h" ] || fail "tapeflow/config.h (the config loader) is not installed"
# version.h says what the build contains: TFL_HAVE_CUDA 1 exactly when the CUDA backend's
# module, libtapeflow_cuda.so, is installed beside the library; the library itself never
# holds CUDA code nor links a CUDA library (it loads the module on demand)
have_cuda=0
if [ -f "$libdir/libtapeflow_cuda.so" ]; then have_cuda=1; fi
grep -q "#define TFL_HAVE_CUDA $have_cuda" "$tmp/prefix/include/tapeflow/version.h" ||
  fail "version.h's TFL_HAVE_CUDA is not $have_cuda (libtapeflow_cuda.so installed: $have_cuda)"
if nm "$libdir/libtapeflow.a" 2>/dev/null | grep -q ' [DRT] tfl__cuda_backend$'; then
  fail "libtapeflow.a holds the CUDA backend; it must load libtapeflow_cuda.so instead"
fi
for lib in "$libdir"/libtapeflow.so*; do
  if readelf -d "$lib" | grep -E 'NEEDED.*(cuda|cublas|cudnn)'; then
    fail "$lib links a CUDA library"
  fi
done
[ -f "$libdir/libtapeflow.a" ] || fail "libtapeflow.a is not installed"
[ -f "$libdir/cmake/tapeflow/FindBLIS.cmake" ] || fail "FindBLIS.cmake is not installed"
# The installed program starts from the prefix alone (a relative rpath to the prefix's
# library folder), also after the prefix moved.
run_alone "$tmp/prefix/bin/tapeflow" version > "$tmp/version.txt" ||
  fail "the installed tapeflow does not start (exit $?)"
grep -q "^tapeflow " "$tmp/version.txt" || fail "the installed 'tapeflow version' printed: $(cat "$tmp/version.txt")"
readelf -d "$tmp/prefix/bin/tapeflow" | grep -q 'R.*PATH.*\$ORIGIN/\.\./lib' ||
  fail "the installed tapeflow has no \$ORIGIN-relative rpath: $(readelf -d "$tmp/prefix/bin/tapeflow" | grep PATH)"
mv "$tmp/prefix" "$tmp/moved"
run_alone "$tmp/moved/bin/tapeflow" version >/dev/null || fail "tapeflow does not start from a moved prefix"
mv "$tmp/moved" "$tmp/prefix"

# no_tapeflow_so BINARY: the program runs without libtapeflow.so.
no_tapeflow_so() {
  if readelf -d "$1" | grep -q 'NEEDED.*libtapeflow'; then
    readelf -d "$1" | grep NEEDED; fail "$1 needs libtapeflow.so"
  fi
  if ldd "$1" | grep -q libtapeflow; then ldd "$1"; fail "$1 loads libtapeflow.so"; fi
}
# needs_tapeflow_so BINARY: a shared consumer does load it, from the prefix.
needs_tapeflow_so() {
  readelf -d "$1" | grep -q 'NEEDED.*libtapeflow\.so' || fail "$1 does not need libtapeflow.so"
}

# 1. CMake package, shared library
cmake -S "$src/tests/install/consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm" >/dev/null
needs_tapeflow_so "$tmp/cm/consumer"
"$tmp/cm/consumer"   # CMake's install-tree rpath is not set: the build-tree one finds it
# 2. CMake package, static library: tapeflow::tapeflow_static and nothing else by hand
cmake -S "$src/tests/install/consumer" -B "$tmp/cm_static" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCONSUMER_STATIC=ON >/dev/null
cmake --build "$tmp/cm_static" >/dev/null
no_tapeflow_so "$tmp/cm_static/consumer"
"$tmp/cm_static/consumer"

# the prefix first, then the caller's own path (where zlib, yaml-0.1 and libcjson may be)
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
unset PKG_CONFIG_LIBDIR || true
# Every query works on a system that has only the .pc files of what the library uses
# (zlib, yaml-0.1, libcjson) and nothing else.
mkdir "$tmp/pcsys"
for dep in zlib yaml-0.1 libcjson; do
  depdir=$(pkg-config --variable=pcfiledir $dep) ||
    fail "pkg-config finds no $dep.pc (PKG_CONFIG_PATH=$PKG_CONFIG_PATH)"
  cp "$depdir/$dep.pc" "$tmp/pcsys/"
done
for q in "--exists --print-errors" "--cflags --libs" "--static --libs" "--static --cflags"; do
  for pc in tapeflow tapeflow-static; do
    PKG_CONFIG_LIBDIR="$tmp/pcsys" pkg-config $q $pc >/dev/null ||
      fail "pkg-config $q $pc fails with only the .pc files of zlib, yaml-0.1 and libcjson"
  done
done
# 3. pkg-config, shared, with the rpath variable: runs with no LD_LIBRARY_PATH to the library
rpath=$(pkg-config --variable=rpath tapeflow)
[ -n "$rpath" ] || fail "tapeflow.pc has no rpath variable"
cc -std=c11 "$src/tests/install/consumer/consumer.c" -o "$tmp/pc_consumer" \
   $(pkg-config --cflags --libs tapeflow) $rpath
needs_tapeflow_so "$tmp/pc_consumer"
run_alone "$tmp/pc_consumer"
# 4. pkg-config --static: libtapeflow.a linked in
cc -std=c11 "$src/tests/install/consumer/consumer.c" -o "$tmp/pc_static_consumer" \
   $(pkg-config --static --cflags --libs tapeflow-static)
no_tapeflow_so "$tmp/pc_static_consumer"
run_alone "$tmp/pc_static_consumer"
# 5. the GPU backend is a module both libraries load on demand: a shared and a static
# consumer given the test suite's fake GPU module see GPU:0 and run their matmul there
fake="$build/tests/libtfl_fake_gpu.so"
if [ -f "$fake" ]; then
  for c in "$tmp/pc_consumer" "$tmp/pc_static_consumer"; do
    out=$(run_alone env TFL_GPU_MODULE="$fake" "$c") || fail "$c with the fake GPU: $out"
    case "$out" in *"devices: CPU:0 GPU:0; matmul on GPU:0"*) ;;
      *) fail "$c with TFL_GPU_MODULE=$fake does not use GPU:0: $out" ;; esac
  done
fi
echo "ok: find_package (shared, static) and pkg-config (shared with rpath, static) consumers built and ran, and loaded a GPU module"
