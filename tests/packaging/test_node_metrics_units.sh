#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The node-metrics units the gdrhook packages ship, off until enabled
# (packaging/systemd/): systemd's own checker finds nothing wrong in them,
# the service's command, run as the unit runs it but against this build's
# gdrhook and a folder of the test's, writes a textfile promtool accepts
# and exits with a status the unit counts as success, and the timer is
# installable (an [Install] section) but the packages do not enable it
# (tests/packaging/check_debs.sh checks the built .deb's scripts).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
UNITS=$HERE/../../packaging/systemd
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-units-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
	echo "test_node_metrics_units: FAIL: $*" >&2
	exit 1
}
[ -x "${GDRHOOK:-}" ] || fail "GDRHOOK (this build's gdrhook) not set"
command -v systemd-analyze >/dev/null || fail "systemd-analyze not found (apt-get install systemd)"
command -v promtool >/dev/null || fail "promtool not found (apt-get install prometheus)"

# The units as installed, but for the path of this build's command and
# the test's textfile folder.
textdir=$WORK/node-exporter
mkdir -p "$textdir"
for unit in gdrhook-node-metrics.service gdrhook-node-metrics.timer; do
	sed -e "s|/usr/bin/gdrhook|$GDRHOOK|" -e "s|/var/lib/prometheus/node-exporter|$textdir|g" \
		"$UNITS/$unit" >"$WORK/$unit"
done
systemd-analyze verify --man=no "$WORK/gdrhook-node-metrics.timer" "$WORK/gdrhook-node-metrics.service" \
	>"$WORK/verify" 2>&1 || { cat "$WORK/verify"; fail "systemd-analyze verify failed"; }
[ ! -s "$WORK/verify" ] || { cat "$WORK/verify"; fail "systemd-analyze verify complained"; }

grep -q '^WantedBy=timers.target$' "$WORK/gdrhook-node-metrics.timer" || fail "the timer has no [Install] WantedBy=timers.target"
grep -q '^Unit=\|^OnUnitActiveSec=' "$WORK/gdrhook-node-metrics.timer" || fail "the timer does not repeat"

# The service's command, as systemd would run it.
command=$(sed -n 's/^ExecStart=//p' "$WORK/gdrhook-node-metrics.service")
[ -n "$command" ] || fail "no ExecStart"
status=0
# shellcheck disable=SC2086 # the unit's words, as systemd splits them
$command >"$WORK/out" 2>&1 || status=$?
ok=$(sed -n 's/^SuccessExitStatus=//p' "$WORK/gdrhook-node-metrics.service")
# gdrhook node's findings (1: something pinned, 3: processes it could not
# read) are what the textfile is for: the unit must not fail on them.
for finding in 1 3; do
	case " $ok " in *" $finding "*) ;; *) fail "exit status $finding of gdrhook node would fail the unit" ;; esac
done
case " 0 $ok " in
*" $status "*) ;;
*) cat "$WORK/out"; fail "the service's command exited $status, which the unit counts as a failure" ;;
esac
[ -s "$textdir/gdrhook.prom" ] || fail "the service wrote no textfile"
promtool check metrics <"$textdir/gdrhook.prom" >"$WORK/promtool" 2>&1 ||
	{ cat "$WORK/promtool"; fail "promtool rejects the textfile"; }
grep -q '^gdrhook_node_processes ' "$textdir/gdrhook.prom" || fail "the textfile has no gdrhook_node_processes"
echo "test_node_metrics_units: units verified, textfile written (exit $status) and accepted by promtool"
