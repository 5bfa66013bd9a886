#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# End-to-end tests of the built `gdrhook` tool, one case per meson test:
#   e2e.sh CASE
# Environment (set by tests/cli/meson.build): GDRHOOK (the tool),
# CLI_DATA (tests/cli/data), GDRHOOKTEST_FAKE_DRIVER_DIR, GDRHOOKTEST_DEMO,
# GDRHOOKTEST_TMP (a scratch directory), GDRHOOKTEST_SLEEPER
# (tests/programs/sleeper), GDRHOOKTEST_TERM_AFTER_SPAWN
# (tests/programs/term_after_spawn.cpp), GDRHOOKTEST_MACHINE and GDRHOOKTEST_MULTIARCH
# (the machine the tool runs on, and its multiarch name, tests/meson.build),
# GDRHOOKTEST_EXEC_WRAPPER (a cross build's emulator, tool_checks.sh).
set -u

. "$(dirname "$0")/tool_checks.sh"
tmp=$(mktemp -d "${GDRHOOKTEST_TMP:-/tmp}/cli-e2e.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out err=$tmp/err

D=$CLI_DATA

# kill_while_holding LOG N: the churn program under the shim, over the
# fake driver, pins N allocations (logged to LOG) and is killed with
# kill -9 while it holds them: it leaves its journal beside LOG.
kill_while_holding() {
    GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_EVENTS="$1" \
        LD_PRELOAD=$GDRHOOKTEST_SHIM LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR \
        $emulator "$GDRHOOKTEST_CHURN" hold "$2" 0 2 >"$1.out" &
    held=$!
    for _ in $(seq 100); do
        [ "$(grep -c '"ev":"pin"' "$1" 2>/dev/null)" = "$2" ] && break
        sleep 0.1
    done
    kill -9 $held; wait $held 2>/dev/null
}
case $1 in
help)
    run 0 --version; has "$out" "gdrhook $(sed -n "s/^  version : '\(.*\)',$/\1/p" "$(dirname "$0")/../../meson.build")"
    # Where the Slurm plugin is built, the release it is for, as the
    # header it was built against says (the system's, or -Dslurm's).
    if [ -n "${GDRHOOKTEST_SLURM_HEADER:-}" ]; then
        number=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\)$/\1/p' "$GDRHOOKTEST_SLURM_HEADER")
        [ -n "$number" ] || fail "no SLURM_VERSION_NUMBER in $GDRHOOKTEST_SLURM_HEADER"
        slurm=$(printf '%d.%02d.%d' $((number >> 16 & 255)) $((number >> 8 & 255)) $((number & 255)))
        has "$out" "Slurm plugin built for Slurm $slurm (slurmd ${slurm%.*}.x loads it"
    fi
    run 0 --help; has "$out" "run"; has "$out" "doctor"; has "$out" "node"
    for cmd in "run" "log" "log summary" "log check" "log timeline" "doctor" "node" "epilog"; do
        # shellcheck disable=SC2086
        run 0 $cmd --help; has "$out" "Usage"
    done
    ;;
bad_arguments)
    run 2; has "$err" "subcommand"
    run 2 frobnicate
    run 2 log
    run 2 log check;  has "$err" "files"
    run 2 log summary --no-such-option "$D/empty.jsonl"
    run 2 log summary --threads -1 "$D/empty.jsonl"; has "$err" "--threads"
    run 2 log summary --threads many "$D/empty.jsonl"; has "$err" "--threads"
    run 2 node --user no-such-user-anywhere; has "$err" "no user"
    run 2 epilog; has "$err" "--job"
    run 2 epilog --job 12x; has "$err" "Slurm job id"
    run 2 epilog --job 12 --step ../x; has "$err" "step id"
    run 2 log summary --threads 65 "$D/empty.jsonl"; has "$err" "--threads"
    run 2 log timeline "$D/good_pid100.jsonl"; has "$err" "--output"
    run 2 run --backend bogus -- true; has "$err" "bogus"
    run 2 run --pin sometimes -- true
    run 2 run; has "$err" "command"
    ;;
unreadable_files)
    run 2 log summary /nonexistent/x.jsonl; has "$err" "cannot open '/nonexistent/x.jsonl'"
    run 2 log check "$D/good_pid100.jsonl" /nonexistent/x.jsonl; has "$err" "No such file"
    has "$out" "8 event(s)" # the readable file is still checked
    mkdir "$tmp/no-logs"; touch "$tmp/no-logs/notes.txt"
    run 2 log summary "$tmp/no-logs"; has "$err" "no *.jsonl file under '$tmp/no-logs'"
    run 2 log check "$tmp/nothing-*.jsonl"; has "$err" "no file matches '$tmp/nothing-*.jsonl'"
    if [ "$(id -u)" != 0 ]; then
        cp "$D/good_pid100.jsonl" "$tmp/secret.jsonl"; chmod 000 "$tmp/secret.jsonl"
        run 2 log summary "$tmp/secret.jsonl"; has "$err" "Permission denied"
    fi
    ;;
