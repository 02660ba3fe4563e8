package launch

import (
	"os"
	"path/filepath"
)

// HerdrAgentState returns Herdr's Pi lifecycle extension in agentDir
// (<agentDir>/extensions/herdr-agent-state.ts) when it is installed as a
// regular file, else "": a Sub loads it with -e right after the bridge.
func HerdrAgentState(agentDir string) string {
	if agentDir == "" {
		return ""
	}
	p := filepath.Join(agentDir, "extensions", "herdr-agent-state.ts")
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p
	}
	return ""
}
