#!/usr/bin/env bash
# bench-vs-cue.sh: time `facets check` and `cue vet` on the same generated
# tree (N profiles + N roles; cue vet sees the N config.json files against
# #Profile from `facets schema --cue`), interleaved run by run so machine
# load hits both alike, and print medians, the ratio and peak RSS.
#
# Then times a cold `facets compile` of one profile against `facets
# --version` the same way (target: at most 2x).
#
# usage: internal/benchtree/bench-vs-cue.sh [N=1000] [RUNS=7]
# CUE=/path/to/cue skips the install (it must be v0.17.1).
set -euo pipefail

n=${1:-1000}
runs=${2:-7}
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$repo" && go build -o "$work/bin/facets" ./cmd/facets)
cue=${CUE:-}
if [ -z "$cue" ]; then
	echo "installing cue v0.17.1 into $work/bin ..." >&2
	GOBIN="$work/bin" GOFLAGS=-mod=mod go install cuelang.org/go/cmd/cue@v0.17.1
	cue=$work/bin/cue
fi
"$cue" version | head -1 >&2
(cd "$repo" && go run ./internal/benchtree/cmd "$work/tree" "$n")
sync # flush the new tree so its writeback does not overlap the timed runs
"$work/bin/facets" schema --cue >"$work/facets.cue"

facets=("$work/bin/facets" check -C "$work/tree" --agent-dir "$work/tree/agent")
cuevet=("$cue" vet -d '#Profile' "$work/facets.cue")
cuevet+=("$work"/tree/agent/facets/profiles/*/config.json)

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

# Warm the page cache and both binaries once; then alternate.
measure "${facets[@]}" >/dev/null
measure "${cuevet[@]}" >/dev/null
: >"$work/facets.txt"
: >"$work/cue.txt"
for _ in $(seq "$runs"); do
	measure "${facets[@]}" >>"$work/facets.txt"
	measure "${cuevet[@]}" >>"$work/cue.txt"
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v c="$2" '{print $c}' "$1" | median; }
fw=$(col "$work/facets.txt" 1) fc=$(col "$work/facets.txt" 2) fm=$(col "$work/facets.txt" 3)
cw=$(col "$work/cue.txt" 1) cc=$(col "$work/cue.txt" 2) cm=$(col "$work/cue.txt" 3)
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "files: $n profiles + $n roles (cue vet: the $n config.json files), medians of $runs interleaved runs"
printf '%-12s %8s %8s %10s\n' "" "wall s" "cpu s" "peak RSS"
printf '%-12s %8s %8s %7d MiB\n' "facets check" "$fw" "$fc" $((fm / 1024))
printf '%-12s %8s %8s %7d MiB\n' "cue vet" "$cw" "$cc" $((cm / 1024))
awk -v a="$cw" -v b="$fw" -v c="$cc" -v d="$fc" 'BEGIN {printf "ratio cue vet / facets: wall %.1fx, cpu %.1fx\n", a / b, c / d}'

# Cold compile of one profile vs the bare binary start.
(cd "$repo" && go run ./internal/benchtree/cmd "$work/one" 1)
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
