#!/bin/busybox sh
# slurm_job.sh - the slurm step: /dev/gdrhook's access model under a real
# Slurm, with gdrhook.ko loaded. The node is 0666, as RDMA's uverbs
# devices are, and what a user pins is bounded by its locked-memory limit,
# which Slurm gives each task from srun's (PropagateResourceLimits, ALL by
# default). munged, slurmctld and slurmd, Debian's (Slurm 22.05) as
# run.sh packed them, run one node; an unprivileged user,
# its srun limited to 64 KiB of locked memory, runs a job step whose task
# (gdrhook-jobpins) pins its 64 KiB through the node, is refused one page
# more with ENOMEM, and ends with its pin held; when srun is back, the
# module holds no pin and no open file. slurmd runs gdrhook's Slurm plugin
# (its plugstack), which the step asks for with --gdrhook: the task runs
# under the shim, makes no CUDA call, and the plugin's verdict says so.
# Each check prints "slurm: ..."; exit status 0 only when all held.
export PATH=/bin:/usr/bin:/usr/sbin
S=/tmp/slurm
say() { echo "slurm: $*"; }
bad() {
	say "FAIL: $*"
	for f in "$S"/log/* "$S"/job.* "$S/munge/log"; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
	done
	stop
	exit 1
}
stop() {
	for pidfile in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/pid"; do
		[ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
	done
	for _ in $(seq 50); do
		pidof slurmd slurmctld slurmstepd munged >/dev/null || return 0
		sleep 0.1
	done
}
counter() { cat "/sys/kernel/debug/gdrhook/$1"; }

[ -x /usr/sbin/slurmd ] || bad "no Slurm in the guest (run.sh packs the host's)"
# In a mount namespace of its own: what Slurm needs mounted stays out of
# the other steps' way.
[ -n "${SLURM_JOB_NS:-}" ] || SLURM_JOB_NS=1 exec unshare -m "$0"
mkdir -p "$S/state" "$S/spool" "$S/log" /etc
hostname gnode
# slurmd starts its cgroup plugin whatever else is configured: version 1's
# asks for no controller when it tracks nothing (proctrack/linuxproc).
mount -t tmpfs cgroup /sys/fs/cgroup || bad "cannot mount /sys/fs/cgroup"
echo "CgroupPlugin=cgroup/v1" >"$S/cgroup.conf"
# Slurm resolves 127.0.0.1 with AI_ADDRCONFIG, which finds nothing on a
# machine whose only IPv4 address is the loopback's: one more, on lo.
{ ip link set lo up && ip addr add 192.0.2.1/32 dev lo; } || bad "no loopback"
cat >/etc/passwd <<EOF
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOF
cat >/etc/group <<EOF
root:x:0:
nogroup:x:65534:
EOF
printf 'passwd: files\ngroup: files\nhosts: files\n' >/etc/nsswitch.conf
echo "127.0.0.1 localhost gnode" >/etc/hosts
cat >"$S/slurm.conf" <<EOF
ClusterName=vm
Include /etc/slurm/test_cluster.conf
SlurmctldHost=gnode(127.0.0.1)
AuthInfo=socket=$S/munge/sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
PlugStackConfig=$S/plugstack.conf
NodeName=gnode NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=100 State=UNKNOWN
PartitionName=test Nodes=gnode Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -m 755 "$S/logs"
echo "required /opt/gdrhook/gdrhook_spank.so default=off logdir=$S/logs library=/opt/gdrhook/libgdrhook.so gdrhook=/opt/gdrhook/gdrhook" >"$S/plugstack.conf"
chmod 755 "$S"
chmod 644 "$S/slurm.conf" "$S/plugstack.conf" "$S/cgroup.conf"
export SLURM_CONF=$S/slurm.conf

mkdir -m 700 "$S/munge"
head -c 128 /dev/urandom >"$S/munge/key"
chmod 600 "$S/munge/key"
munged --force --key-file="$S/munge/key" --socket="$S/munge/sock" --pid-file="$S/munge/pid" \
	--log-file="$S/munge/log" --seed-file="$S/munge/seed" || bad "munged did not start"
chmod 755 "$S/munge"
slurmctld -i >"$S/log/slurmctld.out" 2>&1 || bad "slurmctld did not start"
slurmd >"$S/log/slurmd.out" 2>&1 || bad "slurmd did not start"
for _ in $(seq 300); do
	sinfo --noheader --states=idle 2>/dev/null | grep -q . && break
	sleep 0.1
done
sinfo --noheader --states=idle | grep -q . || bad "the node never came up"
say "slurmctld and slurmd up, $(slurmd -V)"

# The user's srun, its locked memory limited to 64 KiB (soft and hard, as
# a login node's limits.conf would set it): its task must be given that.
su -p -s /bin/sh nobody -c "ulimit -l 64 && cd / && exec srun --gdrhook /opt/gdrhook/gdrhook-jobpins 64" \
	>"$S/job.out" 2>"$S/job.err"
rc=$?
sed 's/^/slurm: srun: /' "$S/job.out" "$S/job.err"
[ "$rc" = 0 ] || bad "the job step failed (srun exited $rc)"
# The plugin preloaded the shim, which the task loaded and made no CUDA
# call under: srun says nothing of it, the step's verdict file says so.
grep -q "gdrhook: " "$S/job.err" && bad "srun printed a verdict for a step that made no CUDA call"
verdict=$S/logs/nobody/1/gnode.step0.verdict.txt
grep -q "^gdrhook: job 1 step 0 on gnode: no CUDA call; nothing of the job left pinned" "$verdict" ||
	bad "the plugin's verdict is not \"no CUDA call\": $(cat "$verdict")"
say "the plugin's verdict: $(head -n1 "$verdict")"
grep -q "^job_pins: uid 65534, memlock 64 KiB$" "$S/job.out" ||
	bad "the task ran without the user's uid or srun's locked-memory limit"
grep -q "^job_pins: pinned 64 KiB, refused one page more (ENOMEM)" "$S/job.out" ||
	bad "the task's pins were not bounded by its limit"
# The step is over: its pins went with its task.
for c in pins_live files_open; do
	[ "$(counter $c)" = 0 ] || bad "$c is $(counter $c) after the step ended, want 0"
done
say "the step's pins and files are gone with it"
stop
say "passed"
