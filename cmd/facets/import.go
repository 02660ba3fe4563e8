package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/profiles"
)

func newImportCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Bring other tools' agent definitions over as Pi role files",
	}
	cmd.AddCommand(newImportClaudeCmd(a))
	return cmd
}

func newImportClaudeCmd(a *app) *cobra.Command {
	var sf scopeFlags
	var modelMap []string
	cmd := &cobra.Command{
		Use:   "claude [DIR]",
		Short: "Write Pi role files from Claude Code agents (default .claude/agents)",
		Long: `import claude converts each Claude Code agent file in DIR (default
<cwd>/.claude/agents) into a Pi role file in the project's .pi/agents
(--global: Pi's agent dir). Tool names are mapped to Pi's (Read → read,
Glob → find, …; tools Pi has no equivalent for are dropped), a model alias
through --model-map (inherit, or an alias without a mapping, is dropped),
fields Pi roles do not have (color, memory, mcpServers, …) are dropped, and
the body is carried unchanged. An existing file is never overwritten. For
each file it prints what was carried, mapped and dropped; what it writes
passes facets check --strict. Exit status 1 when a file was not written.`,
		Example: `  facets import claude
  facets import claude ~/.claude/agents --global --model-map sonnet=anthropic/claude-sonnet-4-5,opus=anthropic/claude-opus-4-1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !sf.global {
				sf.project = true
			}
			w, err := sf.where(a)
			if err != nil {
				return err
			}
			models, err := parseModelMap(modelMap)
			if err != nil {
				return usageError{err}
			}
			dir := filepath.Join(sf.cwd, ".claude", "agents")
			if len(args) == 1 {
				dir = args[0]
			}
			if err := requireDir("DIR", dir); err != nil {
				return err
			}
			roles, err := profiles.ImportClaude(dir, w, models)
			if err != nil {
				return err
			}
			return diagnosed(printImport(a, sf.cwd, roles))
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&sf.global, "global", false, "write into Pi's agent dir instead of <cwd>/.pi/agents")
	fl.StringVarP(&sf.cwd, "cwd", "C", ".", "the project directory")
	fl.StringVar(&sf.agentDir, "agent-dir", "", "Pi agent dir for --global (default $PI_CODING_AGENT_DIR or ~/.pi/agent)")
	fl.StringSliceVar(&modelMap, "model-map", nil, "ALIAS=PROVIDER/ID, comma-separated or repeated (sonnet=anthropic/claude-sonnet-4-5)")
	return cmd
}

// parseModelMap reads --model-map's ALIAS=PROVIDER/ID pairs.
func parseModelMap(pairs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range pairs {
		alias, model, ok := strings.Cut(p, "=")
		if !ok || alias == "" || !profiles.PlainModel(model) {
			return nil, fmt.Errorf("--model-map %q: want ALIAS=PROVIDER/ID", p)
		}
		m[alias] = model
	}
	return m, nil
}

// printImport prints each file's conversion and reports whether one was
// not written.
func printImport(a *app, cwd string, roles []profiles.ImportedRole) bool {
	rel := func(p string) string {
		abs, _ := filepath.Abs(cwd)
		if r, err := filepath.Rel(abs, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	failed := false
	for _, r := range roles {
		if r.Skipped != "" {
			failed = true
			fmt.Fprintf(a.stdout, "%s: not written: %s\n", termesc.Escape(rel(r.Source)), termesc.Escape(r.Skipped))
			continue
		}
		fmt.Fprintf(a.stdout, "%s → %s\n", termesc.Escape(rel(r.Source)), termesc.Escape(rel(r.Target)))
		for _, part := range []struct {
			what  string
			items []string
		}{{"carried", r.Carried}, {"mapped", r.Mapped}, {"dropped", r.Dropped}} {
			for _, it := range part.items {
				fmt.Fprintf(a.stdout, "  %s: %s\n", part.what, termesc.Escape(it))
			}
		}
	}
	if len(roles) == 0 {
		fmt.Fprintln(a.stdout, "no Claude Code agent files (*.md) found")
	}
	return failed
}
