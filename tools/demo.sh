#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Runs the bundled demo program under the shim and says what the events
# show. Uses the real driver when an NVIDIA GPU is present, otherwise the
# fake driver the tests build.  Usage: tools/demo.sh [BUILD_DIR]
set -eu

build=${1:-build}
shim="$build/hook/libgdrhook.so"
demo="$build/tests/programs/gdrhook-demo"
for f in "$shim" "$demo"; do
    [ -e "$f" ] || { echo "demo: $f is missing; build first: meson setup $build && ninja -C $build" >&2; exit 1; }
done

if [ -e /dev/nvidiactl ] && ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "demo: NVIDIA GPU and driver found: running against the real libcuda.so.1"
    driver_path=""
else
    echo "demo: no NVIDIA GPU here: running against the bundled fake driver ($build/tests/fake_driver)"
    driver_path="$build/tests/fake_driver"
fi

events=$(mktemp /tmp/gdrhook-demo.XXXXXX.jsonl)
LD_LIBRARY_PATH="${driver_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
LD_PRELOAD="$PWD/$shim" GDRHOOK_EVENTS="$events" GDRHOOK_LOG_LEVEL=info "$demo"

echo "demo: the event log is $events ($(wc -l < "$events") events); first lines:"
head -n 3 "$events"
python3 - "$events" <<'PY'
import json, sys
from collections import Counter
events = [json.loads(line) for line in open(sys.argv[1])]
by_kind = Counter(e["ev"] for e in events)
by_api = Counter((e["ev"], e["api"]) for e in events)
print("demo: events by kind:", ", ".join(f"{k}={v}" for k, v in sorted(by_kind.items())))
for (ev, api), n in sorted(by_api.items()):
    print(f"demo:   {ev:12} {api:28} {n}")
reused = [e["addr"] for e in events if e["ev"] == "alloc"]
dups = len(reused) - len(set(reused))
print(f"demo: {dups} allocation(s) got back an address that had been freed: a cache keyed by address would have served a stale registration without the free event")
PY
