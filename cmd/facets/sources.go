package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
)

// sourceFlags are the flags that say where profiles, roles and MAIN.md
// come from; check, compile and profiles share them.
type sourceFlags struct {
	cwd          string
	agentDir     string
	trust        bool
	noTrust      bool
	rolePacks    []string
	bundledRoles string
	getenv       func(string) string
	home         string
	// projectOnly is check's --project-only (profiles.Env.ProjectOnly).
	projectOnly bool
	// noDigests is set by check, which discards the manifest
	// (compiler.Options.NoDigests).
	noDigests bool
	// diagnosticsOnly is set by check, which reads nothing but the
	// diagnostics (compiler.Options.DiagnosticsOnly).
	diagnosticsOnly bool
}

func (f *sourceFlags) register(a *app, cmd *cobra.Command) {
	f.getenv, f.home = a.getenv, a.home()
	fl := cmd.Flags()
	fl.StringVarP(&f.cwd, "cwd", "C", ".", "working directory the Main Pi starts in; project scopes are its ancestors")
	fl.StringVar(&f.agentDir, "agent-dir", "", "Pi agent dir (default $PI_CODING_AGENT_DIR or ~/.pi/agent)")
	fl.BoolVar(&f.trust, "trust", false, "treat the project as trusted, overriding Pi's trust settings")
	fl.BoolVar(&f.noTrust, "no-trust", false, "treat the project as untrusted, overriding Pi's trust settings")
	fl.StringArrayVar(&f.rolePacks, "role-pack", nil, "absolute path of a registered role pack (.md file or directory); repeatable; adds to $"+envvar.RolePacks)
	fl.StringVar(&f.bundledRoles, "bundled-roles", "", "directory of the host package's bundled roles (default $"+envvar.BundledRoles+")")
	cmd.MarkFlagsMutuallyExclusive("trust", "no-trust")
}

// registerProjectOnly adds check's --project-only, which ignores what the
// other source flags name outside the repository, so it excludes them.
func (f *sourceFlags) registerProjectOnly(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.projectOnly, "project-only", false, "judge the repository alone, as CI and pre-commit do: --cwd and every directory below it that holds a .pi, each with the .pi scopes from the repository root (the nearest .git) down, trusted; no agent dir, home, role packs or bundled roles")
	for _, other := range []string{"no-trust", "agent-dir", "role-pack", "bundled-roles"} {
		cmd.MarkFlagsMutuallyExclusive("project-only", other)
	}
}

// sources is what the flags say of the sources.
func (f *sourceFlags) sources() compiler.Sources {
	return compiler.Sources{Cwd: f.cwd, AgentDir: f.agentDir, Trust: f.trust, NoTrust: f.noTrust,
		RolePacks: f.rolePacks, BundledRoles: f.bundledRoles, ProjectOnly: f.projectOnly}
}

// options turns the flags and environment into compiler options
// (compiler.Sources); a directory that is not one is a usage error.
func (f *sourceFlags) options() (compiler.Options, error) {
	opts, err := f.sources().Options(f.getenv, f.home)
	var se *compiler.SourceError
	if errors.As(err, &se) {
		return opts, usageError{err}
	}
	return opts, err
}

// compile loads the schema and runs the compiler.
func (f *sourceFlags) compile(names []string) (*manifest.Manifest, []compiler.Diagnostic, compiler.Options, error) {
	opts, err := f.options()
	if err != nil {
		return nil, nil, opts, err
	}
	opts.Names = names
	opts.NoDigests = f.noDigests
	opts.DiagnosticsOnly = f.diagnosticsOnly
	defer lazyGC(f.diagnosticsOnly)()
	schema, err := cue.Load()
	if err != nil {
		return nil, nil, opts, err
	}
	if f.projectOnly {
		// The whole repository below --cwd, for check: no manifest.
		ds, err := compiler.CheckRepository(schema, opts)
		return nil, ds, opts, err
	}
	m, ds, err := compiler.Compile(schema, opts)
	return m, ds, opts, err
}

// reportFlags control how diagnostics are printed and judged.
type reportFlags struct {
	format string
	strict bool
	// getenv reads $GITHUB_WORKSPACE for --format github.
	getenv func(string) string
}

func (r *reportFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.format, "format", compiler.FormatText, "diagnostic format: text, json or github")
	cmd.Flags().BoolVar(&r.strict, "strict", false, "treat warnings as errors")
	completeValues(cmd, "format", compiler.FormatText, compiler.FormatJSON, compiler.FormatGitHub)
}

// report applies --strict to ds and prints them to w in --format, relative
// to base; with always set it prints even when there is nothing to say (an
// empty JSON array is still an answer). It returns the judged diagnostics.
func (r *reportFlags) report(w io.Writer, base string, ds []compiler.Diagnostic, always bool) ([]compiler.Diagnostic, error) {
	if r.strict {
		ds = compiler.Strict(ds)
	}
	if len(ds) == 0 && !always {
		return ds, nil
	}
	if r.format == compiler.FormatGitHub {
		base = compiler.GitHubBase(r.getenv(envvar.GitHubWorkspace), base)
	}
	return ds, compiler.WriteDiagnostics(w, r.format, base, ds)
}

// compile checks the flags, compiles the named profiles (all for none) and
// reports the diagnostics on w (see report); failed is true when error
// diagnostics remain after --strict.
func (r *reportFlags) compile(src *sourceFlags, names []string, w io.Writer, always bool) (m *manifest.Manifest, failed bool, err error) {
	if err := r.validate(); err != nil {
		return nil, false, err
	}
	m, ds, opts, err := src.compile(names)
	if err != nil {
		return nil, false, err
	}
	r.getenv = src.getenv
	if ds, err = r.report(w, opts.Env.Cwd, ds, always); err != nil {
		return nil, false, err
	}
	return m, compiler.HasErrors(ds), nil
}

func (r *reportFlags) validate() error {
	switch r.format {
	case compiler.FormatText, compiler.FormatJSON, compiler.FormatGitHub:
		return nil
	}
	return usageError{fmt.Errorf("unknown --format %q (want text, json or github)", r.format)}
}
