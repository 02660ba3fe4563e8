package compiler

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
)

func TestSourcesOptions(t *testing.T) {
	root := t.TempDir()
	agent, other := filepath.Join(root, "agent"), filepath.Join(root, "other")
	for _, d := range []string{agent, other} {
		mkdir(t, d)
	}
	env := map[string]string{envvar.AgentDir: agent, envvar.RolePacks: "/p1" + string(filepath.ListSeparator) + " ", envvar.BundledRoles: "/bundled"}
	getenv := func(k string) string { return env[k] }
	yes, no := true, false
	for _, tc := range []struct {
		name      string
		s         Sources
		trust     *bool
		agentDir  string
		packs     []string
		bundled   string
		project   bool
		sourceErr string // the flag of a SourceError
	}{
		{name: "defaults", s: Sources{Cwd: root}, agentDir: agent, packs: []string{"/p1"}, bundled: "/bundled"},
		{name: "--trust", s: Sources{Cwd: root, Trust: true}, trust: &yes, agentDir: agent, packs: []string{"/p1"}, bundled: "/bundled"},
		{name: "--no-trust", s: Sources{Cwd: root, NoTrust: true}, trust: &no, agentDir: agent, packs: []string{"/p1"}, bundled: "/bundled"},
		{name: "--project-only is trusted", s: Sources{Cwd: root, ProjectOnly: true}, trust: &yes, agentDir: agent, packs: []string{"/p1"}, bundled: "/bundled", project: true},
		{name: "--agent-dir wins", s: Sources{Cwd: root, AgentDir: other}, agentDir: other, packs: []string{"/p1"}, bundled: "/bundled"},
		{name: "--role-pack after the environment's", s: Sources{Cwd: root, RolePacks: []string{"/p2"}, BundledRoles: "/b2"}, agentDir: agent, packs: []string{"/p1", "/p2"}, bundled: "/b2"},
		{name: "a --cwd that is no directory", s: Sources{Cwd: filepath.Join(root, "nope")}, sourceErr: "--cwd"},
		{name: "an --agent-dir that is no directory", s: Sources{Cwd: root, AgentDir: filepath.Join(root, "nope")}, sourceErr: "--agent-dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := tc.s.Options(getenv, root)
			var se *SourceError
			if tc.sourceErr != "" {
				if !errors.As(err, &se) || se.Flag != tc.sourceErr {
					t.Fatalf("err = %v, want a SourceError for %s", err, tc.sourceErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (opts.TrustFlag == nil) != (tc.trust == nil) || opts.TrustFlag != nil && *opts.TrustFlag != *tc.trust {
				t.Errorf("TrustFlag = %v, want %v", opts.TrustFlag, tc.trust)
			}
			if opts.Env.AgentDir != tc.agentDir || opts.Env.ProjectOnly != tc.project || opts.BundledRoles != tc.bundled || !slices.Equal(opts.RolePacks, tc.packs) {
				t.Errorf("agent dir %q, project-only %v, bundled %q, packs %q; want %q, %v, %q, %q",
					opts.Env.AgentDir, opts.Env.ProjectOnly, opts.BundledRoles, opts.RolePacks, tc.agentDir, tc.project, tc.bundled, tc.packs)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
