#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# gdrhook among hostile users and broken surroundings, one case per meson
# test (docs/design.md, "Files and descriptors"):
#   hostile.sh CASE
# Environment (set by tests/hostile/meson.build): GDRHOOK (the tool),
# GDRHOOKTEST_SHIM, GDRHOOKTEST_FAKE_DRIVER_DIR, GDRHOOKTEST_DEMO, HOSTILE_PROGRAM,
# CLI_DATA, GDRHOOKTEST_TMP (a scratch directory).
#
# The two-user cases run the attacker as an unprivileged user made for the
# test (gdrhook-attacker, with setpriv) in a shared sticky folder, with
# fs.protected_symlinks=0 as in many containers, and root as the victim.
# Where that cannot be arranged (not root, no sysctl, no mount) a case
# says why and exits 77: meson counts it as skipped, never as passed.
#
# COVERAGE: what each command and each file the shim writes is checked
# against, and by which cases (every_command checks this table).
#   run          planted log names in a pid namespace; a relative default
#                log of a program that changes folder [planted_run_names, relative_events]
#   log summary  links to /proc/kmsg and root's logs, FIFOs; journals not
#                gdrhook's or lying about sizes [log_inputs_refused, foreign_journal, oversized_journal]
#   log check    the same, a log with lost events, a forged journal beside
#                a link [log_inputs_refused, symlink_recovery, full_disk, full_at_start]
#   log timeline the same inputs; a link planted at the SVG's name [log_inputs_refused]
#   log recover  forged journals, links at the log's and the journal's
#                names, torn lines of another writer [symlink_recovery,
#                symlinked_journal, torn_line, died_before_freeing]
#   doctor       a link or a FIFO at the device's name [doctor_device]
#   node         links at the textfile's temporary and final names, another
#                user's textfile [prometheus_planted]
#   epilog       run as root for the attacker's job: a link at the summary's
#                name, a log that links to root's [epilog_planted]
#   shim's event log  links, hard links, another user's file, FIFOs and
#                devices at its name, a full disk before and during the run, a
#                relative name and a chdir, non-UTF-8 names, closefrom (with
#                and without a descriptor table of its own), a pipe the program
#                made before it [planted_log_names, fifo_log, full_disk,
#                full_at_start, relative_events, non_utf8, closefrom, pipe_eof]
#   shim's journal  made nameless then linked (never at a planted name),
#                recovered only for its owner's log [symlink_recovery, died_before_freeing, relative_events]
# END COVERAGE
set -u

. "$(dirname "$0")/../cli/tool_checks.sh"
skip() { echo "SKIP: $*"; exit 77; }
# Under /tmp, not the build folder: the attacker's user must reach the
# shared folder, and a build tree may sit under a home or a scratch folder
# only its owner can enter (the mutation run's is mode 700).
tmp=$(mktemp -d /tmp/gdrhook-hostile.XXXXXX) || exit 1
chmod 755 "$tmp"
on_exit=""
trap 'eval "$on_exit"; rm -rf "$tmp"' EXIT
out=$tmp/out err=$tmp/err

# Under the shim, over the fake driver.
shimmed() { env LD_PRELOAD="$GDRHOOKTEST_SHIM" LD_LIBRARY_PATH="$GDRHOOKTEST_FAKE_DRIVER_DIR" "$@"; }
count() { grep -c -- "$1" "$2" 2>/dev/null || true; }
# Every line of each file is one JSON object of strict UTF-8.
valid_json_lines() {
    python3 - "$@" <<'PY' || fail "not valid JSON lines: $*"
import json, sys
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            json.loads(line.decode("utf-8", errors="strict"))
PY
}

attacker=gdrhook-attacker
two_users() {
    [ "$(id -u)" = 0 ] || skip "runs as root to make the attacker's user"
    command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
    getent passwd "$attacker" >/dev/null ||
        useradd -M -r -s /usr/sbin/nologin "$attacker" 2>/dev/null ||
        getent passwd "$attacker" >/dev/null || skip "cannot create the user $attacker"
    attacker_uid=$(id -u "$attacker") attacker_gid=$(id -g "$attacker")
    # A command prefix, not a function: `$attacker_runner prog &` leaves
    # the program's own pid in $!.
    attacker_runner="setpriv --reuid=$attacker_uid --regid=$attacker_gid --clear-groups"
    # Symlinks in sticky folders followed as in containers that leave
    # fs.protected_symlinks at 0; restored when the case ends.
    protected=$(cat /proc/sys/fs/protected_symlinks 2>/dev/null || echo 0)
    if [ "$protected" != 0 ]; then
        sysctl -qw fs.protected_symlinks=0 2>/dev/null || skip "cannot set fs.protected_symlinks=0"
        on_exit="sysctl -qw fs.protected_symlinks=$protected; $on_exit"
    fi
    shared=$tmp/shared
    mkdir "$shared" && chmod 1777 "$shared"
    # What root keeps where the attacker cannot write; no final newline.
    mkdir -m 700 "$tmp/root-only"
    printf 'root data\nlast line without newline' >"$tmp/root-only/target"
    cp "$tmp/root-only/target" "$tmp/target.before"
}
as_attacker() { $attacker_runner "$@"; }
target_intact() {
    cmp -s "$tmp/root-only/target" "$tmp/target.before" ||
        { echo "--- target now:"; od -c "$tmp/root-only/target" | head -20; fail "root's file was written: $*"; }
}

