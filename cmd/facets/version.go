package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is the version facets reports: linked (set with -ldflags
// "-X main.version=..."), else the module version from the build info (a
// tag such as v0.2.0, or a pseudo-version for `go install ...@<commit>`),
// else, for a build from a checkout, "devel+" and the VCS revision, with
// "-dirty" when the tree had uncommitted changes; "devel" when nothing is
// known (go run, go test).
func buildVersion(linked string, read func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	info, ok := read()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel+" + rev
}

func newVersionCmd(a *app, v string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the facets version and the Go toolchain that built it",
		Long: `version prints the version facets was built as: a release tag (v0.2.0), a
pseudo-version for go install ...@<commit>, or devel+<revision>[-dirty]
for a build from a checkout. facets --version prints the first line only.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(a.stdout, "facets version %s\n%s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
