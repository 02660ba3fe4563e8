#!/usr/bin/env bash
# What facets adds to Pi's startup: `pi ... -p hello` to exit with a mock
# model, in interleaved rounds of these variants, medians in ms:
#   bare      pi --no-extensions            (no extension at all)
#   plain     pi                            (Pi's built-in extensions, no facets)
#   tiny      pi, a three-line extension installed (Pi's cost of any extension)
#   ext       pi, facets extension installed (auto-discovered)
#   profile   pi --profile worker, installed
#   spawn     pi, installed, FACETS_PLAN_DAEMON=0: every start spawns its
#             plan (what the first start after an idle spell or upgrade costs)
# facets' cost is ext - plain and profile - plain (tiny - plain of it is Pi's
# cost of any extension), each also as the median of the per-round
# differences ("paired", which is steadier). A benchmark, not a test:
# run it by hand on a quiet machine (it prints the load average before and
# after, since other work skews it).
#
#   bash runtime/pibridge/bench-startup.sh [ROUNDS]   # default 15
#
# Needs the Node and Pi of the real-Pi tests in $FACETS_PI_HOME (default
# $XDG_CACHE_HOME/facets-pi or ~/.cache/facets-pi; `go test ./runtime/pibridge` or .ci/run installs them)
# and Go to build facets. FACETS_BENCH_BIN=path measures that facets binary
# instead of a fresh build. For an A/B comparison in the same interleaved
# rounds, FACETS_BENCH_BASE=path names a second facets binary (an older
# build): it adds the variants ext-base and profile-base with the extension
# that binary installs.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-15}
source runtime/pibridge/extension/versions.env
home=${FACETS_PI_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/facets-pi}
node=$(ls "$home/node-$node_version"/node_modules/node-*/bin/node)
cli="$home/pi-$pi_version/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
[ -x "$node" ] && [ -f "$cli" ] || { echo "no Node/Pi in $home: run go test ./runtime/pibridge once" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'kill $mock_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
facets=${FACETS_BENCH_BIN:-}
if [ -z "$facets" ]; then
	facets="$tmp/facets"
	go build -o "$facets" ./cmd/facets
fi

# The mock model: an OpenAI chat-completions endpoint that streams one
# short answer, written in the Node Pi runs on.
cat > "$tmp/mock.mjs" <<'JS'
import http from "node:http";
const srv = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const c = (delta, finish) => JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "mock-model", choices: [{ index: 0, delta, finish_reason: finish }] });
    res.end(`data: ${c({ role: "assistant", content: "" }, null)}\n\ndata: ${c({ content: "hi" }, null)}\n\ndata: ${c({}, "stop")}\n\ndata: [DONE]\n\n`);
  });
});
srv.listen(0, "127.0.0.1", () => console.log(srv.address().port));
JS
"$node" "$tmp/mock.mjs" > "$tmp/port" &
mock_pid=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")

# Two agent dirs: one without facets, one with the extension installed and a profile.
setup() { # agentDir
	mkdir -p "$1/facets/profiles/worker"
	cat > "$1/models.json" <<JSON
{"providers":{"mock":{"baseUrl":"http://127.0.0.1:$port/v1","api":"openai-completions","apiKey":"dummy",
 "models":[{"id":"mock-model","name":"Mock","contextWindow":32000,"maxTokens":1024}]}}}
JSON
	echo '{"retry":{"enabled":false},"defaultProvider":"mock","defaultModel":"mock-model","quietStartup":true}' > "$1/settings.json"
}
setup "$tmp/agent-plain"
setup "$tmp/agent-facets"
# Pi's own cost of loading any extension (jiti and its virtual modules),
# which no extension can avoid: a three-line one, installed the same way.
setup "$tmp/agent-tiny"
mkdir -p "$tmp/agent-tiny/extensions/tiny"
echo 'export default function (pi) { pi.on("session_start", async () => {}); }' > "$tmp/agent-tiny/extensions/tiny/index.js"
echo '{"type": "module", "pi": {"extensions": ["./index.js"]}}' > "$tmp/agent-tiny/extensions/tiny/package.json"
echo '{"version":1,"name":"worker","description":"Works","tools":["read","grep"]}' > "$tmp/agent-facets/facets/profiles/worker/config.json"
PI_CODING_AGENT_DIR="$tmp/agent-facets" "$facets" pi-extension install > /dev/null
variants=(bare plain tiny ext profile spawn)
if [ -n "${FACETS_BENCH_BASE:-}" ]; then
	setup "$tmp/agent-base"
	cp -r "$tmp/agent-facets/facets" "$tmp/agent-base/"
	PI_CODING_AGENT_DIR="$tmp/agent-base" "$FACETS_BENCH_BASE" pi-extension install > /dev/null
	variants+=(ext-base profile-base)
