# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: the plugin's own escaping of a
# verdict, apart from the epilog's. `gdrhook epilog` escapes what it
# writes, so a verdict with a terminal's control bytes in it can come only
# from a tool that does not (an older gdrhook, or whatever `gdrhook=`
# names): here an epilog that writes raw ESC, an OSC 8 link and a clear
# screen in its verdict line and summary. slurmd's log (root's) and
# srun's standard error (the user's terminal) must get them as \xNN.
#   raw   the verdict line in slurmd's log and the summary's first line
#         that srun prints: no raw control byte, the escaped text there.

cat >"$tmp/bin/raw-epilog" <<'SCRIPT'
#!/bin/sh
while [ $# -gt 1 ] && [ "$1" != --summary ]; do shift; done
summary=$(echo "$2" | sed "s/%h/$(hostname -s)/")
line=$(printf 'gdrhook: raw verdict \033]8;;http://x\007link\033]8;;\007 \033[2J end')
echo "$line"
echo "$line" >"$summary"
SCRIPT
chmod 755 "$tmp/bin/raw-epilog"
plugstack "gdrhook=$tmp/bin/raw-epilog"
as_user timeout 60 srun --gdrhook --job-name=raw sh -c 'echo "job=$SLURM_JOB_ID"' \
    >"$tmp/raw.out" 2>"$tmp/raw.err" || fail "srun of the raw-verdict job failed"
job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/raw.out")
has "$tmp/raw.err" 'gdrhook: raw verdict \x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[2J end'
grep -q "$(printf '\033')" "$tmp/raw.err" && fail "a raw ESC of the verdict reached srun's terminal"
for _ in $(seq 50); do grep -q "\[$job\.0\] .*gdrhook: raw verdict" "$tmp/log/slurmd.log" && break; sleep 0.1; done
grep "\[$job\.0\] .*gdrhook: raw verdict" "$tmp/log/slurmd.log" >"$tmp/raw.slurmd" ||
    fail "slurmd's log lacks the raw verdict of job $job"
has "$tmp/raw.slurmd" 'gdrhook: raw verdict \x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[2J end'
grep -q "$(printf '\033')" "$tmp/raw.slurmd" && fail "a raw ESC of the verdict reached slurmd's log"
plugstack
