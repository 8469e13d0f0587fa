#!/usr/bin/env bash
# check_failed_start.sh TAPEFLOW SRC: a run that fails before its first step leaves no new
# run directory behind, and an existing one exactly as it was; a CSV label outside the
# model's classes is found as the data is read, naming the file, line and column.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"
mkdir data
printf 'x1,x2,label\n0,0,0\n0,1,1\n1,0,7\n1,1,0\n' > data/xor.csv
sed 's/^  every: 100.*/  every: 1/' "$SRC/configs/xor.yaml" > xor.yaml
run 2 train xor.yaml --run-dir r --set training.epochs=2
has err.txt "data/xor.csv' line 4, column 3 ('label'): '7' is not one of the 2 classes (labels in [0, 2))"
has err.txt "xor.yaml:4:"
[ -e r ] && fail "a run refused for its data left a run directory: $(find r)"
printf 'x1,x2,label\n0,0,0\n0,1,1\n1,0,1\n1,1,0\n' > data/xor.csv
# a failure after the directory is made (its checkpoint folder cannot be made: a file is
# in the way), before the first step: the new directory goes again
echo x > blocker
run 1 train xor.yaml --run-dir r --set training.epochs=2 --set checkpoint.directory=blocker/ckpts
has err.txt "blocker/ckpts"
has err.txt "no step was trained: the run directory 'r' was removed"
[ -e r ] && fail "a run that failed before its first step left: $(find r)"
# an existing run: the same failure leaves every file as it was
run 0 train xor.yaml --run-dir r --set training.epochs=2 --quiet
(cd r && find . -type f | sort | xargs md5sum) > before.txt
run 1 train xor.yaml --run-dir r --set training.epochs=3 --set checkpoint.directory=blocker/ckpts
has err.txt "no step was trained: the run directory 'r' is as it was"
(cd r && find . -type f | sort | xargs md5sum) > after.txt
cmp -s before.txt after.txt || fail "a failed start changed the run: $(diff before.txt after.txt)"
finish