# A tmpfs of SIZE at $disk (unmounted when the case ends); fill_disk
# leaves about $1 KiB of it free.
small_disk() {
    [ "$(id -u)" = 0 ] || skip "mounting a small tmpfs needs root"
    disk=$tmp/disk
    mkdir "$disk"
    mount -t tmpfs -o "size=$1" tmpfs "$disk" 2>/dev/null || skip "cannot mount a tmpfs here"
    on_exit="umount -l '$disk'; $on_exit"
}
fill_disk() {
    cat /dev/zero >"$disk/filler" 2>/dev/null
    truncate -s "-$1K" "$disk/filler"
}

# Starts HOSTILE_PROGRAM pairs N gate under the shim (as whoever runs
# `$runner`), with the environment given before it, and waits until it has
# made its first pair. Sets $program_pid; `release_gate` lets it go on.
start_gated() { # runner N env...
    runner=$1 pairs=$2; shift 2
    rm -f "$tmp/gate" "$tmp/gated.out"
    mkfifo -m 666 "$tmp/gate"
    # Another user runs copies of the program, the shim and the fake
    # driver from the test's folder, which it can reach wherever the build
    # tree is.
    local program=$HOSTILE_PROGRAM shim=$GDRHOOKTEST_SHIM driver=$GDRHOOKTEST_FAKE_DRIVER_DIR
    if [ -n "$runner" ]; then
        mkdir -p -m 755 "$tmp/bin"
        cp "$HOSTILE_PROGRAM" "$GDRHOOKTEST_SHIM" "$tmp/bin/"
        cp -L "$GDRHOOKTEST_FAKE_DRIVER_DIR"/lib*.so* "$tmp/bin/" 2>/dev/null
        chmod -R a+rX "$tmp/bin"
        program=$tmp/bin/$(basename "$HOSTILE_PROGRAM") shim=$tmp/bin/$(basename "$GDRHOOKTEST_SHIM")
        driver=$tmp/bin
    fi
    $runner env "$@" LD_PRELOAD="$shim" LD_LIBRARY_PATH="$driver" \
        "$program" pairs "$pairs" gate <"$tmp/gate" >"$tmp/gated.out" 2>"$tmp/gated.err" &
    program_pid=$!
    exec 7>"$tmp/gate"
    for _ in $(seq 200); do
        grep -q ready "$tmp/gated.out" 2>/dev/null && return
        sleep 0.05
    done
    fail "the program did not start: $(cat "$tmp/gated.err")"
}
release_gate() { echo go >&7; exec 7>&-; wait "$program_pid"; program_status=$?; }

# The drain thread writes a log after the program said ready: waits until
# FILE holds a line matching PATTERN (default: any event).
wait_for_log_line() { # FILE [PATTERN]
    local pattern=${2:-'"ev":'}
    for _ in $(seq 200); do
        grep -q "$pattern" "$1" 2>/dev/null && return
        sleep 0.05
    done
    fail "no line matching $pattern in $1"
}

# A copy of JOURNAL at OUT whose every freed cell looks written but not yet
# freed, as if the process had died between the two (run by `runner`);
# with `inject`, the API name its events point at is replaced by a line
# of the forger's choosing.
forge_journal() { # runner JOURNAL OUT [inject]
    local runner=$1
    shift
    $runner /usr/bin/python3 - "$@" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
capacity, cell_offset = struct.unpack_from("<QQ", data, 16)
for i in range(capacity):
    at = cell_offset + 64 * i
    (seq,) = struct.unpack_from("<Q", data, at)
    if seq >= capacity:
        struct.pack_into("<Q", data, at, seq - capacity + 1)
if len(sys.argv) > 3:
    name = b"cuMemAlloc_v2\0"
    assert name in data
    data = data.replace(name, b'x\n"INJECTED=1\0')
open(sys.argv[2], "wb").write(data)
PY
}

# Runs COMMAND (stdout to $out, stderr to $err; its status in $status) and
# sets $opens to how often FILE was opened or read meanwhile (inotify, so
# whatever the mount's atime rules); then opens FILE itself, and fails
# unless that is seen (a watch that sees nothing proves nothing).
watch_opens() { # FILE COMMAND...
    opens=$(python3 - "$out" "$err" "$@" <<'PY'
import ctypes, os, subprocess, sys
out, err, watched, command = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
IN_ACCESS, IN_OPEN = 0x1, 0x20
if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(watched), IN_ACCESS | IN_OPEN) < 0:
    sys.exit("cannot watch " + watched)
def seen():
    try:
        return len(os.read(fd, 65536))
    except BlockingIOError:
        return 0
with open(out, "wb") as o, open(err, "wb") as e:
    status = subprocess.run(command, stdout=o, stderr=e).returncode
during = seen()
with open(watched, "rb") as f:
    f.read(1)
if not seen():
    sys.exit("the watch on " + watched + " saw nothing when it was read")
print(during, status)
PY
) || fail "cannot watch $1"
    status=${opens#* } opens=${opens% *}
}

case $1 in
symlinked_journal)
    # Issue 38: recovery never opens a journal through a symbolic link.
    # Another user plants one at a journal's name in the shared folder,
    # pointing at a file of root's; root's commands that recover the
    # folder refuse it without opening (or reading) what it points at.
    two_users
    link=$shared/a.jsonl.4242.1000000.journal
    as_attacker ln -s "$tmp/root-only/target" "$link"
    watch_opens "$tmp/root-only/target" "$GDRHOOK" log recover "$link"
    [ "$opens" = 0 ] || fail "gdrhook log recover opened the file a planted journal link names ($opens)"
    has "$out" "symbolic link"
    cp "$CLI_DATA/good_pid100.jsonl" "$shared/r.jsonl" # a log to check beside it
    watch_opens "$tmp/root-only/target" "$GDRHOOK" log check "$shared"
    [ "$opens" = 0 ] || fail "gdrhook log check opened the file a planted journal link names ($opens)"
    target_intact "by recovery of $link"
    [ -L "$link" ] || fail "recovery removed another user's link"
    ;;
