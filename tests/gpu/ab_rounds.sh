# SPDX-License-Identifier: MIT OR GPL-2.0-only
# shellcheck shell=bash
#
# Sourced by the scripts that run a real library plain and under gdrhook
# (libfabric.sh, openmpi.sh), which define run_pair SETUP MODE ROUND: for
# each setup, the count and verify modes once (round 0), then plain and
# hooked ROUNDS times, the order swapped every round so that a drift of
# the machine falls on both.
#   ab_rounds ROUNDS SETUP...
ab_rounds() {
    local rounds=$1 setup round
    shift
    for setup in "$@"; do
        run_pair "$setup" count 0
        run_pair "$setup" verify 0
        for round in $(seq "$rounds"); do
            if [ $((round % 2)) = 1 ]; then
                run_pair "$setup" plain "$round"
                run_pair "$setup" hooked "$round"
            else
                run_pair "$setup" hooked "$round"
                run_pair "$setup" plain "$round"
            fi
        done
    done
}
