package compiler

import (
	"fmt"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/profiles"
)

// CheckRepository is check --project-only over a whole tree: opts.Env
// must be project-only (profiles.Env.ProjectOnlyEnv). It compiles, without
// digests, as a Main started in opts.Env.Cwd and in every directory below
// it that holds a .pi (profiles.ProjectsBelow) would, so a commit that
// breaks svc/.pi fails a check run at the repository root, and returns
// the diagnostics of all of them once each. no-profiles is reported only
// when none of them found anything. With opts.Names it compiles Cwd only.
func CheckRepository(schema *cue.Schema, opts Options) ([]Diagnostic, error) {
	if !opts.Env.ProjectOnly {
		return nil, fmt.Errorf("check repository %s: the environment is not project-only", opts.Env.Cwd)
	}
	dirs := []string{opts.Env.Cwd}
	if len(opts.Names) == 0 {
		var err error
		if dirs, err = profiles.ProjectsBelow(opts.Env.Cwd); err != nil {
			return nil, err
		}
	}
	opts.NoDigests = true
	type key struct {
		file, code, message string
		line, col           int
	}
	seen := map[key]bool{}
	var out, empty []Diagnostic
	found := false
	for _, dir := range dirs {
		o := opts
		o.Env.Cwd = dir
		_, ds, err := Compile(schema, o)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if d.Code == "no-profiles" {
				if dir == opts.Env.Cwd {
					empty = append(empty, d)
				}
				continue
			}
			k := key{d.File, d.Code, d.Message, d.Line, d.Column}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, d)
		}
		if !hasCode(ds, "no-profiles") {
			found = true
		}
	}
	if !found {
		out = append(out, empty...)
	}
	return SortDiagnostics(out), nil
}

func hasCode(ds []Diagnostic, code string) bool {
	for _, d := range ds {
		if d.Code == code {
			return true
		}
	}
	return false
}
