#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# gdrhook's Slurm plugin under a real Slurm (issue 41): munged, slurmctld
# and slurmd as Debian packages them, started here with a throwaway
# configuration (this host as one node, and as a second, n2, in
# namespaces of its own for the multi-node cases; proctrack/linuxproc), jobs of an
# unprivileged user run through `srun --gdrhook` with the fake driver:
#   clean   a job whose task had an LD_PRELOAD of its own keeps it after the
#           shim's, its logs land in LOGDIR/USER/JOBID, its verdict is OK
#           on srun's standard error and in the summary beside the logs,
#           while a sibling job of the same user holds a pin all along;
#   leftover a job that leaves a process holding its pin is named, with the
#           process, and its verdict fails; the process's name, which holds
#           a terminal's escape, reaches slurmd's log and srun's standard
#           error escaped;
# Then what a second user of the node can try against a job's logs, its
# verdict and the time root waits for it (log_tree_cases.sh,
# time_limit_cases.sh); a verdict's control bytes escaped by the plugin
# itself, in slurmd's log and srun's output (verdict_text_cases.sh); and
# the packaged Epilog= script, run after every job, which drains the node
# only for pins a job left (epilog_script_cases.sh); and steps run in a
# mount namespace that hides the shim, as a container does, which must
# say they ran without gdrhook (container_cases.sh, with busybox-static);
# a step that made no CUDA call, which prints nothing (quiet_step_cases.sh);
# a misspelt --gdrhook=MODE, refused at submission (mode_word_cases.sh);
# a job on two nodes, whose other node's verdict srun prints or says
# where it is (multi_node_cases.sh); and a plugstack.conf line whose
# arguments the plugin refuses (plugin_argument_cases.sh).
# This machine has no dma-buf exporter and no gdrhook.ko: the pins are the
# fake driver's memfds, which /proc shows as no pin. So `gdrhook epilog`
# (plugin argument proc=) reads a view of /proc made of the pinning
# processes' real status, cgroup and environment (their job ids as Slurm
# set them) where each fake dma-buf's fdinfo says what a dma-buf's says.
#
# Environment (tests/slurm/meson.build): GDRHOOK, GDRHOOKTEST_SHIM,
# GDRHOOKTEST_FAKE_DRIVER_DIR, GDRHOOKTEST_DEMO, HOLDS_PIN, GDRHOOKTEST_SPANK (empty
# where the plugin was not built: no slurm/spank.h).
set -u
. "$(dirname "$0")/../cli/tool_checks.sh"
skip() { echo "SKIP: $*"; exit 77; }

for program in munged slurmctld slurmd srun squeue scancel unshare; do
    command -v "$program" >/dev/null ||
        skip "$program not found (Debian: apt-get install munge slurmctld slurmd slurm-client libslurm-dev)"
done
[ -n "$GDRHOOKTEST_SPANK" ] ||
    skip "the plugin was not built: no slurm/spank.h (Debian: apt-get install libslurm-dev)"
[ "$(id -u)" -eq 0 ] || fail "slurmd runs jobs as their users only as root: run this test as root"

user=nobody
tmp=$(mktemp -d /tmp/gdrhook-slurm.XXXXXX) || exit 1
chmod 755 "$tmp"
out=$tmp/out err=$tmp/err
started=$SECONDS

