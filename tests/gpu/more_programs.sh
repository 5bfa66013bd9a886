#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Real programs beyond the table (tests/gpu/run.sh), each run plain and
# hooked (GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_VERIFY=1):
# the same exit status and the same stdout, then `gdrhook log check` of
# the hooked run's log and its events by kind and function. A program
# that fails plain (a framework broken on the machine) is reported so,
# and must fail the same way hooked.
#   tests/gpu/more_programs.sh BUILD_DIR OUT_DIR
# GDRHOOKTEST_MORE_PROGRAMS=name1,name2 runs only those programs (names
# without .py), to spend less device time on a change to a few.
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-more}")
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
failures=0
for program in "$here"/more_programs/*.py; do
    name=$(basename "$program" .py)
    only=${GDRHOOKTEST_MORE_PROGRAMS:-}
    [ -z "$only" ] || [[ ",$only," == *",$name,"* ]] || continue
    mkdir -p "$out/$name"
    timeout 240 python3 "$program" > "$out/$name.plain.out" 2> "$out/$name.plain.err"
    plain=$?
    GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_VERIFY=1 \
        GDRHOOK_EVENTS="$out/$name/events.%p.jsonl" LD_PRELOAD="$build/hook/libgdrhook.so" \
        timeout 240 python3 "$program" > "$out/$name.hooked.out" 2> "$out/$name.hooked.err"
    hooked=$?
    same=same
    cmp -s "$out/$name.plain.out" "$out/$name.hooked.out" || same=DIFFERENT
    echo "$name: exit plain $plain hooked $hooked; stdout $same: $(head -c 200 "$out/$name.hooked.out" | tr '\n' ' ')"
    [ "$plain" = 0 ] || { echo "  plain run failed:"; tail -3 "$out/$name.plain.err" | sed 's/^/    /'; }
    [ "$plain" = "$hooked" ] && [ "$same" = same ] || failures=$((failures + 1))
    if ls "$out/$name"/*.jsonl > /dev/null 2>&1; then
        "$build/tools/gdrhook" log check "$out/$name"/*.jsonl 2>&1 | tail -2 | sed 's/^/  /' || failures=$((failures + 1))
        "$build/tools/gdrhook" log summary "$out/$name"/*.jsonl 2>&1 | grep -E '^  (alloc|free|pin|unpin) '
    fi
done
echo "more programs: $failures behaving differently under the shim"
[ "$failures" = 0 ]
