#!/bin/sh
# Regenerate NAME.ptx from NAME.cu for the kernels named (all .cu files when none is named), with the
# command the committed PTX came from (CUDA 13.0). The PTX is what is committed; run this only with nvcc.
#   sh benchmarks/outside_kernels/regenerate_cu.sh rows_var_lowocc
set -e
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then set -- $(ls *.cu | sed 's/\.cu$//'); fi
for n in "$@"; do
    nvcc -O3 -arch=sm_89 -ptx "$n.cu" -o "$n.ptx"
    echo "$n.ptx"
done
