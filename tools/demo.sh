#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Runs the bundled demo program under the shim through `gdrhook run`, then
# `gdrhook log summary` of its events. Uses the real driver when an NVIDIA GPU is present, otherwise the
# fake driver the tests build.  Usage: tools/demo.sh [BUILD_DIR]
set -eu

build=${1:-build}
shim="$build/hook/libgdrhook.so"
cli="$build/tools/gdrhook"
demo="$build/tests/programs/gdrhook-demo"
for f in "$shim" "$cli" "$demo"; do
    [ -e "$f" ] || { echo "demo: $f is missing; build first: meson setup $build && ninja -C $build" >&2; exit 1; }
done

if [ -e /dev/nvidiactl ] && ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "demo: NVIDIA GPU and driver found: running against the real libcuda.so.1"
    driver_path=""
else
    echo "demo: no NVIDIA GPU here: running against the bundled fake driver ($build/tests/fake_driver)"
    driver_path="$build/tests/fake_driver"
fi

# As a user would: `gdrhook run` preloads the shim and, when the program
# ends, prints the summary and the verdict of `gdrhook log check`.
events=$(mktemp /tmp/gdrhook-demo.XXXXXX.jsonl)
echo "demo: $cli run --pin alloc --events $events -- $demo"
LD_LIBRARY_PATH="${driver_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$cli" run --library "$PWD/$shim" --pin alloc --events "$events" -- "$demo"

echo
echo "demo: $cli log summary $events"
"$cli" log summary "$events"
python3 - "$events" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
reused = [e["addr"] for e in events if e["ev"] == "alloc"]
dups = len(reused) - len(set(reused))
print(f"demo: {dups} allocation(s) got back an address that had been freed: a cache keyed "
      "by address would have served a stale registration without the free event")
PY
