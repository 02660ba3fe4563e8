// Package benchtree writes the generated profile and role tree that the
// check benchmarks and internal/benchtree/bench-vs-cue.sh measure, so both time the
// same files.
package benchtree

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write generates n directory profiles (each with instructions.md and a
// private skill) and n roles under root/agent, the shape of a large real
// setup, plus a MAIN.md. The profiles' config.json files are what
// `cue vet -d '#Profile'` is compared on.
func Write(root string, n int) error {
	write := func(rel, data string) error {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(data), 0o644)
	}
	for i := range n {
		name := fmt.Sprintf("profile-%04d", i)
		files := [][2]string{
			{fmt.Sprintf("agent/facets/profiles/%s/config.json", name), fmt.Sprintf(`{
  "version": 1,
  "name": %q,
  "description": "Generated profile %d for benchmarks",
  "model": "anthropic/claude-sonnet-4-5",
  "thinkingLevel": "high",
  "sessionPersistence": "persistent",
  "tools": ["read", "grep", "find", "ls", "bash"]
}
`, name, i)},
			{fmt.Sprintf("agent/facets/profiles/%s/instructions.md", name), "Review only; report findings with file and line.\n"},
			{fmt.Sprintf("agent/facets/profiles/%s/skills/check/SKILL.md", name), "---\nname: check\ndescription: a private skill\n---\nbody\n"},
			{fmt.Sprintf("agent/agents/role-%04d.md", i), fmt.Sprintf("---\nname: role-%04d\ndescription: Generated role %d\nmodel: anthropic/claude-sonnet-4-5\nthinking: high\ntools: read, bash\nspawning: false\n---\nYou are a generated role.\n", i, i)},
		}
		for _, f := range files {
			if err := write(f[0], f[1]); err != nil {
				return fmt.Errorf("write bench tree: %w", err)
			}
		}
	}
	if err := write("agent/facets/MAIN.md", "Route reviews to profile-0000.\n"); err != nil {
		return fmt.Errorf("write bench tree: %w", err)
	}
	return nil
}