symlink_recovery)
    # Row 1 of issue 31: an attacker's journal, renamed beside a symlink to
    # a root file, with strings of its choosing; root reads the folder.
    two_users
    umask 077 # the program's files are its user's alone (row 11)
    start_gated "$attacker_runner" 3 GDRHOOK_EVENTS="$shared/a.jsonl"
    kill -9 "$program_pid"; exec 7>&-; wait "$program_pid" 2>/dev/null
    journal=$(ls "$shared"/a.jsonl.*.journal) || fail "no journal left by the killed program"
    forged=$shared/c.jsonl.${journal#"$shared"/a.jsonl.}
    # The attacker owns the journal: every cell made to look unwritten,
    # the API name that events point at replaced by a line of its own.
    forge_journal "$attacker_runner" "$journal" "$forged" inject || fail "cannot forge the journal"
    as_attacker rm "$journal"
    as_attacker ln -s "$tmp/root-only/target" "$shared/c.jsonl"
    # A log of root's own beside it, and a copy of the forged journal
    # claiming it: not the attacker's to have written to.
    cp "$CLI_DATA/good_pid100.jsonl" "$shared/r.jsonl"
    cp "$shared/r.jsonl" "$tmp/r.before"
    as_attacker cp "$forged" "$shared/r.jsonl.${forged#"$shared"/c.jsonl.}"
    "$GDRHOOK" log check "$shared" >"$out" 2>"$err"
    status=$?
    target_intact "by gdrhook log check $shared"
    cmp -s "$shared/r.jsonl" "$tmp/r.before" || fail "root's log was written with the attacker's journal"
    [ "$status" -ne 0 ] || { cat "$out" "$err"; fail "log check passed with journals it could not recover"; }
    has "$err" "c.jsonl"
    has "$err" "symbolic link"
    has "$err" "r.jsonl"
    # Root's own log, whose journal copy was refused, fails too: its
    # journal is not recovered.
    run 2 log check "$shared/r.jsonl"
    has "$err" "owned by another user; not recovered"
    cmp -s "$shared/r.jsonl" "$tmp/r.before" || fail "root's log was written with the attacker's journal"
    # Without the symlink the attacker's events go into a log of its own,
    # every line valid JSON, its strings escaped.
    as_attacker rm "$shared/c.jsonl"
    run 0 log recover "$forged"
    umask 022
    [ "$(stat -c %u "$shared/c.jsonl")" = "$attacker_uid" ] || fail "the recovered log is not the attacker's"
    [ "$(stat -c %a "$shared/c.jsonl")" = 600 ] || fail "the recovered log is not mode 600 as its journal"
    valid_json_lines "$shared/c.jsonl"
    ! grep -q '^"INJECTED' "$shared/c.jsonl" || fail "a line of the attacker's choosing in the log"
    [ "$(count '"ev":"died"' "$shared/c.jsonl")" = 1 ] || fail "expected one died line"
    ;;
planted_log_names)
    # Row 2: another user's symlinks and files at the names the shim and
    # `gdrhook run` write to.
    two_users
    as_attacker ln -s "$tmp/root-only/target" "$shared/fixed.jsonl"
    GDRHOOK_EVENTS=$shared/fixed.jsonl shimmed "$GDRHOOKTEST_DEMO" >"$out" 2>"$err" || fail "the demo failed"
    target_intact "by the shim through a symlink"
    has "$err" "fixed.jsonl"
    has "$err" "symbolic link"
    # A second name of root's file, as an attacker makes one where
    # fs.protected_hardlinks is 0.
    ln "$tmp/root-only/target" "$shared/linked.jsonl"
    GDRHOOK_EVENTS=$shared/linked.jsonl shimmed "$GDRHOOKTEST_DEMO" >"$out" 2>"$err" || fail "the demo failed"
    target_intact "by the shim through a hard link"
    has "$err" "other names"
    as_attacker sh -c "umask 0; : >'$shared/theirs.jsonl'"
    GDRHOOK_EVENTS=$shared/theirs.jsonl shimmed "$GDRHOOKTEST_DEMO" >"$out" 2>"$err" || fail "the demo failed"
    [ ! -s "$shared/theirs.jsonl" ] || fail "root's events were appended to the attacker's file"
    has "$err" "owned by another user"
    ;;
planted_run_names)
    # Row 2, `gdrhook run`: in a pid namespace gdrhook is pid 1 and its
    # program pid 2, so the names it picks are known in advance, and planted.
    two_users
    unshare --pid --fork --mount-proc true 2>/dev/null || skip "cannot make a pid namespace here (unshare)"
    for p in 1 2 3; do
        for q in 1 2 3 4 5 6 7 8; do
            as_attacker ln -s "$tmp/root-only/target" "$shared/gdrhook-$p.$q.jsonl"
        done
    done
    (cd "$shared" && LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR GDRHOOK_LIBRARY=$GDRHOOKTEST_SHIM \
        unshare --pid --fork --mount-proc "$GDRHOOK" run -- "$GDRHOOKTEST_DEMO") >"$out" 2>"$err" ||
        { cat "$err"; fail "gdrhook run failed"; }
    target_intact "by gdrhook run among planted names"
    has "$err" "gdrhook: log check: OK"
    has "$err" "in 1 file(s)"
    lacks "$err" " 0 event(s)"
    # A name given with --events is the user's choice: the planted link is
    # refused by the shim, and the summary reads no file that is not theirs.
    as_attacker ln -s "$tmp/root-only/target" "$shared/e.2.jsonl"
    (cd "$shared" && LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR GDRHOOK_LIBRARY=$GDRHOOKTEST_SHIM \
        unshare --pid --fork --mount-proc "$GDRHOOK" run --events "$shared/e.%p.jsonl" -- "$GDRHOOKTEST_DEMO") \
        >"$out" 2>"$err" || { cat "$err"; fail "gdrhook run failed"; }
    target_intact "by gdrhook run --events among planted names"
    has "$err" "symbolic link"
    lacks "$err" "malformed"
    has "$err" "no event log was written"
    ;;