malformed_lines)
    for cmd in summary check; do
        run 2 log $cmd "$D/malformed.jsonl"
        for line in 2 3 4 5 6 7 9; do has "$err" "malformed.jsonl:$line: malformed line"; done
        has "$err" 'missing required key "addr"'
    done
    run 2 log summary "$D/malformed.jsonl"; has "$out" "2 event(s)"   # the rest is read
    has "$out" "7 malformed line(s) skipped"
    run 2 log timeline "$D/malformed.jsonl" -o "$tmp/t.svg"; [ -s "$tmp/t.svg" ] || fail "no SVG"
    ;;
unfinished_last_line)
    # A writer stopped inside its last line: said, skipped.
    run 0 log summary "$D/torn_tail.jsonl"
    has "$err" "torn_tail.jsonl:$(($(wc -l < "$D/torn_tail.jsonl") + 1)): the last line stops short"
    # With no journal to hold the rest and no `died` line after it, events
    # were lost and nothing says how many: log check fails on it.
    run 1 log check "$D/torn_tail.jsonl"
    has "$out" "torn_tail.jsonl: incomplete: it ends inside a line"
    has "$out" "FAILED: 0 problem(s) in 8 event(s); 1 incomplete log(s)"
    # A good log truncated inside a line, likewise; whole, it passes.
    head -c -20 "$D/good_pid100.jsonl" >"$tmp/truncated.jsonl"
    run 1 log check "$tmp/truncated.jsonl"; has "$out" "incomplete"
    run 1 log check "$D/good_pid200.jsonl" "$tmp/truncated.jsonl" --allow error
    has "$out" "1 incomplete log(s)"
    run 0 log check "$D/good_pid100.jsonl"
    # Cut anywhere else, a line is malformed.
    run 2 log summary "$D/torn_middle.jsonl"; has "$err" "torn_middle.jsonl:3: malformed line"
    ;;
empty_log)
    run 0 log summary "$D/empty.jsonl"; has "$out" "0 event(s)"; has "$out" "no events"
    run 0 log summary --json "$D/empty.jsonl"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["events"]==0, d' "$out" ||
        fail "summary --json of an empty log is not valid JSON"
    run 0 log check "$D/empty.jsonl"; has "$out" "OK"
    run 0 log timeline "$D/empty.jsonl" -o "$tmp/empty.svg"
    ;;
summary)
    run 0 log summary "$D/good_pid100.jsonl" "$D/good_pid200.jsonl"
    has "$out" "16 event(s) from 2 process(es)"
    has "$out" "revocations      1"
    has "$out" "2 unpin(s): p50"
    has "$out" "pin failed: out of BAR1"
    run 0 log summary --json "$D/good_pid100.jsonl" "$D/good_pid200.jsonl"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["by_kind"]["pin"]["count"]==2 and d["processes"]==2, d' "$out" ||
        fail "summary --json"
    ;;
check_passes)
    run 0 log check "$D/good_pid100.jsonl"
    has "$out" "gdrhook log check: OK"
    # good_pid200.jsonl logs a failed pin (an error event): expected here.
    run 0 log check --allow "error:pin failed" "$D/good_pid100.jsonl" "$D/good_pid200.jsonl"
    has "$out" "gdrhook log check: OK"; has "$out" "allowed: error 1"
    run 0 log check --allow error "$D/good_pid100.jsonl" "$D/good_pid200.jsonl"
    run 2 log check --allow errors "$D/good_pid100.jsonl"; has "$err" "unknown problem kind 'errors'"
    ;;
check_error_events)
    run 1 log check "$D/good_pid100.jsonl" "$D/good_pid200.jsonl"
    has "$out" "good_pid200.jsonl:8: error event: pid 200, cuMemAlloc_v2 0x0 + 0 B (rc 2): pin failed: out of BAR1"
    has "$out" "FAILED: 1 problem(s)"
    run 1 log check --allow "error:export" "$D/good_pid100.jsonl" "$D/good_pid200.jsonl"
    ;;
check_revoke_without_unpin)
    run 1 log check "$D/revoked_not_unpinned.jsonl"
    has "$out" "revoked_not_unpinned.jsonl:3: revoked pin never unpinned: pid 600, handle 4"
    has "$out" "FAILED: 1 problem(s)"
    ;;
check_pin_never_unpinned)
    run 1 log check "$D/killed.jsonl"
    has "$out" "killed.jsonl:2: pin never unpinned: pid 300, handle 3"
    has "$out" "FAILED: 1 problem(s)"
    ;;
check_free_without_unpin)
    run 1 log check "$D/freed_pinned.jsonl"
    has "$out" "freed_pinned.jsonl:3: free of pinned memory without unpin: pid 400, cuMemFree_v2"
    has "$out" "pinned at $D/freed_pinned.jsonl:2"
    ;;