fi
mkdir -p "$tmp/work" "$tmp/home" "$tmp/run"

# childcpu prints the CPU time (user + system, ms) of every process this
# shell has waited for, from bash's `times` (millisecond precision); `times`
# runs in this shell, as a subshell would report its own children only.
childcpu() {
	times > "$tmp/times"
	tail -1 "$tmp/times" | awk '{ms = 0; for (i = 1; i <= 2; i++) {split($i, a, /[ms]/); ms += a[1] * 60000 + a[2] * 1000}; printf "%d\n", ms}'
}

run() { # name agentDir args... : one timed run, appended to $tmp/name
	local name=$1 agent=$2
	shift 2
	local t0 t1 c0 c1
	childcpu > "$tmp/c0"
	t0=$(date +%s%N)
	(cd "$tmp/work" && HOME="$tmp/home" PI_CODING_AGENT_DIR="$agent" PI_OFFLINE=1 PI_TELEMETRY=0 XDG_RUNTIME_DIR="$tmp/run" \
		FACETS_PLAN_DAEMON="${daemon:-}" \
		"$node" "$cli" --no-session "$@" -p hello > "$tmp/out" 2> "$tmp/err") ||
		{ echo "$name failed:" >&2; cat "$tmp/err" >&2; exit 1; }
	t1=$(date +%s%N)
	childcpu > "$tmp/c1"
	c0=$(cat "$tmp/c0") c1=$(cat "$tmp/c1")
	grep -q hi "$tmp/out" || { echo "$name: no answer" >&2; exit 1; }
	echo $(((t1 - t0) / 1000000)) >> "$tmp/$name"
	# CPU time of Pi and what it waited for (the plan, not a facets serve
	# that outlives it): far less sensitive to other load than wall time.
	echo $((c1 - c0)) >> "$tmp/$name.cpu"
}
one() {
	case $1 in
	bare) run bare "$tmp/agent-plain" --no-extensions ;;
	plain) run plain "$tmp/agent-plain" ;;
	tiny) run tiny "$tmp/agent-tiny" ;;
	ext) run ext "$tmp/agent-facets" ;;
	profile) run profile "$tmp/agent-facets" --profile worker ;;
	spawn) daemon=0 run spawn "$tmp/agent-facets" ;;
	ext-base) run ext-base "$tmp/agent-base" ;;
	profile-base) run profile-base "$tmp/agent-base" --profile worker ;;
	esac
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores); $rounds rounds, facets $("$facets" --version | cut -d' ' -f3)"
for v in "${variants[@]}"; do one "$v"; rm -f "$tmp/$v" "$tmp/$v.cpu"; done # warm-up: page cache
for r in $(seq "$rounds"); do
	# Rotate the order each round, so drift in the load hits every variant alike.
	n=${#variants[@]}
	for ((i = 0; i < n; i++)); do one "${variants[$(((r + i) % n))]}"; done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
# paired prints the median over rounds of (variant - plain) within each
# round: the two runs of a round are seconds apart, so drift in the load
# cancels out, which the difference of the two medians does not do.
paired() { paste "$tmp/$1" "$tmp/$2" | awk '{print $1 - $2}' | median; }
plain=$(median < "$tmp/plain")
plaincpu=$(median < "$tmp/plain.cpu")
for v in "${variants[@]}"; do
	m=$(median < "$tmp/$v")
	c=$(median < "$tmp/$v.cpu")
	printf '%-12s wall median %5d ms (%+5d vs plain, paired %+5d)   cpu median %5d ms (%+5d vs plain, paired %+5d)\n' \
		"$v" "$m" $((m - plain)) "$(paired "$v" plain)" "$c" $((c - plaincpu)) "$(paired "$v.cpu" plain.cpu)"
done
# The plan daemon's CPU is not in `times` (Pi does not wait for it): read
# it from /proc, per start it answered (ext and profile, warm-up included).
pid=$(pgrep -f "pi-extension daemon --socket $tmp/run/" | head -1 || true)
if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then
	ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	served=$((2 * (rounds + 1) - 1))
	echo "plan daemon: $((ticks * 1000 / $(getconf CLK_TCK))) ms CPU for about $served starts ($((ticks * 1000 / $(getconf CLK_TCK) / served)) ms each; the first ext start spawned its plan)"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
