#!/usr/bin/env bash
# bench-vs-cue.sh: time `facets check` against two yardsticks on the same
# generated trees (N profiles + N roles): the floor program
# (internal/benchtree/floor.go, which only reads and decodes what check
# reads) and `cue vet` (which sees the N config.json files against #Profile
# from `facets schema --cue`). The three run interleaved, run by run, so
# machine load hits all alike; the script prints medians of wall time, CPU
# time (user + system) and peak RSS, facets / floor beside cue vet / facets,
# and facets' cost at the largest size over the smallest (linearity).
#
# Then times a cold `facets compile` of one profile against `facets
# --version` the same way (target: at most 2x).
#
# usage: internal/benchtree/bench-vs-cue.sh [SIZES="1000 10000"] [RUNS=7]
# CUE=/path/to/cue skips building cue (it must be the version in go.mod).
set -euo pipefail

sizes=${1:-1000 10000}
runs=${2:-7}
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$repo" && go build -o "$work/bin/facets" ./cmd/facets)
(cd "$repo" && go build -o "$work/bin/floor" ./internal/benchtree/floor.go)
cue=${CUE:-}
if [ -z "$cue" ]; then
	cuever=$(cd "$repo" && go list -m -f '{{.Version}}' cuelang.org/go)
	echo "building cue $cuever into $work/bin ..." >&2
	(cd "$repo" && GOBIN="$work/bin" GOFLAGS=-mod=mod go install "cuelang.org/go/cmd/cue@$cuever")
	cue=$work/bin/cue
fi
"$cue" version | head -1 >&2
"$work/bin/facets" schema --cue >"$work/facets.cue"

# measure CMD...: prints "wall_seconds cpu_seconds peak_rss_kib". A tiny Go
# program runs the command and reads the child's getrusage (user + system
# CPU, max RSS, the numbers /usr/bin/time -v prints), timing the wall
# clock in nanoseconds rather than /usr/bin/time's 10 ms steps.
cat >"$work/measure.go" <<'GO'
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wall := time.Since(start).Seconds()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Printf("%.4f %.4f %d\n", wall, cpu.Seconds(), ru.Maxrss)
}
GO
(cd "$work" && go mod init measure >/dev/null 2>&1 && go build -o "$work/measure" .)
measure() { "$work/measure" "$@"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v c="$2" '{print $c}' "$1" | median; }

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs"
first=""
for n in $sizes; do
	tree=$work/tree-$n
	(cd "$repo" && go run internal/benchtree/write.go "$tree" "$n")
	sync # flush the new tree so its writeback does not overlap the timed runs
	facets=("$work/bin/facets" check -C "$tree" --agent-dir "$tree/agent")
	floor=("$work/bin/floor" "$tree/agent")
	cuevet=("$cue" vet -d '#Profile' "$work/facets.cue")
	cuevet+=("$tree"/agent/facets/profiles/*/config.json)

	# Warm the page cache and the binaries once; then alternate.
	measure "${facets[@]}" >/dev/null
	measure "${floor[@]}" >/dev/null
	measure "${cuevet[@]}" >/dev/null
	: >"$work/facets-$n.txt"
	: >"$work/floor-$n.txt"
	: >"$work/cue-$n.txt"
	for _ in $(seq "$runs"); do
		measure "${facets[@]}" >>"$work/facets-$n.txt"
		measure "${floor[@]}" >>"$work/floor-$n.txt"
		measure "${cuevet[@]}" >>"$work/cue-$n.txt"
	done

	fw=$(col "$work/facets-$n.txt" 1) fc=$(col "$work/facets-$n.txt" 2) fm=$(col "$work/facets-$n.txt" 3)
	lw=$(col "$work/floor-$n.txt" 1) lc=$(col "$work/floor-$n.txt" 2) lm=$(col "$work/floor-$n.txt" 3)
	cw=$(col "$work/cue-$n.txt" 1) cc=$(col "$work/cue-$n.txt" 2) cm=$(col "$work/cue-$n.txt" 3)
	echo
	echo "files: $n profiles + $n roles (cue vet: the $n config.json files), medians of $runs interleaved runs,"
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg) after them"
	printf '%-12s %8s %8s %10s\n' "" "wall s" "cpu s" "peak RSS"
	printf '%-12s %8s %8s %6.1f MiB\n' "facets check" "$fw" "$fc" "$(awk -v m="$fm" 'BEGIN {print m / 1024}')"
	printf '%-12s %8s %8s %6.1f MiB\n' "floor" "$lw" "$lc" "$(awk -v m="$lm" 'BEGIN {print m / 1024}')"
	printf '%-12s %8s %8s %6.1f MiB\n' "cue vet" "$cw" "$cc" "$(awk -v m="$cm" 'BEGIN {print m / 1024}')"
	awk -v fw="$fw" -v fc="$fc" -v fm="$fm" -v lw="$lw" -v lc="$lc" -v lm="$lm" -v cw="$cw" -v cc="$cc" 'BEGIN {
		printf "ratio facets / floor:   wall %.2fx, cpu %.2fx (goal <= 1.5x); peak RSS %.1f MiB (goal <= 48 MiB)\n",
			fw / lw, fc / lc, fm / 1024
		printf "ratio cue vet / facets: wall %.1fx, cpu %.1fx (goal >= 10x; cue vet / floor: wall %.1fx, the most facets could reach)\n", cw / fw, cc / fc, cw / lw
	}'
	if [ -z "$first" ]; then
		first=$n ffw=$fw ffc=$fc
	else
		awk -v a="$fw" -v b="$ffw" -v c="$fc" -v d="$ffc" -v n="$n" -v f="$first" 'BEGIN {
			printf "facets %s / %s: wall %.1fx, cpu %.1fx (goal <= %.1fx)\n", n, f, a / b, c / d, 1.1 * n / f
		}'
	fi
done
echo

# Cold compile of one profile vs the bare binary start.
(cd "$repo" && go run internal/benchtree/write.go "$work/one" 1)
one=("$work/bin/facets" compile profile-0000 -C "$work/one" --agent-dir "$work/one/agent")
version=("$work/bin/facets" --version)
: >"$work/one.txt"
: >"$work/version.txt"
for _ in $(seq $((runs * 3))); do
	measure "${one[@]}" >>"$work/one.txt"
	measure "${version[@]}" >>"$work/version.txt"
done
ow=$(col "$work/one.txt" 1) vw=$(col "$work/version.txt" 1)
echo "cold compile of one profile: ${ow} s, facets --version: ${vw} s (medians of $((runs * 3)))"
awk -v a="$ow" -v b="$vw" 'BEGIN {if (b > 0) printf "ratio compile / --version: %.1fx\n", a / b}'
