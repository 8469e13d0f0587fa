#!/usr/bin/env bash
# run_ddp.sh [BUILD_DIR]: bench_ddp for mlp and cnn, one process on 2 threads and 2 ranks on
# 1 thread each under mpirun (Open MPI's flags for root in a container, oversubscribed), then
# its twin torch_ddp.py the same two ways when torch is importable (torchrun --standalone
# --nproc_per_node 2). Prints every `bench ...` line; EXTRA="--sweep" adds the all-reduce
# size sweep (notes on stderr).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
bench=$build/tests/bench/bench_ddp
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun=(mpirun --allow-run-as-root --oversubscribe)
for model in mlp cnn; do
  OMP_NUM_THREADS=2 "$bench" --model "$model" ${EXTRA:-}
  OMP_NUM_THREADS=1 "${mpirun[@]}" -np 2 "$bench" --model "$model" ${EXTRA:-}
done
if [ -f "$here/torch_ddp.py" ] && python3 -c "import torch" 2>/dev/null; then
  for model in mlp cnn; do
    python3 "$here/torch_ddp.py" --model "$model"
    OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 "$here/torch_ddp.py" --model "$model"
  done
else
  echo "run_ddp.sh note: torch_ddp.py or torch missing: no twin figures" >&2
fi
