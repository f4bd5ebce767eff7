#!/usr/bin/env bash
# What an operator's hand-written loop does for the facts a scan gathers, for
# one env: the baseline of the "against an operator's loop" rows (scan_bench,
# odd_shapes.sh). Activate the env (a conda env's activate.d scripts, a
# venv's bin/activate), ask the interpreter one fact per `python -c` (its
# version, torch's version, CUDA build and location, the import), then list
# every shared library of site-packages with `ldd` and its undefined symbols
# with `nm -D | c++filt`.
#
# Usage: hand_loop.sh PREFIX (its output is for nobody: the benchmarks time it)
prefix=$1
if [ -d "$prefix/conda-meta" ]; then
  export CONDA_PREFIX="$prefix" PATH="$prefix/bin:$PATH"
  for script in "$prefix"/etc/conda/activate.d/*.sh; do [ -r "$script" ] && . "$script"; done
elif [ -r "$prefix/bin/activate" ]; then
  . "$prefix/bin/activate"
fi
python -c 'import sys; print(sys.version)'
python -c 'import torch; print(torch.__version__)'
python -c 'import torch; print(torch.version.cuda)'
python -c 'import torch; print(torch.__file__)'
find "$prefix"/lib/python3*/site-packages -name '*.so*' -type f -print0 2>/dev/null |
  while IFS= read -r -d '' library; do
    ldd "$library"
    nm -D --undefined-only "$library" | c++filt
  done