check_verify_errors)
    run 1 log check "$D/verify.jsonl"
    has "$out" "verify.jsonl:2: verify-mode finding"
    has "$out" "verify.jsonl:3: verify-mode finding"
    has "$out" "verify-mode finding: 2"
    has "$out" "verify.jsonl:4: error event: pid 500, cuMemGetHandleForAddressRange"
    run 1 log check --allow error "$D/verify.jsonl"; has "$out" "FAILED: 2 problem(s)"
    ;;
check_double_unpin)
    run 1 log check "$D/double_unpin.jsonl"
    has "$out" "double_unpin.jsonl:3: unpin or revoke of a handle that is not pinned"
    ;;
check_all_problems_together)
    run 1 log check "$D/good_pid100.jsonl" "$D/killed.jsonl" "$D/freed_pinned.jsonl" "$D/verify.jsonl" \
        "$D/revoked_not_unpinned.jsonl"
    has "$out" "FAILED: 6 problem(s)"
    ;;
job)
    # The logs of a job: a folder per host, a file per rank; ranks 0 and 2
    # have the same pid on two hosts. Given as a folder, as a pattern the
    # shell did not expand, and with a file named twice.
    run 1 log check "$D/job"
    has "$out" "job/nodeB/rank2.jsonl:4: free of pinned memory without unpin: rank 2, host nodeB, pid 700, cuMemFree_v2"
    has "$out" "FAILED: 1 problem(s) in 14 event(s)"
    run 0 log check --allow freed-while-pinned "$D/job"
    run 0 log summary "$D/job"
    has "$out" "3 file(s), 14 event(s) from 3 process(es)"
    has "$out" "3 process(es) on 2 host(s); 3 \`process\` line(s); 3 with a rank (0 to 2)"
    has "$out" "  nodeA               2 process(es), 10 event(s), 2 pin(s), peak pinned 12 MiB"
    has "$out" "most pinned memory, by process (peak)
  rank 1 (nodeA)          8 MiB (1 pin(s))"
    # Parsed on worker threads or not, the same summary.
    cp "$out" "$tmp/job-summary"
    for threads in 0 1 3; do
        run 0 log summary --threads "$threads" "$D/job"
        cmp -s "$out" "$tmp/job-summary" || fail "log summary --threads $threads prints another summary"
    done
    run 0 log summary "$D/job/*/rank*.jsonl" "$D/job/nodeA/rank0.jsonl"
    has "$out" "3 file(s), 14 event(s) from 3 process(es)"
    run 0 log summary --json "$D/job"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); h=d["by_host"]; assert [x["host"] for x in h]==["nodeA","nodeB"] and h[0]["peak_pinned_bytes"]==12<<20 and [p["rank"] for p in d["by_process"]]==[0,1,2], d' "$out" ||
        fail "summary --json of a job"
    run 0 log timeline "$D/job" -o "$tmp/job.svg"
    has "$tmp/job.svg" ">rank 2 (nodeB)<"
    ;;
many_files)
    # More logs than the process may open: 300 ranks, all with pid 1000,
    # read under a limit of 48 descriptors.
    mkdir "$tmp/many"
    for r in $(seq 0 299); do
        {
            printf '{"ts_ns":%d,"pid":1000,"tid":1000,"ev":"process","api":"gdrhook","addr":"0x0","size":0,"dev":-1,"rc":0,"host":"n%d","rank":%d}\n' $((1000 + r)) $((r / 8)) "$r"
            printf '{"ts_ns":%d,"pid":1000,"tid":1000,"ev":"pin","api":"a","addr":"0x1000","size":4096,"dev":0,"rc":0,"handle":1}\n' $((2000 + r))
            printf '{"ts_ns":%d,"pid":1000,"tid":1000,"ev":"unpin","api":"f","addr":"0x1000","size":4096,"dev":0,"rc":0,"handle":1,"lat_ns":%d}\n' $((3000 + r)) $((1000 + r))
        } >"$tmp/many/rank$r.jsonl"
    done
    ( ulimit -n 48 || exit 1
      run 0 log check "$tmp/many"; has "$out" "OK: 900 event(s), 300 pin(s)"
      run 0 log summary "$tmp/many"; has "$out" "300 process(es) on 38 host(s)"
    ) || fail "300 logs under ulimit -n 48"
    ;;
timeline)
    run 0 log timeline "$D/good_pid100.jsonl" "$D/good_pid200.jsonl" "$D/killed.jsonl" -o "$tmp/t.svg"
    has "$out" "wrote $tmp/t.svg"
    python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$tmp/t.svg" ||
        fail "the SVG is not well-formed XML"
    has "$tmp/t.svg" ">pid 300<"
    if command -v rsvg-convert >/dev/null; then
        rsvg-convert "$tmp/t.svg" -o "$tmp/t.png" && [ -s "$tmp/t.png" ] || fail "rsvg-convert failed"
    fi
    if grep -q "(sampled)" "$tmp/t.svg"; then fail "sample panels in a timeline without samples"; fi
    run 2 log timeline "$D/good_pid100.jsonl" -o /nonexistent/dir/t.svg; has "$err" "cannot write"
    ;;
