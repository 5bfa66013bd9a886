#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/gpu/churn_ab.sh, one round on the fake driver: each run's line, the
# shim's summary, and the release alone (coherence_churn own_export, no
# shim) with every one of its closes counted; bench_verdicts.py's churn
# verdict then shows that floor beside the shim's figures. What is checked
# is the script's shape, which a GPU call would otherwise find broken.
#   test_churn_ab.sh COHERENCE_CHURN SHIM FAKE_DRIVER_DIR
set -euo pipefail
here=$(dirname "$(realpath "$0")")
programs=$(dirname "$1") shim=$2 fake=$3
out=$(LD_LIBRARY_PATH=$fake "$here/churn_ab.sh" "$programs" 1 "$shim" 2>&1)
echo "$out"
fail() { echo "test_churn_ab: FAIL: $*" >&2; exit 1; }
# At least one unpin a free (a lookup racing a free may pin and unpin once
# more: a count, not a promise), no stale hit.
unpins_at_least() { # LABEL THREADS FREES
	local n
	n=$(sed -n "s/^$1 shim=0 threads=$2 unpins=\([0-9]*\) .* stale=0\$/\1/p" <<<"$out")
	[ -n "$n" ] && [ "$n" -ge "$3" ]
}
unpins_at_least churn8 8 4000 || fail "no 8-thread churn with an unpin for each of 4,000 frees and no stale hit"
unpins_at_least churn1 1 500 || fail "no 1-thread churn with an unpin for each of 500 frees and no stale hit"
grep -q '^release8 releases=4000 release_p50_us=[0-9.]* release_p99_us=[0-9.]* ' <<<"$out" ||
	fail "the release alone on 8 threads did not close 4,000 dma-bufs"
grep -q '^release1 releases=500 ' <<<"$out" || fail "the release alone on 1 thread did not close 500"
grep -q '^shim 0: 8 threads p50 [0-9.]* us, p99 [0-9.]* us; 1 thread p99 ' <<<"$out" || fail "no summary"
grep -q "^the release alone (the program's own dma-buf close, no shim): 8 threads p50 [0-9.]* us, p99 [0-9.]* us; 1 thread p99 [0-9.]* us$" <<<"$out" ||
	fail "no summary of the release alone"
verdict=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import bench_verdicts as b; print(b.churn_verdict(sys.stdin.read())[1])' "$here" <<<"$out")
echo "verdict: $verdict"
grep -q '; the release alone: p50 [0-9.]*, p99 [0-9.]* us (goal' <<<"$verdict" || fail "the verdict leaves out the release alone"
echo "test_churn_ab: OK"