# Every daemon and leftover stops, whatever happens: jobs cancelled first
# (their slurmstepd would outlive slurmd), then the daemons by their pids.
stop_all() {
    local status=$?
    if [ "$status" -ne 0 ]; then
        for file in "$tmp"/*.out "$tmp"/*.err "$tmp/log/"*; do
            [ -f "$file" ] && { echo "--- $file"; tail -n 15 "$file"; }
        done
    fi
    if [ -f "$tmp/slurmctld.pid" ]; then
        scancel --quiet --user="$user" 2>/dev/null
        for _ in $(seq 50); do
            [ -z "$(squeue --noheader 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    for ready in "$tmp"/run/*.ready; do
        [ -f "$ready" ] && kill -9 "$(cat "$ready")" 2>/dev/null
    done
    for pidfile in "$tmp"/slurmd.*.pid "$tmp/slurmctld.pid" "$tmp/munge/pid"; do
        [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
    done
    sleep 0.2
    rm -rf "$tmp"
}
trap stop_all EXIT

# What the unprivileged user runs must be readable by it: the build tree may
# sit where it cannot look (the mutation run's is mode 700).
mkdir -p "$tmp/bin" "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/view" "$tmp/logs" "$tmp/run"
cp -L "$GDRHOOKTEST_DEMO" "$HOLDS_PIN" "$GDRHOOKTEST_SPANK" "$tmp/bin/"
cp "$(dirname "$0")/test_cluster.conf" "$tmp/"
chmod 644 "$tmp/test_cluster.conf"
# The shim in a folder of its own, which a container can hide
# (container_cases.sh).
mkdir -p "$tmp/shim"
cp -L "$GDRHOOKTEST_SHIM" "$tmp/shim/"
cp -L "$GDRHOOKTEST_FAKE_DRIVER_DIR"/lib*.so* "$tmp/bin/" 2>/dev/null
# The packaged Epilog= script, its gdrhook the file epilog-tool names
# (epilog_script_cases.sh changes it).
sed "s|^gdrhook=/usr/bin/gdrhook\$|gdrhook=$tmp/bin/epilog-tool|" \
    "$(dirname "$0")/../../tools/slurm/slurm-epilog" >"$tmp/bin/slurm-epilog"
chmod 755 "$tmp/bin/slurm-epilog"
grep -q "^gdrhook=$tmp/bin/epilog-tool\$" "$tmp/bin/slurm-epilog" || fail "slurm-epilog names no gdrhook to replace"
ln -s "$GDRHOOK" "$tmp/bin/epilog-tool"
chmod -R a+rX "$tmp/bin" "$tmp/shim"
chmod 1777 "$tmp/view" "$tmp/run"
# The log root as the package makes it: root's, only root writes in it.
chmod 755 "$tmp/logs"
chmod 700 "$tmp/munge"
shim=$tmp/shim/$(basename "$GDRHOOKTEST_SHIM")
logs=$tmp/logs

# munged with a key of its own, on a socket of its own.
head -c 128 /dev/urandom >"$tmp/munge/key"
chmod 600 "$tmp/munge/key"
munged --force --key-file="$tmp/munge/key" --socket="$tmp/munge/sock" \
    --pid-file="$tmp/munge/pid" --log-file="$tmp/munge/log" --seed-file="$tmp/munge/seed" ||
    fail "munged did not start"
chmod 755 "$tmp/munge"

host=$(hostname -s)
mkdir -p "$tmp/spool/$host" "$tmp/spool/n2"
port=$((20000 + ($$ % 20000) * 2))
cat >"$tmp/slurm.conf" <<CONF
ClusterName=gdrhook
Include $tmp/test_cluster.conf
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthInfo=socket=$tmp/munge/sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool/%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.%n.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
Epilog=$tmp/bin/slurm-epilog
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=100 State=UNKNOWN
NodeName=n2 NodeAddr=127.0.0.1 Port=$((port + 2)) CPUs=$(nproc) RealMemory=100 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
PartitionName=two Nodes=$host,n2 MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
# plugstack ARGUMENTS...: the plugin's arguments, the later ones of the
# same name winning; each step reads the file anew (slurmstepd and srun).
# A required plugin, unless plugstack_kind=optional (the package's).
# The site's default is off: only --gdrhook turns it on.
plugstack() {
    echo "${plugstack_kind:-required} $tmp/bin/$(basename "$GDRHOOKTEST_SPANK") default=off logdir=$logs" \
        "library=$shim gdrhook=$GDRHOOK proc=$tmp/view $*" >"$tmp/plugstack.conf"
    chmod 644 "$tmp/plugstack.conf"
}
plugstack
chmod 644 "$tmp/slurm.conf"
export SLURM_CONF=$tmp/slurm.conf

slurmctld -i >"$tmp/log/slurmctld.out" 2>&1 || fail "slurmctld did not start: $(cat "$tmp/log/slurmctld.out")"
slurmd >"$tmp/log/slurmd.out" 2>&1 || fail "slurmd did not start: $(cat "$tmp/log/slurmd.out")"
for _ in $(seq 100); do
    sinfo --noheader --states=idle 2>/dev/null | grep -q . && break
    sleep 0.1
done
sinfo --noheader --states=idle | grep -q . || { cat "$tmp/log/"*; fail "the node never came up"; }

# as_user CMD...: CMD as the unprivileged user, with the fake driver;
# as_victim: as a second one, whom the first attacks.
as_user() {
    setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
        env LD_LIBRARY_PATH="$tmp/bin" SLURM_CONF="$SLURM_CONF" "$@"
}
victim=daemon
as_victim() {
    setpriv --reuid="$victim" --regid="$(id -g "$victim")" --clear-groups \
        env LD_LIBRARY_PATH="$tmp/bin" SLURM_CONF="$SLURM_CONF" "$@"
}

# view PID: PID's /proc entry in the view, its fake dma-bufs made dma-bufs
# of the size holds_pin pins (the fake driver's memfds are empty).
pinned=$((4 << 20))
view() {
    local pid=$1 dir=$tmp/view/$1 fd link
    mkdir -p "$dir/fd" "$dir/fdinfo"
    for file in status comm cgroup environ; do cat "/proc/$pid/$file" >"$dir/$file"; done
    for fd in /proc/"$pid"/fd/*; do
        link=$(readlink "$fd") || continue
        case $link in /memfd:fake-dmabuf*) ;; *) continue ;; esac
        ln -s "$link" "$dir/fd/${fd##*/}"
        { cat "/proc/$pid/fdinfo/${fd##*/}"
          printf 'size:\t%s\nexp_name:\tnv_dmabuf\n' "$pinned"; } >"$dir/fdinfo/${fd##*/}"
    done
    ls "$dir/fd" | grep -q . || fail "process $pid holds no fake dma-buf"
}
wait_for() {
    for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
    fail "$1 never appeared"
}