samples)
    # GDRHOOK_SAMPLE_MS's `sample` lines: summary and timeline report them,
    # check ignores them.
    run 0 log summary "$D/samples.jsonl"
    has "$out" "sample              9"
    has "$out" "process samples (first -> last, max)"
    has "$out" "pid 500     6 sample(s) over 5 s: rss 100 MiB -> 120 MiB (max 130 MiB), open fds 10 -> 12 (max 14)"
    has "$out" "pid 501     3 sample(s) over 2 s: rss 50 MiB -> 52 MiB (max 52 MiB), open fds 5 -> 7 (max 7)"
    run 0 log summary --json "$D/samples.jsonl"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["samples"]; assert [p["pid"] for p in s]==[500,501] and s[0]["rss_bytes"]["max"]==130<<20, s' "$out" ||
        fail "summary --json samples"
    run 0 log check "$D/samples.jsonl"; has "$out" "gdrhook log check: OK"
    run 0 log timeline "$D/samples.jsonl" -o "$tmp/s.svg"
    python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$tmp/s.svg" ||
        fail "the SVG is not well-formed XML"
    has "$tmp/s.svg" "process memory (resident, sampled)"
    has "$tmp/s.svg" "open file descriptors (sampled)"
    has "$tmp/s.svg" ">pid 501<"
    if command -v rsvg-convert >/dev/null; then
        rsvg-convert "$tmp/s.svg" -o "$tmp/s.png" && [ -s "$tmp/s.png" ] || fail "rsvg-convert failed"
    fi
    ;;
real_samples)
    # The shim's own samples, from a quiet program holding pins for 300 ms.
    LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR run 0 run --sample-ms 20 --pin alloc \
        --backend dmabuf --events "$tmp/quiet.jsonl" -- $emulator "$GDRHOOKTEST_CHURN" sleep 2 300 2
    has "$err" "gdrhook: log check: OK"
    run 0 log summary "$tmp/quiet.jsonl"; has "$out" "process samples"; has "$out" "open fds"
    run 0 log timeline "$tmp/quiet.jsonl" -o "$tmp/quiet.svg"
    has "$tmp/quiet.svg" "open file descriptors (sampled)"
    ;;
run_exit_status)
    run 3 run --events "$tmp/e.%p.jsonl" -- sh -c 'exit 3'
    has "$err" "no event log was written"
    run 137 run --events "$tmp/e.%p.jsonl" -- sh -c 'kill -9 $$'; has "$err" "killed by signal 9"
    # As env says it: 127 where there is no such program, 126 where there
    # is one that cannot be run (no execute permission, a folder), named
    # with a path or found in PATH; the same under emulation, whatever the
    # emulator makes of a failed exec (qemu-user's posix_spawn forks, and
    # its child's exit status is 127 for any of them).
    run 127 run -- /nonexistent/program
    has "$err" "cannot run '/nonexistent/program'"
    run 127 run --no-summary -- gdrhook-no-such-program
    has "$err" "not found"
    printf '#!/bin/sh\nexit 0\n' >"$tmp/not-executable"; chmod 644 "$tmp/not-executable"
    run 126 run --no-summary -- "$tmp/not-executable"
    has "$err" "cannot run '$tmp/not-executable': it has no execute permission"
    mkdir "$tmp/folder"
    run 126 run --no-summary -- "$tmp/folder"
    has "$err" "cannot run '$tmp/folder': it is a folder"
    mkdir "$tmp/bin"; cp "$tmp/not-executable" "$tmp/bin/gdrhook-test-tool"
    PATH="$tmp/bin:$PATH" run 126 run --no-summary -- gdrhook-test-tool
    has "$err" "it has no execute permission"
    run 0 run --help; has "$out" "126 if it exists but cannot be executed"
    # The build's own program (a host `true` under a cross build would
    # have its loader complain of the target's shim).
    run 0 run --no-summary -- $emulator "$GDRHOOKTEST_SLEEPER" 0
    [ ! -s "$err" ] || fail "--no-summary printed: $(cat "$err")"
    ;;
