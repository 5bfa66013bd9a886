# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: a job on two nodes. This host runs a
# second slurmd as node n2: in a UTS namespace of its own, whose host name
# n2 is how slurmd finds its NodeName and how the plugin names its verdict,
# and a mount namespace where the log root is a folder of n2's own, as a
# node-local logdir= is on a cluster (slurm.conf gives n2 its own port,
# spool folder and pid file).
#   private   srun -N2 prints this node's verdict and says where n2's is,
#             which n2 wrote in its own folder;
#   shared    the log root n2's and srun's both (n2's own folder unmounted):
#             srun prints both nodes' verdicts and nothing more.

n2logs=$tmp/n2logs
mkdir -m 755 "$n2logs"
unshare --uts --mount --propagation private sh -c '
    hostname n2 && mount --bind "$1" "$2" && exec slurmd -L "$3"' \
    sh "$n2logs" "$logs" "$tmp/log/slurmd.n2.log" >"$tmp/log/slurmd.n2.out" 2>&1 ||
    fail "the slurmd of n2 did not start: $(cat "$tmp/log/slurmd.n2.out")"
for _ in $(seq 100); do
    sinfo --noheader --nodes=n2 --states=idle 2>/dev/null | grep -q . && break
    sleep 0.1
done
sinfo --noheader --nodes=n2 --states=idle | grep -q . || fail "n2 never came up: $(sinfo --nodes=n2)"

# two NAME: the demo as the user on both nodes, one task each; sets $job.
two() {
    local name=$1
    as_user srun --partition=two --nodes=2 --ntasks-per-node=1 --gdrhook=alloc --job-name="$name" \
        sh -c 'echo "job=$SLURM_JOB_ID"; exec "$0"' "$tmp/bin/gdrhook-demo" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "the $name job failed: $(cat "$tmp/$name.err")"
    job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/$name.out" | head -n1)
    [ -n "$job" ] || fail "the $name job said no job id"
}

two private
has "$n2logs/$user/$job/n2.step0.verdict.txt" "gdrhook: job $job step 0 on n2: OK"
[ ! -e "$logs/$user/$job/n2.step0.verdict.txt" ] || fail "n2 wrote its verdict in this node's log root"
has "$tmp/private.err" "gdrhook: job $job step 0 on $host: OK"
lacks "$tmp/private.err" "on n2:"
has "$tmp/private.err" "gdrhook: job $job step 0: no verdict here of 1 of 2 node(s): each is on its node, in $logs/$user/$job/NODE.step0.verdict.txt, and in its slurmd log"

nsenter --target "$(cat "$tmp/slurmd.n2.pid")" --mount umount "$logs" ||
    fail "cannot unmount n2's own log root"
two shared
has "$tmp/shared.err" "gdrhook: job $job step 0 on $host: OK"
has "$tmp/shared.err" "gdrhook: job $job step 0 on n2: OK"
lacks "$tmp/shared.err" "no verdict here"