# The sibling: a job of the same user that holds a pin until cancelled.
as_user srun --gdrhook=alloc --job-name=sibling "$tmp/bin/holds_pin" "$tmp/run/sibling.ready" \
    >"$tmp/sibling.out" 2>&1 &
wait_for "$tmp/run/sibling.ready"
view "$(cat "$tmp/run/sibling.ready")"

# clean: the shim ahead of the task's own preload, the logs in the job's
# folder, and OK though the sibling still holds its pin.
as_user env LD_PRELOAD=libm.so.6 srun --gdrhook=alloc --job-name=clean \
    sh -c 'echo "job=$SLURM_JOB_ID preload=$LD_PRELOAD"; exec "$0"' "$tmp/bin/gdrhook-demo" \
    >"$tmp/clean.out" 2>"$tmp/clean.err" || fail "the clean job failed"
job=$(sed -n 's/^job=\([0-9]*\) .*/\1/p' "$tmp/clean.out")
[ -n "$job" ] || fail "the clean job said no job id"
has "$tmp/clean.out" "preload=$shim:libm.so.6"
folder=$logs/$user/$job
ls "$folder"/"$host".step0.rank0.*.jsonl >/dev/null 2>&1 ||
    fail "no log of the clean job in $folder: $(ls -R "$logs")"
