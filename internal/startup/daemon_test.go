package startup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// BenchmarkPlanRequest is what the plan daemon does for one Pi start: a
// Main's plan with --profile on a one-profile tree, answered in process
// as the daemon answers it (docs/performance.md cites it).
func BenchmarkPlanRequest(b *testing.B) {
	agent := b.TempDir()
	cfg := filepath.Join(agent, "facets", "profiles", "worker", "config.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`{"version":1,"name":"worker","description":"Works","tools":["read","grep"]}`), 0o644); err != nil {
		b.Fatal(err)
	}
	stdin, _ := json.Marshal(map[string]any{"cwd": agent, "profile": "worker", "mainSession": "s"})
	req := pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Dir: agent, Stdin: string(stdin),
		Args: []string{"pi-extension", "plan", "--role", "main", "--protocol", strconv.Itoa(pibridge.Protocol)},
		Env:  []string{envvar.AgentDir + "=" + agent, envvar.Home + "=" + filepath.Join(agent, "home")}}
	bin := pibridge.Peer{Protocol: pibridge.Protocol}
	b.ReportAllocs()
	for b.Loop() {
		reply, err := Answer(req, bin)
		if err != nil || reply.Code != 0 {
			b.Fatalf("plan: %v, exit %d: %s", err, reply.Code, reply.Stderr)
		}
	}
}

func TestRequestEnvKeepsOnlyWhatAPlanReads(t *testing.T) {
	getenv, err := requestEnv([]string{"OPENAI_API_KEY=sk-1", envvar.AgentDir + "=/a", envvar.AgentDir + "=/b", "PATH=/bin", envvar.Home + "=/h", "junk", envvar.BundledRoles + "=roles"})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{envvar.AgentDir: "/a", envvar.Home: "/h", "OPENAI_API_KEY": "", "PATH": "", "junk": "", envvar.BundledRoles: "roles"} {
		if got := getenv(k); got != want {
			t.Errorf("getenv(%s) = %q, want %q", k, got, want)
		}
	}
	for _, k := range envvar.PlanPaths {
		if _, err := requestEnv([]string{k + "=rel/dir"}); err == nil {
			t.Errorf("a relative %s was taken: the daemon would resolve it against its own directory", k)
		}
	}
}