run_environment)
    run 0 run --events "$tmp/e.%p.jsonl" --backend dmabuf --pin alloc --verify --log-level info \
        --sample-ms 1000 \
        -- sh -c 'echo "$LD_PRELOAD|$GDRHOOK_EVENTS|$GDRHOOK_BACKEND|$GDRHOOK_PIN|$GDRHOOK_VERIFY|$GDRHOOK_LOG_LEVEL|$GDRHOOK_SAMPLE_MS"'
    has "$out" "libgdrhook.so|$tmp/e.%p.jsonl|dmabuf|alloc|1|info|1000"
    # An LD_PRELOAD already set is kept, after the shim.
    # The tool's machine's libdl (under a cross build the target's: its
    # loader preloads it).
    other=$(ls "/lib/$GDRHOOKTEST_MULTIARCH/libdl.so.2" /lib64/libdl.so.2 2>/dev/null | head -1)
    LD_PRELOAD=$other run 0 run --no-summary -- sh -c 'echo "$LD_PRELOAD"'
    has "$out" "libgdrhook.so:$other"
    GDRHOOK_LIBRARY=/nonexistent/libgdrhook.so run 127 run -- true
    has "$err" "cannot find libgdrhook.so"
    ;;
run_fake_driver)
    # The bundled demo program against the fake driver, under the shim.
    cd "$tmp" || exit 1
    LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR run 0 run -- $emulator "$GDRHOOKTEST_DEMO"
    has "$err" "gdrhook: log check: OK"
    set -- "$tmp"/gdrhook-*.jsonl
    [ -s "$1" ] || fail "no event log in $tmp"
    run 0 log check "$@"
    run 0 log summary "$@"; has "$out" "cuMemFree_v2"
    run 0 log timeline "$@" -o "$tmp/demo.svg"
    ;;
host_names)
    # Issue 40: %h is the short host name, one for the shim (which names
    # the log) and for `gdrhook run` (which finds it to check it): whatever
    # the machine is called, the path gets no empty component, no leading
    # dot and no extra folder. Each name set in a UTS namespace of its own.
    if unshare --uts true 2>/dev/null; then in_uts="unshare --uts"
    elif unshare --user --map-root-user --uts true 2>/dev/null; then
        in_uts="unshare --user --map-root-user --uts"
    else echo "SKIP: cannot make a UTS namespace here (unshare)"; exit 77; fi
    for name in '' '.lead' 'a/b.example'; do
        rm -rf "$tmp/h"; mkdir "$tmp/h"
        $in_uts sh -c 'python3 -c "import socket, sys; socket.sethostname(sys.argv[1])" "$1" &&
            shift && exec "$@"' sh "$name" $emulator "$GDRHOOK" run --events "$tmp/h/%h.%p.jsonl" \
            -- $emulator "$GDRHOOKTEST_DEMO" >"$out" 2>"$err" || { cat "$err"; fail "host '$name': run failed"; }
        has "$err" "gdrhook: log check: OK"
        logs=$(ls -A "$tmp/h")
        case $name in '') want=localhost ;; .lead) want=localhost ;; *) want=a_b ;; esac
        case $logs in "$want".[0-9]*.jsonl) ;; *) fail "host '$name': logged to '$logs', not $want.PID.jsonl" ;; esac
        has "$tmp/h/$logs" "\"host\":\"$want\""
    done
    ;;
real_pins_and_kill)
    # Real logs from the shim over the fake driver: pin on alloc through
    # `gdrhook run` passes the check; a process killed with kill -9 while
    # it holds pins passes it once its journal is recovered (its death
    # released them), and fails it without the journal, each pin named
    # with its line.
    LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR run 0 run --pin alloc --backend dmabuf --verify \
        --events "$tmp/churn.%p.jsonl" -- $emulator "$GDRHOOKTEST_CHURN" gdrhook 2 20 2
    has "$err" "gdrhook: log check: OK"
    run 0 log check "$tmp"/churn.*.jsonl; has "$out" "40 pin(s)"
    kill_while_holding "$tmp/held.jsonl" 3
    cp "$tmp/held.jsonl" "$tmp/unrecovered.jsonl"
    run 0 log check "$tmp/held.jsonl"
    has "$err" "ended without writing its log"
    has "$out" "3 pin(s) released by death"
    run 1 log check "$tmp/unrecovered.jsonl"
    [ "$(grep -c "jsonl:[0-9]*: pin never unpinned: \(host [^,]*, \)\?pid" "$out")" = 3 ] || { cat "$out"; fail "expected 3 pins never unpinned"; }
    has "$out" "FAILED: 3 problem(s)"
    ;;
file_size_limit)
    # A file-size limit (as a 256 KiB file system) stops the log inside a
    # line and leaves no room for a journal or for the line that counts
    # the loss: log check must fail on what it cannot see.
    (
        ulimit -f 32 # 16 KiB (dash counts 512-byte blocks), or 32 KiB
        trap '' XFSZ # the writes fail with EFBIG instead of killing it
        GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_EVENTS="$tmp/limited.jsonl" \
            LD_PRELOAD=$GDRHOOKTEST_SHIM LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR \
            $emulator "$GDRHOOKTEST_CHURN" gdrhook 2 100 2 >"$tmp/limited.out" 2>&1
    )
    [ "$(wc -c <"$tmp/limited.jsonl")" -le 32768 ] || fail "the file-size limit did not hold"
    has "$tmp/limited.out" "event(s) lost; there is no journal"
    run 1 log check "$tmp/limited.jsonl"
    has "$out" "limited.jsonl: incomplete: it ends inside a line"
    ;;
