#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Builds the libFuzzer targets of tests/fuzz with clang (ASan+UBSan, every
# object instrumented for coverage, UBSan findings fatal) in build-fuzz and
# runs each for a bounded time, starting from the seed corpus in git (and,
# for the log reader, the tool's test logs in tests/cli/data). Any finding
# (crash, sanitizer report, leak, timeout, out of memory) fails the run;
# the input that caused it is left under build-fuzz/findings/.
#
#   GDRHOOKTEST_FUZZ_SECONDS   time per target (default 60)
#   GDRHOOKTEST_FUZZ_BUILD     the build directory (default build-fuzz)
#   GDRHOOKTEST_FUZZ_TARGETS   which targets (default "config log_reader")
#   NINJA_JOBS             ninja -j (default: ninja's own)
set -uo pipefail
cd "$(dirname "$0")/../.."

seconds=${GDRHOOKTEST_FUZZ_SECONDS:-60}
dir=${GDRHOOKTEST_FUZZ_BUILD:-build-fuzz}
targets=(${GDRHOOKTEST_FUZZ_TARGETS:-config log_reader})

for tool in clang clang++; do
    command -v $tool >/dev/null || { echo "fuzz: $tool not found (Debian: clang libclang-rt-14-dev)"; exit 1; }
done

if [ ! -d "$dir" ]; then
    CC=clang CXX=clang++ meson setup "$dir" -Dfuzz=true -Dwerror=true \
        -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all' \
        -Dcpp_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all' \
        >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; rm -rf "$dir"; exit 1; }
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("tests/fuzz/fuzz_$t"); done
if ! ninja -C "$dir" ${NINJA_JOBS:+-j "$NINJA_JOBS"} "${build_targets[@]}" >"$dir.build.log" 2>&1; then
    tail -50 "$dir.build.log"
    echo "fuzz: build failed"
    exit 1
fi

# The targets run side by side, each for the whole of its seconds: a
# libFuzzer process keeps one core busy, and CI's machine has two. At most
# as many at once as there are cores, so that each target still gets a
# core of its own. Measured on the shared 2-core machine, the two targets
# at 60 s each: one after the other 123 s, side by side 61 s (inputs run:
# config 1,337,482 alone, 1,254,808 beside log_reader; log_reader 17,650
# and 16,190).
findings="$dir/findings"
mkdir -p "$findings"
at_once=$(nproc)
failed=()
for ((first = 0; first < ${#targets[@]}; first += at_once)); do
    batch=("${targets[@]:first:at_once}")
    pids=()
    for t in "${batch[@]}"; do
        work="$dir/corpus/$t"   # grows from run to run; the seeds stay as they are
        mkdir -p "$work"
        seeds=(tests/fuzz/corpus/$t)
        [ "$t" = log_reader ] && seeds+=(tests/cli/data)
        echo "=== fuzz_$t: ${seconds} s"
        "$dir/tests/fuzz/fuzz_$t" "$work" "${seeds[@]}" \
            -dict="tests/fuzz/$t.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$findings/$t-" -print_final_stats=1 >"$dir/fuzz_$t.log" 2>&1 &
        pids+=($!)
    done
    start=$SECONDS
    for i in "${!batch[@]}"; do
        t=${batch[$i]}
        wait "${pids[$i]}"
        rc=$?
        grep -E '^#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added' "$dir/fuzz_$t.log" | sed "s/^/    fuzz_$t: /"
        if [ $rc -ne 0 ]; then
            tail -40 "$dir/fuzz_$t.log"
            echo "fuzz_$t: FAILED (exit $rc after $((SECONDS - start)) s); reproduce with:"
            echo "    $dir/tests/fuzz/fuzz_$t $(ls -t "$findings"/$t-* 2>/dev/null | head -1)"
            failed+=("$t")
        else
            echo "fuzz_$t: OK ($((SECONDS - start)) s, no finding)"
        fi
    done
done

if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: FAILED: ${failed[*]}"
    exit 1
fi
echo "fuzz: OK: ${targets[*]}, ${seconds} s each, no finding"
