# SPDX-License-Identifier: MIT OR GPL-2.0-only
# shellcheck shell=bash
#
# Sourced by the scripts that need a GPU and what they run on it (run.sh,
# libfabric.sh, openmpi.sh, ucx_table.sh): the checks they open with, so
# that each says the same thing when it cannot start.

# Exits 77, a skip (meson's, and the scripts' callers'), when no NVIDIA GPU
# is usable.
skip_without_gpu() {
    if ! nvidia-smi -L >/dev/null 2>&1 || [ ! -e /dev/nvidia0 ]; then
        echo "no usable NVIDIA GPU (nvidia-smi -L fails or /dev/nvidia0 is missing): skipped"
        exit 77
    fi
}

# Exits 1 at the first FILE that does not exist, saying MESSAGE with {}
# standing for that file.
#   need_files MESSAGE FILE...
need_files() {
    local message=$1 f
    shift
    for f in "$@"; do
        [ -e "$f" ] || { echo "${message//\{\}/"$f"}"; exit 1; }
    done
}
