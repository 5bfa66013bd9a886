# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: what a second user of the node
# ($user, the attacker) can try against another's ($victim) job through the
# plugin's log tree, and the site's group of readers.
#   root      the log root a link to the attacker's folder, a folder the
#             attacker made, or one anyone writes in: refused, with one
#             line in slurmd's log, and the job says it ran without gdrhook;
#             a root srun's host lacks gives "no verdict" there;
#             a root of the owner the site names (owner=) is taken;
#   premade   in a sticky root, the attacker made LOGDIR/<victim> first and
#             planted "OK" verdicts, escapes included, for the victim's
#             coming jobs: refused, and none of them is printed;
#   planted   a verdict file of the attacker's (and a link) in a job
#             folder its careless user opened to all: not printed;
#   readers   group=: the folders and logs readable by that group, which a
#             member reads and another user cannot.

# refused NAME LOGDIR WHY: a job of the victim under LOGDIR runs without
# gdrhook, which slurmd's log says once and srun says too; nothing is
# written in LOGDIR.
refused() {
    local name=$1 root=$2 why=$3 job
    plugstack "logdir=$root"
    as_victim srun --gdrhook --job-name="$name" sh -c 'echo "job=$SLURM_JOB_ID preload=$LD_PRELOAD"' \
        >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "the $name job failed"
    job=$(sed -n 's/^job=\([0-9]*\) .*/\1/p' "$tmp/$name.out")
    lacks "$tmp/$name.out" "$shim"
    has "$tmp/$name.err" "gdrhook: job $job step 0 ran without gdrhook: $root $why"
    [ "$(grep -c "\[$job\.0\] .*gdrhook: $root $why" "$tmp/log/slurmd.log")" = 1 ] ||
        fail "slurmd's log does not say once that $root $why: $(grep -F "$root" "$tmp/log/slurmd.log")"
    lacks "$tmp/$name.err" "gdrhook epilog"
}

# root: a link the attacker made at the log root's name before the package
# made the folder (systemd-tmpfiles leaves a link), aimed at its own folder.
as_user mkdir -m 1777 "$tmp/run/attackers"
as_user ln -s "$tmp/run/attackers" "$tmp/run/linked"
refused linked "$tmp/run/linked" "is a symbolic link"
[ -z "$(ls -A "$tmp/run/attackers")" ] || fail "a job's folder landed in the attacker's folder"
# A folder the attacker made first, and one anyone may write in.
as_user mkdir -m 755 "$tmp/run/owned"
refused owned "$tmp/run/owned" "is owned by user $user, not root"
mkdir -m 777 "$tmp/open" && chmod 777 "$tmp/open"
refused open "$tmp/open" "is writable by others and not sticky (mode 777)"
# A root srun's host lacks (a login node's /var/tmp, a logdir= each node
# has of its own): no verdict there, which srun says, with where each
# node's is, without claiming the job ran without gdrhook (the nodes may
# have one); slurmd's log says why the job did, here.
plugstack "logdir=$tmp/none"
as_victim srun --gdrhook sh -c 'echo "job=$SLURM_JOB_ID"' >"$tmp/none.out" 2>"$tmp/none.err" ||
    fail "the job under a missing log root failed"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/none.out")
has "$tmp/none.err" "gdrhook: job $job step 0: no verdict here of 1 of 1 node(s): each is on its node, in $tmp/none/$victim/$job/NODE.step0.verdict.txt, and in its slurmd log"
lacks "$tmp/none.err" "ran without gdrhook: $tmp/none"
grep -q "\[$job\.0\] .*gdrhook: $tmp/none cannot be opened" "$tmp/log/slurmd.log" ||
    fail "slurmd's log does not say why job $job ran without gdrhook"
# The site named the root's owner: taken.
plugstack "logdir=$tmp/run/owned" "owner=$user"
as_user srun --gdrhook sh -c 'echo "job=$SLURM_JOB_ID preload=$LD_PRELOAD"' >"$tmp/owner.out" \
    2>"$tmp/owner.err" || fail "the job under a log root of the named owner failed"
has "$tmp/owner.out" "preload=$shim"
job=$(sed -n 's/^job=\([0-9]*\) .*/\1/p' "$tmp/owner.out")
has "$tmp/run/owned/$user/$job/$host.step0.verdict.txt" ": no CUDA call;"
lacks "$tmp/owner.err" "gdrhook: "

# premade: a sticky root (mode 1777, as an older package made it), where
# the attacker made the victim's folder first, with an "OK" verdict for
# each of the victim's next jobs (job ids come in order).
sticky=$tmp/sticky
mkdir -m 1777 "$sticky" && chmod 1777 "$sticky"
as_user mkdir -m 777 "$sticky/$victim"
last=$(squeue --noheader --states=all --format=%i 2>/dev/null | sort -n | tail -1)
for next in $(seq "$((${last:-0} + 1))" "$((${last:-0} + 4))"); do
    as_user mkdir -p -m 777 "$sticky/$victim/$next"
    printf 'gdrhook: job %s step 0 on %s: OK \033]0;owned\007\n' "$next" "$host" |
        as_user tee "$sticky/$victim/$next/$host.step0.verdict.txt" >/dev/null