hard_linked_logs)
    # A log with a second name (where fs.protected_hardlinks is 0, another
    # user's hard link to a file of theirs, or of root's) is refused by
    # every command that reads logs, as a symbolic link is: named alone or
    # found in a folder; nothing of it is read, and the exit is 2 (epilog:
    # 1, its verdict names the refusal).
    mkdir "$tmp/logs" "$tmp/no-proc" "$tmp/no-sys"
    cp "$D/good_pid100.jsonl" "$tmp/logs/100.log.jsonl"
    ln "$tmp/logs/100.log.jsonl" "$tmp/second-name"
    for cmd in summary check timeline; do
        extra=""; [ $cmd = timeline ] && extra="-o $tmp/t.svg"
        for input in "$tmp/logs/100.log.jsonl" "$tmp/logs"; do
            # shellcheck disable=SC2086
            run 2 log $cmd "$input" $extra
            has "$err" "will not read a file with other names"
            lacks "$out" "pid 100"
            lacks "$out" "8 event(s)"
        done
    done
    run 1 epilog --job 7 --events "$tmp/logs/%p.log.jsonl" --summary "$tmp/summary.txt" \
        --proc "$tmp/no-proc" --sys "$tmp/no-sys"
    has "$tmp/summary.txt" "will not read a file with other names"
    # log recover: a journal is never appended to a log with a second
    # name; both stay as they were.
    kill_while_holding "$tmp/held.jsonl" 1
    ls "$tmp"/held.jsonl.*.journal >/dev/null 2>&1 || fail "the killed process left no journal"
    ln "$tmp/held.jsonl" "$tmp/held-second-name"
    cp "$tmp/held.jsonl" "$tmp/held.before"
    for cmd in recover check summary; do
        run 2 log $cmd "$tmp/held.jsonl"
        has "$err" "other names"
        cmp -s "$tmp/held.jsonl" "$tmp/held.before" || fail "log $cmd appended to a log with a second name"
        ls "$tmp"/held.jsonl.*.journal >/dev/null 2>&1 || fail "log $cmd removed the journal"
    done
    ;;
run_arguments)
    # Row 9 of issue 31: the program gets exactly its arguments.
    run 0 run --no-summary -- /bin/echo a b
    [ "$(cat "$out")" = "a b" ] || fail "echo printed '$(cat "$out")'"
    run 0 run --no-summary -- /usr/bin/test 1 = 1
    run 0 run --no-summary -- /bin/echo -- x --
    [ "$(cat "$out")" = "-- x --" ] || fail "echo printed '$(cat "$out")'"
    run 0 run --no-summary /bin/echo c d
    [ "$(cat "$out")" = "c d" ] || fail "echo printed '$(cat "$out")'"
    # Issues 38 and 39 (item 6): as env, timeout and nohup read theirs,
    # gdrhook run's options end at the program's name or at the first
    # `--`; every word from the program's name on is the program's,
    # options and a `--` of its own included, in order.
    show_words='printf "[%s]" "$0" "$@"'
    for words in '-n a -- b' '-- x --' '--events x -- y' '--help' '--version -- --' '-' '--no-summary'; do
        # shellcheck disable=SC2086 # the words, split as written above
        direct=$(sh -c "$show_words" prog $words)
        for separator in '' '--'; do
            # shellcheck disable=SC2086
            run 0 run --no-summary --events "$tmp/w.%p.jsonl" $separator sh -c "$show_words" prog $words
            [ "$(cat "$out")" = "$direct" ] ||
                fail "gdrhook run $separator sh -c ... prog $words: the program got $(cat "$out"), not $direct"
        done
    done
    # Empty words and spaces are words too.
    run 0 run --no-summary -- sh -c "$show_words" prog '' 'a b' ' ' --
    [ "$(cat "$out")" = "[prog][][a b][ ][--]" ] || fail "the program got $(cat "$out")"
    # The program's own options: echo's -n, not gdrhook's to move.
    run 0 run --no-summary /bin/echo -n a -- b
    [ "$(cat "$out")" = "$(/bin/echo -n a -- b)" ] || fail "echo printed '$(cat "$out")'"
    # An --events after the program's name is the program's: gdrhook's
    # log goes where gdrhook run's own --events says.
    run 0 run --events "$tmp/mine.%p.jsonl" sh -c "$show_words" prog --events "$tmp/theirs.%p.jsonl"
    [ "$(cat "$out")" = "[prog][--events][$tmp/theirs.%p.jsonl]" ] || fail "the program got $(cat "$out")"
    has "$err" "$tmp/mine.%p.jsonl"
    # An option gdrhook run does not know, before the program, is refused
    # (a program whose name starts with '-' follows --).
    run 2 run --no-such-option true; has "$err" "unknown option --no-such-option"
    run 2 run --no-such-option -- true; has "$err" "--no-such-option"
    # (Under emulation a failed exec shows only as the status, as above.)
    run 127 run --no-summary -- -not-an-option
    [ -n "$emulator" ] || has "$err" "-not-an-option"
    ;;