run 0 log check "$folder"
has "$tmp/clean.err" "gdrhook: job $job step 0 on $host: OK; nothing of the job left pinned; log check: OK, 1 log(s)"
has "$folder/$host.step0.verdict.txt" "gdrhook: job $job step 0 on $host: OK"
# Under proctrack/linuxproc the epilog knows only its own job's user, so
# the sibling's process, a job only by its environment, is of no job to
# it: listed, never held against this job.
has "$folder/$host.step0.verdict.txt" "1 of processes of no job"
[ "$(stat -c %U "$folder")" = "$user" ] || fail "the job's folder is not its user's"
# The user's alone: folders 0700, logs and the summary 0600, which another
# user cannot read.
[ "$(stat -c '%a %U' "$logs/$user")" = "700 $user" ] ||
    fail "the plugin did not make $logs/$user the user's, mode 700: $(stat -c '%a %U' "$logs/$user")"
[ "$(stat -c %a "$folder")" = 700 ] || fail "the job's folder is mode $(stat -c %a "$folder"), not 700"
for file in "$folder"/"$host".step0.rank0.*.jsonl "$folder/$host.step0.verdict.txt"; do
    [ "$(stat -c %a "$file")" = 600 ] || fail "$file is mode $(stat -c %a "$file"), not 600"
done
as_victim cat "$folder/$host.step0.verdict.txt" >/dev/null 2>&1 &&
    fail "another user read the job's verdict"
# Written as the user: root never writes in a folder the user may change.
[ "$(stat -c %U "$folder/$host.step0.verdict.txt")" = "$user" ] ||
    fail "the summary was not written as the job's user"

# leftover: the task starts a process that keeps its pin past the task's
# end; the job is named with it. Its name clears the screen of whoever
# prints it raw.
holder=$'pin\e[2J'
cp "$tmp/bin/holds_pin" "$tmp/bin/$holder"
as_user srun --gdrhook=alloc --job-name=leftover sh -c '
    echo "job=$SLURM_JOB_ID"
    setsid "$0" "$1" </dev/null >/dev/null 2>&1 &
    while [ ! -f "$2" ]; do sleep 0.05; done' \
    "$tmp/bin/$holder" "$tmp/run/leftover.ready" "$tmp/run/leftover.viewed" \
    >"$tmp/leftover.out" 2>"$tmp/leftover.err" &
srun_pid=$!
wait_for "$tmp/run/leftover.ready"
view "$(cat "$tmp/run/leftover.ready")"
touch "$tmp/run/leftover.viewed"
wait "$srun_pid"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/leftover.out")
leftover=$(cat "$tmp/run/leftover.ready")
has "$tmp/leftover.err" "gdrhook: job $job step 0 on $host: FAILED; left 1 pin(s), 4 MiB, "
has "$tmp/leftover.err" "held by pid $leftover (pin"
has "$tmp/leftover.err" "x1b[2J); log check: problems in 1 log(s)"
has "$logs/$user/$job/$host.step0.verdict.txt" "pid $leftover (pin"
grep -q "gdrhook: job $job step 0 on $host: FAILED" "$tmp/log/slurmd.log" ||
    fail "slurmd's log lacks the verdict: $(tail -20 "$tmp/log/slurmd.log")"
for file in "$tmp/leftover.err" "$tmp/log/slurmd.log"; do
    lacks "$file" $'\e'
done

. "$(dirname "$0")/log_tree_cases.sh"
. "$(dirname "$0")/time_limit_cases.sh"
. "$(dirname "$0")/verdict_text_cases.sh"
. "$(dirname "$0")/epilog_script_cases.sh"
. "$(dirname "$0")/container_cases.sh"
. "$(dirname "$0")/quiet_step_cases.sh"
. "$(dirname "$0")/mode_word_cases.sh"
. "$(dirname "$0")/multi_node_cases.sh"
. "$(dirname "$0")/plugin_argument_cases.sh"

echo "PASS: slurm plugin ($((SECONDS - started)) s)"
