# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# What the shell tests of the built tool share (sourced by tests/cli/e2e.sh
# and tests/hostile/hostile.sh): run the tool and check its status, look
# for text in a file. The sourcing script sets $out and $err (where a run's
# stdout and stderr go) before it calls them.

fail() { echo "FAIL: $*" >&2; exit 1; }

# A cross build's programs (the tool, the demo, the churn) are the target's:
# they run through its emulator (GDRHOOKTEST_EXEC_WRAPPER, tests/meson.build),
# written unquoted before them (natively it is empty and vanishes). Started
# by `gdrhook run --`, the emulator is a static program: it leaves the
# shim's LD_PRELOAD alone and hands it to the program it runs.
emulator=${GDRHOOKTEST_EXEC_WRAPPER:-}

# run EXPECTED_STATUS ARGS...: runs gdrhook, keeps stdout/stderr, checks status.
run() {
    expected=$1; shift
    $emulator "$GDRHOOK" "$@" >"$out" 2>"$err"
    status=$?
    if [ "$status" -ne "$expected" ]; then
        echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"
        fail "gdrhook $* exited $status, expected $expected"
    fi
}
lacks() { ! grep -qF -- "$2" "$1" || { echo "--- $1"; cat "$1"; fail "did not expect '$2' in $(basename "$1")"; }; }
has() { grep -qF -- "$2" "$1" || { echo "--- $1"; cat "$1"; fail "expected '$2' in $(basename "$1")"; }; }