run_signals)
    # Issue 39, items 7, 8 and 14: gdrhook run treats signals as env and
    # timeout do. Started with SIGCHLD ignored, it still learns the
    # program's status.
    run 7 run --no-summary -- sh -c 'exit 7'
    env --ignore-signal=CHLD $emulator "$GDRHOOK" run --no-summary -- sh -c 'exit 7'
    status=$?
    [ "$status" = 7 ] || fail "under SIGCHLD ignored, gdrhook run exited $status for a program that exited 7"
    # The program inherits what gdrhook run inherited: what is ignored
    # stays ignored (nohup's SIGHUP, a background job's SIGINT and
    # SIGQUIT), the rest default, the signal mask as it was.
    # (Leaving out signals 32 and 33: glibc's posix_spawn starts every
    # program with those two, its own, ignored; no program may use them.)
    # Natively only: qemu-user keeps the guest's dispositions in tables of
    # its own and installs host handlers, which the host's exec of the
    # program resets, so an ignored signal arrives at the default there
    # and qemu's own signals show as ignored, with or without gdrhook.
    if [ -z "$emulator" ]; then
        dispositions='set -- $(sed -n "s/^Sig\(Ign\|Blk\):[[:space:]]*/0x/p" /proc/self/status)
            printf "blocked %x ignored %x\n" $(($1)) $(($2 & ~0x180000000))'
        # Started with USR2 and ALRM blocked (as python3 below leaves them).
        blocked() { python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGALRM})
os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }
        for mask in unchanged blocked; do
            wrap=; [ "$mask" = blocked ] && wrap=blocked
            for ignored in '' HUP INT,QUIT TERM HUP,INT,QUIT,TERM,PIPE,USR1; do
                direct=$($wrap env ${ignored:+--ignore-signal=$ignored} sh -c "$dispositions")
                $wrap env ${ignored:+--ignore-signal=$ignored} $emulator "$GDRHOOK" run --no-summary -- \
                    sh -c "$dispositions" >"$out" 2>"$err" || fail "gdrhook run failed"
                [ "$(cat "$out")" = "$direct" ] ||
                    fail "with ${ignored:-nothing} ignored (mask $mask) the program got $(cat "$out"), not $direct as without gdrhook"
            done
        done
        # Under nohup the job survives a hangup of its process group, as it
        # does without gdrhook; a background job (SIGINT and SIGQUIT ignored)
        # survives the Ctrl-C meant for the shell.
        survives() { # SIGNAL IGNORE-LIST
            rm -f "$tmp/started"
            setsid env --ignore-signal="$2" $emulator "$GDRHOOK" run --no-summary -- \
                sh -c ': >"$0"; sleep 1; echo survived' "$tmp/started" >"$out" 2>"$err" &
            leader=$!
            tries=0
            until [ -e "$tmp/started" ]; do
                tries=$((tries + 1)); [ "$tries" -lt 500 ] || fail "the program did not start"
                sleep 0.01
            done
            kill -s "$1" -- "-$leader" || fail "cannot signal process group $leader"
            wait "$leader"
            status=$?
            [ "$status" = 0 ] && has "$out" survived ||
                fail "with $2 ignored, a SIG$1 to the job's group ended it (status $status)"
        }
        survives HUP HUP
        survives INT INT,QUIT
        survives QUIT INT,QUIT
    fi
    # A SIGTERM to gdrhook alone is passed on; the status is the
    # program's, 128+N for a death by signal N.
    run 143 run --no-summary -- sh -c 'kill -TERM $PPID; exec sleep 5'
    # And so is one that arrives while posix_spawnp starts the program,
    # before gdrhook run knows the program's pid: not lost.
    started=$(date +%s)
    LD_PRELOAD=$GDRHOOKTEST_TERM_AFTER_SPAWN run 143 run --no-summary -- $emulator "$GDRHOOKTEST_SLEEPER" 5
    [ $(($(date +%s) - started)) -lt 4 ] || fail "the program ran on after gdrhook run's SIGTERM"
    ;;