torn_line)
    # Recovery appends only to a gdrhook log, and cuts only a torn line of
    # its own: a program killed, its log ending in somebody's fragment;
    # a copy of its journal beside a file of notes.
    start_gated "" 3 GDRHOOK_EVENTS="$tmp/t.jsonl"
    # Its first line written, or the fragment would be all the log holds
    # and the log no gdrhook log at all (then refusing it is right).
    wait_for_log_line "$tmp/t.jsonl"
    kill -9 "$program_pid"; exec 7>&-; wait "$program_pid" 2>/dev/null
    journal=$(ls "$tmp"/t.jsonl.*.journal) || fail "no journal left by the killed program"
    printf 'not gdrhook' >>"$tmp/t.jsonl"
    printf 'my notes\n' >"$tmp/notes.jsonl"
    cp "$journal" "$tmp/notes.jsonl.${journal#"$tmp"/t.jsonl.}"
    run 2 log recover "$tmp/t.jsonl" "$tmp/notes.jsonl"
    has "$err" "not a gdrhook log"
    [ "$(cat "$tmp/notes.jsonl")" = "my notes" ] || fail "the notes were written"
    grep -qx 'not gdrhook' "$tmp/t.jsonl" || { cat "$tmp/t.jsonl"; fail "the fragment was cut or joined"; }
    [ "$(count '"ev":"died"' "$tmp/t.jsonl")" = 1 ] || fail "expected one died line"
    ;;
died_before_freeing)
    # A process killed after its worker wrote events to the log but before
    # it freed their journal cells (made so by forging the cells back):
    # recovery writes none of them again, only the died line.
    start_gated "" 3 GDRHOOK_EVENTS="$tmp/d.jsonl"
    wait_for_log_line "$tmp/d.jsonl" '"ev":"free"'
    kill -9 "$program_pid"; exec 7>&-; wait "$program_pid" 2>/dev/null
    journal=$(ls "$tmp"/d.jsonl.*.journal) || fail "no journal left by the killed program"
    forge_journal "" "$journal" "$journal.forged" && mv "$journal.forged" "$journal" ||
        fail "cannot rewrite the journal"
    run 0 log recover "$tmp/d.jsonl"
    for ev in alloc free died; do
        [ "$(count "\"ev\":\"$ev\"" "$tmp/d.jsonl")" = 1 ] ||
            { cat "$tmp/d.jsonl"; fail "expected one $ev line after recovery"; }
    done
    ;;
non_utf8)
    # Row 8: a program argument and a log path that are not UTF-8.
    log="$tmp/caf$(printf '\351').jsonl"
    GDRHOOK_EVENTS=$log shimmed "$GDRHOOKTEST_DEMO" "$(printf 'caf\351.txt')" >"$out" 2>"$err" ||
        fail "the demo failed"
    valid_json_lines "$log"
    has "$log" 'caf\ufffd.txt'
    run 0 log check "$log"
    # Issue 38: every sequence length, broken each way the shim can meet
    # it: valid 1- to 4-byte characters kept, and each byte of what is
    # not valid UTF-8 one U+FFFD (docs/log-format.md), as Python's strict
    # decoder judges the bytes (an oracle independent of the shim's).
    log2=$tmp/sequences.jsonl
    set -- 'a' '\303\251' '\342\202\254' '\360\237\230\200' \
        '\303' '\342\202' '\360\237\230' '\360\237\230A' '\360\237A\200' '\360A\230\200' \
        '\300\200' '\301\277' '\340\200\200' '\340\237\277' '\360\200\200\200' '\360\217\277\277' \
        '\355\240\200' '\355\277\277' '\364\220\200\200' '\365\200\200\200' '\370\210\200\200\200' \
        '\200' '\277' '\376' '\377' '\360\237\230\200\360\237\230'
    words=$tmp/words; : >"$words"
    for word; do printf "x$word.\n" >>"$words"; done
    # The words as the demo's arguments, byte for byte.
    python3 - "$words" "$GDRHOOKTEST_DEMO" "$log2" "$GDRHOOKTEST_SHIM" "$GDRHOOKTEST_FAKE_DRIVER_DIR" <<'PY' ||
import os, subprocess, sys
words, demo, log, shim, drivers = [os.fsencode(a) for a in sys.argv[1:]]
args = open(words, "rb").read().split(b"\n")[:-1]
env = dict(os.environb, GDRHOOK_EVENTS=log, LD_PRELOAD=shim, LD_LIBRARY_PATH=drivers)
subprocess.run([demo] + args, env=env, check=True, stdout=subprocess.DEVNULL)
PY
        fail "the demo failed"
    valid_json_lines "$log2"
    python3 - "$words" "$log2" <<'PY' || fail "the log's command line is not the oracle's"
import codecs, json, sys
codecs.register_error("one_per_byte", lambda e: ("\ufffd" * (e.end - e.start), e.end))
words = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
line = next(json.loads(l) for l in open(sys.argv[2], "rb") if b'"ev":"process"' in l)
logged = line["cmdline"][1:]
expected = [w.decode("utf-8", errors="one_per_byte") for w in words]
bad = [(w, l, e) for w, l, e in zip(words, logged, expected) if l != e]
for w, l, e in bad:
    print("bytes", w, "logged as", ascii(l), "expected", ascii(e))