done
plugstack "logdir=$sticky"
as_victim srun --gdrhook --job-name=premade sh -c 'echo "job=$SLURM_JOB_ID preload=$LD_PRELOAD"' \
    >"$tmp/premade.out" 2>"$tmp/premade.err" || fail "the job under a premade folder failed"
job=$(sed -n 's/^job=\([0-9]*\) .*/\1/p' "$tmp/premade.out")
[ -f "$sticky/$victim/$job/$host.step0.verdict.txt" ] || fail "job $job came past the planted verdicts"
lacks "$tmp/premade.out" "$shim"
has "$tmp/premade.err" "gdrhook: job $job step 0 ran without gdrhook: $sticky/$victim is owned by user $user, not $victim"
lacks "$tmp/premade.err" ": OK"
lacks "$tmp/premade.err" $'\e'
[ "$(grep -c "\[$job\.0\] .*gdrhook: $sticky/$victim is owned by" "$tmp/log/slurmd.log")" = 1 ] ||
    fail "slurmd's log does not say once whose $sticky/$victim is"
# In the same root, the plugin makes the folder of a user who has none.
as_user srun --gdrhook sh -c 'echo "preload=$LD_PRELOAD"' >"$tmp/sticky.out" 2>"$tmp/sticky.err" ||
    fail "the job under a sticky root failed"
has "$tmp/sticky.out" "preload=$shim"
[ "$(stat -c '%a %U' "$sticky/$user")" = "700 $user" ] ||
    fail "$sticky/$user is $(stat -c '%a %U' "$sticky/$user"), not the user's with mode 700"

# planted: the victim opens its folders to all during its job; the attacker
# plants a verdict of its own there, and a link to one.
plugstack
as_victim srun --gdrhook --job-name=opened sh -c '
    echo "job=$SLURM_JOB_ID"
    folder=${GDRHOOK_EVENTS%/*}
    chmod 777 "${folder%/*}" "$folder"
    echo "$folder" >"$0"
    while [ ! -f "$1" ]; do sleep 0.05; done' "$tmp/run/opened.ready" "$tmp/run/opened.planted" \
    >"$tmp/opened.out" 2>"$tmp/opened.err" &
srun_pid=$!
wait_for "$tmp/run/opened.ready"
folder=$(cat "$tmp/run/opened.ready")
echo "gdrhook: planted: OK" | as_user tee "$folder/planted.step0.verdict.txt" "$tmp/run/fake" >/dev/null
as_user ln -s "$tmp/run/fake" "$folder/linked.step0.verdict.txt"
touch "$tmp/run/opened.planted"
wait "$srun_pid" || fail "the opened job failed"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/opened.out")
has "$folder/$host.step0.verdict.txt" "gdrhook: job $job step 0 on $host: no CUDA call;"
lacks "$tmp/opened.err" "gdrhook: job"
lacks "$tmp/opened.err" "planted: OK"
has "$tmp/opened.err" "gdrhook: $folder/planted.step0.verdict.txt not read: is owned by another user"
has "$tmp/opened.err" "gdrhook: $folder/linked.step0.verdict.txt not read: is a symbolic link"

# readers: group= names who may read every job's logs.
readers=adm
plugstack "group=$readers"
as_user srun --gdrhook=alloc --job-name=readers sh -c 'echo "job=$SLURM_JOB_ID"; exec "$0"' \
    "$tmp/bin/gdrhook-demo" >"$tmp/readers.out" 2>"$tmp/readers.err" || fail "the readers job failed"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/readers.out")
folder=$logs/$user/$job
[ "$(stat -c '%a %G' "$logs/$user")" = "2750 $readers" ] ||
    fail "$logs/$user is $(stat -c '%a %G' "$logs/$user"), not 2750 of group $readers"
[ "$(stat -c '%a %G' "$folder")" = "2750 $readers" ] ||
    fail "$folder is $(stat -c '%a %G' "$folder"), not 2750 of group $readers"
for file in "$folder"/"$host".step0.rank0.*.jsonl "$folder/$host.step0.verdict.txt"; do
    [ "$(stat -c '%a %G' "$file")" = "640 $readers" ] ||
        fail "$file is $(stat -c '%a %G' "$file"), not 640 of group $readers"
    setpriv --reuid="$victim" --regid="$victim" --groups="$(getent group "$readers" | cut -d: -f3)" \
        cat "$file" >/dev/null || fail "a member of $readers cannot read $file"
    as_victim cat "$file" >/dev/null 2>&1 && fail "a user not in $readers read $file"
done
plugstack