odd_ranks)
    # Issue 39 (item 9): whatever RANK says, the log stays valid JSON and
    # passes log check: a rank with leading zeros is the number it names;
    # one too large for a rank (0 … 2147483647, as MPI's int) is left out,
    # and said.
    cd "$tmp" || exit 1
    for rank in 007 0 2147483647 2147483648 99999999999999999999 -1 1e3; do
        rm -f "$tmp"/rank.*.jsonl
        RANK=$rank LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR \
            run 0 run --events "$tmp/rank.%p.jsonl" -- $emulator "$GDRHOOKTEST_DEMO"
        has "$err" "gdrhook: log check: OK"
        set -- "$tmp"/rank.*.jsonl
        run 0 log check "$@"
        python3 -c '
import json, sys
process = next(l for l in map(json.loads, open(sys.argv[1])) if l["ev"] == "process")
want = {"007": 7, "0": 0, "2147483647": 2147483647}.get(sys.argv[2])
assert process.get("rank") == want, (sys.argv[2], process.get("rank"))
' "$1" "$rank" || fail "RANK=$rank"
    done
    RANK=99999999999999999999 LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR \
        run 0 run --events "$tmp/rank.%p.jsonl" -- $emulator "$GDRHOOKTEST_DEMO"
    has "$err" "RANK"
    ;;
not_a_log)
    # Row 10: a file that is not a log fails, and the verdict matches the
    # exit status.
    printf 'hello' >"$tmp/hello.jsonl"
    run 2 log check "$tmp/hello.jsonl"; has "$err" "hello.jsonl:1: malformed line"
    lacks "$out" "OK"
    run 2 log check "$tmp/missing.jsonl"; lacks "$out" "OK"; has "$out" "could not be read"
    ;;
said_and_failed)
    # Row 11: a bad setting is said whatever the log level; an output that
    # cannot be written is an error; a message stays readable.
    for level in off critical; do
        GDRHOOK_LOG_LEVEL=$level GDRHOOK_PIN=sometimes LD_PRELOAD=$GDRHOOKTEST_SHIM \
            LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR $emulator "$GDRHOOKTEST_DEMO" >"$out" 2>"$err" ||
            fail "the demo failed"
        has "$err" "GDRHOOK_PIN"
    done
    if [ -w /dev/full ]; then
        $emulator "$GDRHOOK" log summary --json "$D/good_pid100.jsonl" >/dev/full 2>"$err"
        [ $? = 2 ] || fail "log summary to /dev/full did not fail"
        has "$err" "cannot write the output"
    fi
    run 2 doctor --pid 0
    [ "$(wc -c <"$err")" -lt 300 ] || { cat "$err"; fail "the message is not readable"; }
    has "$err" "4194304"
    ;;
doctor_without_driver)
    run 1 doctor --libcuda /nonexistent/libcuda.so.1 --device "$tmp/no-device"
    has "$out" "[FAIL] /nonexistent/libcuda.so.1: not found"
    has "$out" "install the NVIDIA driver"
    has "$out" "not present"
    has "$out" "auto would pick none"
    ;;
doctor_fake_driver)
    LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR run 0 doctor --libnvml /nonexistent/libnvidia-ml.so.1 \
        --device "$tmp/no-device"
    has "$out" "GPU 0: gdrhook fake GPU"
    has "$out" "discrete: DMA-BUF yes, GPUDirect RDMA yes"
    has "$out" "platform: $GDRHOOKTEST_MACHINE"
    has "$out" "backends this machine allows: none yes, dmabuf yes, kmod no, pin_user_pages no"
    has "$out" "auto would pick dmabuf"
    has "$out" "no problems found"
    # The fake driver's integrated-GPU mode: the GPU says it is integrated;
    # without the module the machine allows no pin_user_pages.
    FAKECUDA_INTEGRATED=1 LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR run 0 doctor \
        --libnvml /nonexistent/libnvidia-ml.so.1 --device "$tmp/no-device"
    has "$out" "GPU 0: gdrhook fake GPU, integrated: DMA-BUF yes"
    has "$out" "pin_user_pages no"
    # A driver whose cuInit fails (the fake made to refuse it): a problem,
    # in the driver's words and code, with its advice; exit status 1.
    FAKECUDA_FAIL=cuInit:1:100 LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR run 1 doctor \
        --libnvml /nonexistent/libnvidia-ml.so.1 --device "$tmp/no-device"
    has "$out" "[FAIL] libcuda.so.1 ("
    has "$out" "): cuInit failed: fake driver error (100)"
    has "$out" "-> check that the kernel driver is loaded"
    lacks "$out" "GPU 0:"
    run 1 doctor --libcuda /nonexistent/libcuda.so.1 --device /dev/null
    if [ -z "$emulator" ]; then
        has "$out" "not the gdrhook module's device"
    else
        # qemu-user passes on only the ioctls it knows and answers ENOSYS
        # to the module's (natively /dev/null answers ENOTTY): still no
        # usable device.
        has "$out" "[FAIL] /dev/null: GET_VERSION failed: Function not implemented"
    fi
    ;;
*)
    fail "unknown case '$1'"
    ;;
esac
echo "ok: $1"
