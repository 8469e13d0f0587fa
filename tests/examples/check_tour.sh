#!/usr/bin/env bash
# check_tour.sh TOUR: runs examples/tour (the README's tour) and checks that it ends with
# status 0 and prints what the README says each block gives.
set -uo pipefail
out=$("$1" 2>&1); rc=$?
printf '%s\n' "$out"
fail() { echo "check_tour: $1"; exit 1; }
[ "$rc" -eq 0 ] || fail "tour exited with status $rc"
want() { grep -qE -- "$1" <<<"$out" || fail "no line matching: $1"; }
# where automatic placement runs the tour's ops on this machine: GPU:0 when the program (the
# tour's neighbour) lists one, else CPU:0
dev='CPU:0'
if "$(dirname "$1")/tapeflow" version | grep -q '^  GPU:0'; then dev='GPU:0'; fi
want "^y: <tfl\.Tensor shape=\(2, 2\) dtype=float32 device=$dev \[\[0\.00247[0-9]*, 0\.99752[0-9]*\], \[3\.05[0-9]*e-07, 1\]\]>$"
want '^Add: dtypes differ: a is float32, b is int32'
want "^y2: <tfl\.Tensor shape=\(2, 2\) dtype=float32 device=$dev \[\[44, 56\], \[98, 128\]\]>$"
want "^snap: <tfl\.Tensor shape=\(2, 3\) dtype=float32 device=$dev \[\[2, 4, 6\], \[8, 10, 12\]\]>$"
want '^k: dense/kernel$'
# d mean(tanh(x·w)) / dw with x = 0.1·b and w = a again: x^T (1 - tanh^2(x·w)) / 9
want "^dw: <tfl\.Tensor shape=\(2, 3\) dtype=float32 device=$dev \[\[0\.00893[0-9]*, 0\.00419[0-9]*, 0\.00219[0-9]*\], \[0\.0154[0-9]*, 0\.00783[0-9]*, 0\.00426[0-9]*\]\]>$"
want '^optimizer step: ok$'
want 'val_accuracy: 0\.(7[5-9]|8[0-9]|9[0-9])'
want 'Total params: 203530 '
echo "check_tour: ok"
