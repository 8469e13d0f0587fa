#!/bin/sh
# tests/backend/check_cudnn_deprecated.sh: counts the deprecated cuDNN declarations that the
# cuDNN files of framework/cuda (cudnn_conv.c, cudnn_norm.c, cudnn_graph.c) use (cuDNN 9 marks its legacy API
# deprecated; cuDNN 8 broke other frameworks' builds by removing calls) and compares the total
# with the one framework/cuda/README.md states ("Deprecated cuDNN uses: N"), so that a change in
# either direction is seen and the README kept true. It compiles each file once, syntax only,
# with -DCUDNN_WARN_DEPRECATED (cuDNN's switch for its deprecation attributes) and counts gcc's
# -Wdeprecated-declarations warnings: one per use (call, type or enumerator) in the files.
#   check_cudnn_deprecated.sh HAVE_CUDNN CC README SOURCE... [compiler flags: -I, -isystem, -D]
# (the sources are the arguments before the first one starting with '-')
# Exits 77 (ctest: skipped) when the build has no cuDNN.
set -u
have=$1
cc=$2
readme=$3
shift 3
srcs=""
while [ $# -gt 0 ]; do
    case $1 in
    -*) break ;;
    *) srcs="$srcs $1" ;;
    esac
    shift
done
if [ -z "$srcs" ]; then
    echo "FAIL: no source file given"
    exit 1
fi
if [ "$have" != 1 ]; then
    echo "skipped: this build has no cuDNN (TFL_CUDNN=OFF, or cudnn.h / libcudnn not found)"
    exit 77
fi
expected=$(sed -n 's/.*Deprecated cuDNN uses: \([0-9][0-9]*\).*/\1/p' "$readme" | head -n 1)
if [ -z "$expected" ]; then
    echo "FAIL: $readme states no count ('Deprecated cuDNN uses: N')"
    exit 1
fi
out=""
for src in $srcs; do
    one=$(LC_ALL=C "$cc" -std=c11 -fsyntax-only -DCUDNN_WARN_DEPRECATED \
        -Wdeprecated-declarations "$@" "$src" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        printf '%s\n' "$one"
        echo "FAIL: $src does not compile with -DCUDNN_WARN_DEPRECATED (exit $rc)"
        exit 1
    fi
    n=$(printf '%s\n' "$one" | grep -c 'warning: .*\[-Wdeprecated-declarations\]')
    echo "$src: $n"
    out="$out
$one"
done
count=$(printf '%s\n' "$out" | grep -c 'warning: .*\[-Wdeprecated-declarations\]')
# what is used, by name, how often
printf '%s\n' "$out" | grep 'warning: .*\[-Wdeprecated-declarations\]' |
    sed "s/.*warning: '\([A-Za-z0-9_]*\)'.*/\1/" | sort | uniq -c
if [ "$count" != "$expected" ]; then
    echo "FAIL:$srcs use $count deprecated cuDNN declarations; $readme states $expected:" \
        "update the README's count (and its list) with the change"
    exit 1
fi
echo "ok: $count deprecated cuDNN uses, as $readme states"