sys.exit(1 if bad or len(logged) != len(expected) else 0)
PY
    ;;
closefrom)
    # Row 5: a program that closes every descriptor from 3 up, then opens
    # its own files, while it holds pins (dma-buf descriptors); then the
    # same where unshare(2) is refused (a sandbox), which leaves the log's
    # descriptor in the program's table, checked before each write.
    for variant in private no_unshare; do
        rm -rf "$tmp/own" "$tmp/c.jsonl"
        mkdir "$tmp/own"
        GDRHOOK_EVENTS=$tmp/c.jsonl GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf \
            shimmed "$HOSTILE_PROGRAM" closefrom 200 "$tmp/own" "$tmp/c.jsonl" \
            "$([ $variant = no_unshare ] && echo no_unshare)" >"$out" 2>"$err"
        status=$?
        made=$(sed -n 's/^events_made=//p' "$out")
        logged=$(grep -c '"ev":"\(alloc\|free\)"' "$tmp/c.jsonl" 2>/dev/null)
        intact=$(sed -n 's/^own_files_intact=//p' "$out")
        in_reach=$(sed -n 's/^log_descriptors_in_reach=//p' "$out")
        echo "closefrom ($variant): events made ${made:-?}, in the log ${logged:-0}," \
            "own files intact ${intact:-?}, log descriptors in the program's table ${in_reach:-?}"
        [ "$status" = 0 ] || { cat "$err"; fail "the program's own files were harmed (exit $status)"; }
        [ "$intact" = 8/8 ] || fail "own files intact: $intact"
        # With a table of its own (cache/base/private_files.h) the log's
        # descriptor is in no table the program reaches: no close or dup3
        # of the program's falls between a check and a write.
        # A sandbox that refuses unshare itself leaves the log in the
        # program's table in both runs, checked before each write.
        allowed=$(sed -n 's/^unshare_allowed=//p' "$out")
        want_in_reach=$([ $variant = private ] && [ "$allowed" = 1 ] && echo 0 || echo 1)
        [ "$allowed" = 1 ] || echo "closefrom: unshare(2) is refused here: the log stays in the program's table"
        [ "$in_reach" = "$want_in_reach" ] ||
            fail "$variant: $in_reach log descriptors in the program's table, not $want_in_reach"
        for f in "$tmp"/own/*; do lacks "$f" '"ts_ns"'; done
        [ "$logged" = "$made" ] || fail "the log holds $logged of the $made allocations and frees"
        valid_json_lines "$tmp/c.jsonl"
        run 0 log check "$tmp/c.jsonl"
        has "$out" "4 pin(s)"
        [ "$(count "closed" "$err")" -le 2 ] || fail "said more than once per descriptor kind"
    done
    ;;
pipe_eof)
    # gdrhook's own descriptor table (cache/base/private_files.h) starts
    # as a copy of the program's: unless its copies are closed at once, a
    # pipe whose writer the program closes never reads as ended.
    # Then without close_range(2) and with the main thread gone: the copies
    # are listed from the closing thread's own table.
    for variant in "" leader_gone; do
        rm -f "$tmp/p.jsonl"
        GDRHOOK_EVENTS=$tmp/p.jsonl shimmed "$HOSTILE_PROGRAM" pipe_eof "$tmp/p.jsonl" $variant \
            >"$out" 2>"$err"
        status=$?
        echo "pipe_eof ${variant:-plain}: $(cat "$out") (exit $status)"
        [ "$status" = 0 ] || { cat "$err"; fail "${variant:-plain}: the pipe did not read as ended (exit $status)"; }
    done
    ;;
full_disk)
    # Row 4: the log's file system fills up while the program runs.
    small_disk 4m
    for capacity in 4096 256; do
        rm -f "$disk"/*
        start_gated "" 2000 GDRHOOK_EVENTS="$disk/log.jsonl" GDRHOOK_QUEUE_CAPACITY=$capacity
        fill_disk 160
        release_gate
        [ "$program_status" = 0 ] || fail "the program failed on a full disk: $(cat "$tmp/gated.err")"
        made=$(sed -n 's/^events_made=//p' "$tmp/gated.out")
        in_log=$(grep -c '"ev":"\(alloc\|free\)"' "$disk/log.jsonl")
        said=$(grep -c 'gdrhook' "$tmp/gated.err")
        [ "$said" -ge 1 ] || fail "nothing said on stderr about the events not written"
        lost=$(sed -n 's/.* \([0-9]*\) event(s) lost.*/\1/p' "$tmp/gated.err" | head -1)
        ls "$disk"/log.jsonl.*.journal >/dev/null 2>&1 || fail "the journal was removed"
        # Until there is room the events cannot be recovered: a failure.
        "$GDRHOOK" log check "$disk/log.jsonl" >"$out" 2>"$err" &&
            { cat "$out" "$err"; fail "log check passed with events missing from the log"; }
        rm "$disk/filler"
        "$GDRHOOK" log check "$disk/log.jsonl" >"$out" 2>"$err"
        check_status=$?
        recovered=$(sed -n 's/.*recovered \([0-9]*\) event.*/\1/p' "$err")
        after=$(grep -c '"ev":"\(alloc\|free\)"' "$disk/log.jsonl")
        echo "full disk, queue $capacity: events made $made, in the log $in_log," \
             "recovered ${recovered:-0}, lost ${lost:-0}, in the log after recovery $after"
        cat "$tmp/gated.err"
        valid_json_lines "$disk/log.jsonl"
        [ "$after" -eq "$((made - ${lost:-0}))" ] || fail "the log holds $after, not made - lost"
        if [ "${lost:-0}" = 0 ]; then
            [ "$check_status" = 0 ] || { cat "$out" "$err"; fail "log check failed after a full recovery"; }
        else
            [ "$check_status" != 0 ] || { cat "$out"; fail "log check passed a log that lost events"; }
            has "$out" "lost"
        fi
    done
    ;;
