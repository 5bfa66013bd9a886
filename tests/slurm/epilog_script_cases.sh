# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: the packaged Epilog= script
# (tools/slurm/slurm-epilog), which slurm.conf runs after every job of the
# test, its gdrhook the file $tmp/bin/epilog-tool names. A node is drained
# only for pins a job left:
#   every     every job so far (no event log, an escaped leftover already
#             ended by Slurm) left the node up;
#   blind     a verdict that could not see a process (PID 1 in a VM or a
#             container): not drained;
#   missing   gdrhook uninstalled: not drained;
#   left      a verdict of pins left: drained (then resumed).

# node_state: the node's state once no job is completing (its epilog run).
node_state() {
    for _ in $(seq 300); do
        [ -z "$(squeue --noheader --states=CG 2>/dev/null)" ] && break
        sleep 0.1
    done
    sinfo --noheader --nodes="$host" --format=%T
}
# epilog_tool VERDICT STATUS: gdrhook stands in as a tool that says VERDICT
# and exits STATUS.
epilog_tool() {
    printf '#!/bin/sh\necho "%s"\nexit %s\n' "$1" "$2" >"$tmp/bin/epilog-tool.new"
    chmod 755 "$tmp/bin/epilog-tool.new"
    mv -f "$tmp/bin/epilog-tool.new" "$tmp/bin/epilog-tool"
}
# after_job NAME up|drained: the node's state after a job (the sibling job
# still runs: allocated, mixed, or draining).
after_job() {
    local state
    as_user srun --job-name="$1" true || fail "the $1 job failed"
    state=$(node_state)
    case $2:$state in up:drain* | drained:[!d]* | drained:) fail "after the $1 job the node is $state" ;; esac
}

case $(node_state) in drain*) fail "the packaged epilog drained the node: $(node_state)" ;; esac
epilog_tool "gdrhook: job 1 on $host: FAILED; could not see 1 process(es) (run as root), so cannot tell what is pinned" 1
after_job blind up
rm "$tmp/bin/epilog-tool"
after_job missing up
epilog_tool "gdrhook: job 1 on $host: FAILED; left 1 pin(s), 4 MiB, held by pid 1 (x); log check: no event log" 1
after_job left drained
scontrol update nodename="$host" state=resume
ln -sf "$GDRHOOK" "$tmp/bin/epilog-tool"
