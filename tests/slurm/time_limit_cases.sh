# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: how long root waits for a step's
# `gdrhook epilog` (plugin argument timeout=, 2 s here). srun is given
# 20 s, ten times the limit: a plugin that waits past the limit fails
# here in 20 s, not at the epilog's own end (hours).
#   sparse   the job leaves a log of 15 TiB, all hole, which the epilog
#            (as the job's user) would read for hours: killed at the
#            limit, the step "not judged: time limit", srun returns;
#   stopped  an epilog that starts a child and stops itself (SIGSTOP, as
#            its user may do to it): killed with its whole process group.
#   missing  gdrhook= names no file: the epilog cannot be started, and
#            the step is "not judged: cannot run" it, with the system's
#            words, in srun's output and the summary.

# judged_late NAME: the step of job $job was killed at the limit, which
# srun, the summary and slurmd's log say.
judged_late() {
    local name=$1
    has "$tmp/$name.err" "gdrhook: job $job step 0 on $host: not judged: time limit (2 s)"
    has "$logs/$user/$job/$host.step0.verdict.txt" "gdrhook: job $job step 0 on $host: not judged: time limit"
    grep -q "\[$job\.0\] .*gdrhook: job $job step 0 on $host: not judged: time limit" "$tmp/log/slurmd.log" ||
        fail "slurmd's log lacks the time limit of job $job"
}

plugstack timeout=2
as_user timeout 20 srun --gdrhook --job-name=sparse sh -c '
    echo "job=$SLURM_JOB_ID"
    truncate -s 15T "${GDRHOOK_EVENTS%/*}/$(hostname -s).step0.rank0.1.jsonl"' \
    >"$tmp/sparse.out" 2>"$tmp/sparse.err" || fail "srun of the sparse job did not return"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/sparse.out")
judged_late sparse

# Its pids in *.ready files, which slurm.sh's stop_all kills should the
# plugin wait for ever.
cat >"$tmp/bin/stopping-epilog" <<SCRIPT
#!/bin/sh
sleep 300 &
echo \$! >"$tmp/run/epilog-child.ready"
echo \$\$ >"$tmp/run/stopped-epilog.ready"
kill -STOP \$\$
SCRIPT
chmod 755 "$tmp/bin/stopping-epilog"
plugstack timeout=2 "gdrhook=$tmp/bin/stopping-epilog"
as_user timeout 20 srun --gdrhook --job-name=stopped sh -c 'echo "job=$SLURM_JOB_ID"' \
    >"$tmp/stopped.out" 2>"$tmp/stopped.err" || fail "srun of the job whose epilog stops did not return"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/stopped.out")
judged_late stopped
# Alive: a process, not a zombie its new parent has yet to reap.
alive() { case $(ps -o stat= -p "$1") in '' | Z*) return 1 ;; esac; }
child=$(cat "$tmp/run/epilog-child.ready")
for _ in $(seq 50); do alive "$child" || break; sleep 0.1; done
alive "$child" && fail "the epilog's child outlived the time limit"
rm "$tmp/run/epilog-child.ready" "$tmp/run/stopped-epilog.ready" # gone: their numbers are free

plugstack "gdrhook=$tmp/bin/no-such-epilog"
as_user timeout 20 srun --gdrhook --job-name=missing sh -c 'echo "job=$SLURM_JOB_ID"' \
    >"$tmp/missing.out" 2>"$tmp/missing.err" || fail "srun of the job whose epilog is missing did not return"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/missing.out")
has "$tmp/missing.err" "gdrhook: job $job step 0 on $host: not judged: cannot run $tmp/bin/no-such-epilog (No such file or directory)"
has "$logs/$user/$job/$host.step0.verdict.txt" "The epilog (gdrhook epilog) did not run"
plugstack