fifo_log)
    # Row 3: the log named a FIFO, or a device.
    mkfifo "$tmp/events.fifo"
    GDRHOOK_EVENTS=$tmp/events.fifo timeout 20 env LD_PRELOAD="$GDRHOOKTEST_SHIM" \
        LD_LIBRARY_PATH="$GDRHOOKTEST_FAKE_DRIVER_DIR" "$GDRHOOKTEST_DEMO" >"$out" 2>"$err"
    status=$?
    [ "$status" != 124 ] || fail "the program hung on a FIFO for a log"
    [ "$status" = 0 ] || { cat "$err"; fail "the program failed ($status)"; }
    [ "$(count gdrhook "$err")" = 1 ] || { cat "$err"; fail "expected one line on stderr"; }
    has "$err" "not a regular file"
    GDRHOOK_EVENTS=/dev/full shimmed "$GDRHOOKTEST_DEMO" >"$out" 2>"$err" || fail "the program failed"
    has "$err" "not a regular file"
    ;;
foreign_journal)
    # Row 6: a file that ends in .journal and is not gdrhook's.
    mkdir "$tmp/d"
    echo "my notes" >"$tmp/d/notes.2024.11.journal"
    cp "$CLI_DATA/good_pid100.jsonl" "$tmp/d/a.jsonl"
    run 0 log summary "$tmp/d"
    run 0 log check "$tmp/d"
    run 0 log recover "$tmp/d"
    [ "$(cat "$tmp/d/notes.2024.11.journal")" = "my notes" ] || fail "the notes were deleted or changed"
    ;;
oversized_journal)
    # Row 7: a journal whose header claims 1 TiB of strings (a sparse file).
    mkdir "$tmp/d"
    cp "$CLI_DATA/good_pid100.jsonl" "$tmp/d/a.jsonl"
    python3 - "$tmp/d/a.jsonl.99999.1.journal" <<'PY' || fail "cannot write the journal"
import struct, sys
header = bytearray(4096)
header[0:8] = b"gdrhjnl1"
struct.pack_into("<IIQQQQQ", header, 8, 1, 64, 4, 4096, 4096 + 256, 1 << 40, 0)
struct.pack_into("<i", header, 56, 99999)
with open(sys.argv[1], "wb") as f:
    f.write(header)
    f.truncate(4096 + 256 + (1 << 40))
PY
    for cmd in summary check; do
        run 2 log $cmd "$tmp/d"
        has "$err" "a.jsonl.99999.1.journal"
        has "$err" "do not fit"
        lacks "$err" "internal error"
        has "$out" "8 event(s)"
    done
    ;;
full_at_start)
    # Issue 39, 1: the file system is nearly full before the program
    # starts: no room for the journal, little for the log. What the log
    # cannot hold is said in it (a `died` line with `lost`), no line is
    # left cut, and `log check` fails naming the count.
    small_disk 2m
    fill_disk 64 # room for ~270 of the 400 lines, not for the journal
    GDRHOOK_EVENTS=$disk/log.jsonl shimmed "$HOSTILE_PROGRAM" pairs 200 >"$out" 2>"$tmp/program.err" ||
        { cat "$tmp/program.err"; fail "the program failed on a full disk"; }
    cat "$tmp/program.err"
    ! ls "$disk"/log.jsonl.*.journal >/dev/null 2>&1 || skip "the journal fit: the disk was not full enough"
    made=$(sed -n 's/^events_made=//p' "$out")
    in_log=$(count '"ev":"\(alloc\|free\)"' "$disk/log.jsonl")
    said=$(sed -n 's/.* \([0-9]*\) event(s) lost.*/\1/p' "$tmp/program.err" | head -1)
    valid_json_lines "$disk/log.jsonl" # no line cut
    [ "$in_log" -lt "$made" ] || skip "every event fit: the disk was not full enough"
    lost=$(sed -n 's/.*"ev":"died".*"lost":\([0-9]*\).*/\1/p' "$disk/log.jsonl")
    echo "full at start: events made $made, in the log $in_log, the log's loss line ${lost:-none}," \
         "said on stderr ${said:-nothing}"
    [ -n "$lost" ] || fail "no line in the log records the loss"
    [ "${said:-0}" = "$lost" ] || fail "stderr says ${said:-0} event(s) lost, the log $lost"
    # Samples and the worker's own lines count too: at least the missing
    # allocations and frees.
    [ "$lost" -ge "$((made - in_log))" ] || fail "the loss line says $lost, $((made - in_log)) are missing"
    "$GDRHOOK" log check "$disk/log.jsonl" >"$out" 2>"$err" &&
        { cat "$out" "$err"; fail "log check passed a log that lost events"; }
    has "$out" "$lost event(s) lost"
    ;;
relative_events)
    # Issue 39, 4: a relative GDRHOOK_EVENTS (and `gdrhook run`'s default)
    # names the folder the program started in, wherever it moves after.
    mkdir "$tmp/start" "$tmp/elsewhere"
    for when in after before; do
        rm -f "$tmp"/start/* "$tmp"/elsewhere/*
        (cd "$tmp/start" && GDRHOOK_EVENTS=rel.jsonl shimmed "$HOSTILE_PROGRAM" moving 50 \
            "$tmp/elsewhere" $([ $when = before ] && echo before)) >"$out" 2>"$err" ||
            { cat "$err"; fail "the program failed"; }
        [ -z "$(ls -A "$tmp/elsewhere")" ] ||
            { ls -l "$tmp/elsewhere"; fail "files in the folder it moved to $when its first CUDA call"; }
        made=$(sed -n 's/^events_made=//p' "$out")
        in_log=$(count '"ev":"\(alloc\|free\)"' "$tmp/start/rel.jsonl")
        [ "$in_log" = "$made" ] || fail "moved $when: the log holds ${in_log:-no} line(s) of $made"
        ! ls "$tmp"/start/*.journal >/dev/null 2>&1 || fail "moved $when: the journal was left behind"
    done
    # Killed after the move: its log and its journal are in one folder, and
    # recovery there gives back every event it made.
    rm -f "$tmp"/start/*
    mkfifo "$tmp/gate"
    (cd "$tmp/start" && GDRHOOK_EVENTS=rel.jsonl exec env LD_PRELOAD="$GDRHOOKTEST_SHIM" \
        LD_LIBRARY_PATH="$GDRHOOKTEST_FAKE_DRIVER_DIR" "$HOSTILE_PROGRAM" moving 50 "$tmp/elsewhere" gate \
        <"$tmp/gate" >"$out" 2>"$err") &
    program_pid=$!
    exec 7>"$tmp/gate"
    for _ in $(seq 200); do grep -q ready "$out" && break; sleep 0.05; done
    grep -q ready "$out" || fail "the program did not start: $(cat "$err")"
    kill -9 "$program_pid"; exec 7>&-; wait "$program_pid" 2>/dev/null
    [ -z "$(ls -A "$tmp/elsewhere")" ] || { ls -l "$tmp/elsewhere"; fail "killed: files in the folder it moved to"; }
    run 0 log recover "$tmp/start/rel.jsonl"
    for ev in alloc free died; do
        [ "$(count "\"ev\":\"$ev\"" "$tmp/start/rel.jsonl")" = 1 ] ||
            { cat "$tmp/start/rel.jsonl"; fail "killed: expected one $ev line after recovery"; }
    done
    rm -f "$tmp"/start/*
    (cd "$tmp/start" && LD_LIBRARY_PATH=$GDRHOOKTEST_FAKE_DRIVER_DIR GDRHOOK_LIBRARY=$GDRHOOKTEST_SHIM \
        "$GDRHOOK" run -- "$HOSTILE_PROGRAM" moving 50 "$tmp/elsewhere") >"$out" 2>"$err" ||
        { cat "$err"; fail "gdrhook run failed"; }
    [ -z "$(ls -A "$tmp/elsewhere")" ] || { ls -l "$tmp/elsewhere"; fail "gdrhook run's log went elsewhere"; }
    lacks "$err" "no event log was written"
    has "$err" "allocs 50, frees 50"
    has "$err" "log check: OK"
    ;;
prometheus_planted)
    # Issue 39, 2: root writes node-exporter's textfile in a shared folder
    # where the attacker planted links at the names it would use: the
    # temporary name (FILE.tmp.<pid>, known in a pid namespace, where
    # gdrhook is pid 1) and FILE itself; then a FILE of the attacker's.
    two_users
    unshare --pid --fork --mount-proc true 2>/dev/null || skip "cannot make a pid namespace here (unshare)"
    prom=$shared/gdrhook.prom
    for p in 1 2 3; do as_attacker ln -s "$tmp/root-only/target" "$prom.tmp.$p"; done
    node() { unshare --pid --fork --mount-proc "$GDRHOOK" node --proc /proc --sys "$tmp/no-sys" \
        --libnvml /nonexistent/libnvidia-ml.so.1 --prometheus "$@"; }
    node "$prom" >"$out" 2>"$err"
    target_intact "by gdrhook node --prometheus through a planted temporary name"
    [ -f "$prom" ] && [ ! -L "$prom" ] || fail "no metrics file written"
    [ "$(stat -c %u "$prom")" = 0 ] || fail "the metrics file is not root's"
    has "$prom" "gdrhook_"
    # Issue 41: every textfile the tests write passes promtool.
    command -v promtool >/dev/null || fail "promtool not found (apt-get install prometheus)"
    promtool check metrics <"$prom" >"$out" 2>&1 || { cat "$out"; fail "promtool check metrics failed"; }
    ls "$shared" | grep -v '^gdrhook.prom.tmp.[123]$' | grep -q '\.tmp' && fail "a temporary file was left"
    # A link at FILE: refused, the link's target untouched.
    rm -f "$prom"
    as_attacker ln -s "$tmp/root-only/target" "$prom"
    node "$prom" >"$out" 2>"$err" && fail "gdrhook node replaced a symbolic link"
    target_intact "by gdrhook node --prometheus over a link"
    has "$err" "symbolic link"
    [ -L "$prom" ] || fail "the link was replaced"
    # The attacker's own file at FILE: not root's to replace.
    as_attacker rm "$prom"
    as_attacker sh -c "echo theirs >'$prom'"
    node "$prom" >"$out" 2>"$err" && fail "gdrhook node replaced another user's file"
    has "$err" "owned by another user"
    [ "$(cat "$prom")" = theirs ] || fail "the attacker's file was replaced"
    ;;
log_inputs_refused)
    # Issue 39, 3: `log check|summary|timeline` over a folder where the
    # attacker left a *.jsonl link to /proc/kmsg, a FIFO, a link to a log
    # only root may read; and each named alone. Nothing hangs, nothing
    # of root's is read, each refused input is named, the exit is 2.
    two_users
    cp "$CLI_DATA/good_pid100.jsonl" "$tmp/root-only/secret.jsonl"
    as_attacker ln -s /proc/kmsg "$shared/k.jsonl"
    as_attacker mkfifo "$shared/f.jsonl"
    as_attacker ln -s "$tmp/root-only/secret.jsonl" "$shared/s.jsonl"
    cp "$CLI_DATA/good_pid200.jsonl" "$shared/mine.jsonl"
    for cmd in check summary timeline; do
        extra=""; [ $cmd = timeline ] && extra="-o $tmp/t.svg"
        timeout 20 "$GDRHOOK" log $cmd "$shared" $extra >"$out" 2>"$err"
        status=$?
        [ "$status" != 124 ] || fail "log $cmd hung on $shared"
        [ "$status" = 2 ] || { cat "$out" "$err"; fail "log $cmd exited $status, expected 2"; }
        for name in k.jsonl f.jsonl s.jsonl; do has "$err" "$name"; done
        has "$err" "symbolic link"
        has "$err" "not a regular file"
        lacks "$out" "pid 100"
        for name in k.jsonl f.jsonl s.jsonl; do
            timeout 20 "$GDRHOOK" log $cmd "$shared/$name" $extra >"$out" 2>"$err"
            status=$?
            [ "$status" = 2 ] || { cat "$out" "$err"; fail "log $cmd $name exited $status, expected 2"; }
        done
    done
    # The SVG's own name: a link planted there is refused, not written through.
    as_attacker ln -s "$tmp/root-only/target" "$shared/t.svg"
    timeout 20 "$GDRHOOK" log timeline "$shared/mine.jsonl" -o "$shared/t.svg" >"$out" 2>"$err" &&
        fail "log timeline wrote through a link"
    target_intact "by gdrhook log timeline -o"
    has "$err" "symbolic link"
    ;;
doctor_device)
    # `gdrhook doctor --device NAME`: a link or a FIFO planted at the
    # device's name is not opened as the device, and does not hang it.
    two_users
    as_attacker ln -s /dev/null "$shared/gdrhook"
    as_attacker mkfifo "$shared/fifo"
    for name in gdrhook fifo; do
        timeout 20 "$GDRHOOK" doctor --device "$shared/$name" --libcuda /nonexistent/libcuda.so.1 \
            --libnvml /nonexistent/libnvidia-ml.so.1 >"$out" 2>"$err"
        [ "$?" != 124 ] || fail "doctor hung on $name"
        cat "$out" "$err" >"$tmp/said"
        lacks "$tmp/said" "GET_VERSION failed"
        has "$tmp/said" "$([ $name = fifo ] && echo 'not a character device' || echo 'symbolic link')"
    done
    ;;
epilog_planted)
    # Issue 41: slurmstepd runs `gdrhook epilog` as root for the attacker's
    # job; it reads the job's logs and writes the job's summary in the
    # attacker's folder. A link planted at the summary's name, and a "log"
    # that is a link to a log only root may read, get the attacker nothing.
    two_users
    mkdir -p "$tmp/no-proc" "$tmp/no-sys"
    cp "$CLI_DATA/good_pid100.jsonl" "$tmp/root-only/secret.jsonl"
    epilog() { timeout 20 "$GDRHOOK" epilog --job 7 --uid "$attacker_uid" --events "$shared/%p.log.jsonl" \
        --summary "$shared/summary.txt" --proc "$tmp/no-proc" --sys "$tmp/no-sys" >"$out" 2>"$err"; }
    as_attacker ln -s "$tmp/root-only/target" "$shared/summary.txt"
    epilog
    status=$?
    [ "$status" = 2 ] || { cat "$out" "$err"; fail "gdrhook epilog exited $status over a link at the summary's name, expected 2"; }
    target_intact "by gdrhook epilog --summary over a link"
    [ -L "$shared/summary.txt" ] || fail "the link at the summary's name was replaced"
    has "$err" "symbolic link"
    # The log: a link to root's log is not read, and the verdict says so.
    as_attacker rm "$shared/summary.txt"
    as_attacker ln -s "$tmp/root-only/secret.jsonl" "$shared/100.log.jsonl"
    epilog
    status=$?
    [ "$status" = 1 ] || { cat "$out" "$err"; fail "gdrhook epilog exited $status over a linked log, expected 1"; }
    [ "$(stat -c %u "$shared/summary.txt")" = "$attacker_uid" ] || fail "the summary is not the job user's"
    has "$shared/summary.txt" "will not read a symbolic link"
    cat "$out" "$err" "$shared/summary.txt" >"$tmp/said"
    lacks "$tmp/said" "pid 100"
    ;;
every_command)
    # Every command of the tool and every file the shim writes has a case
    # here: the table at the top of this file names them, and every case
    # it names exists.
    table=$(sed -n '/^# COVERAGE/,/^# END COVERAGE/p' "$0")
    subcommands() { awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'; }
    commands=$("$GDRHOOK" --help | subcommands)
    log_commands=$("$GDRHOOK" log --help | subcommands)
    [ -n "$commands" ] && [ -n "$log_commands" ] || fail "cannot read the commands from --help"
    for c in $commands; do [ "$c" = log ] && continue; echo "$table" | grep -q "^#   $c " ||
        fail "no case for gdrhook $c in the table"; done
    for c in $log_commands; do echo "$table" | grep -q "^#   log $c " ||
        fail "no case for gdrhook log $c in the table"; done
    for f in "event log" journal; do echo "$table" | grep -q "^#   shim's $f " ||
        fail "no case for the shim's $f in the table"; done
    for case in $(echo "$table" | grep -o '\[[a-z_ ,]*\]' | tr -d '[],'); do
        grep -q "^$case)" "$0" || fail "the table names a case '$case' that does not exist"
        grep -q "'$case'" "$(dirname "$0")/meson.build" || fail "case '$case' is not run by meson"
    done
    ;;
*)
    fail "unknown case '$1'"
    ;;
esac
