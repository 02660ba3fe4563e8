package compiler

import (
	"slices"

	"github.com/facets-dev/facets/cue"
)

// Names are the profile and role names a Main started under opts sees, in
// name order: the catalog check and compile build (the same discovery,
// scopes and trust), for shell completion.
type Names struct {
	Profiles []string
	Roles    []string
}

// CatalogNames compiles opts (without digests) and returns the names of its
// effective profiles and roles; a profile or role that does not validate
// is not offered.
func CatalogNames(schema *cue.Schema, opts Options) (Names, error) {
	opts.NoDigests = true
	opts.Names = nil
	m, _, err := Compile(schema, opts)
	if err != nil {
		return Names{}, err
	}
	var n Names
	for _, p := range m.Profiles {
		n.Profiles = append(n.Profiles, p.Name)
	}
	for _, r := range m.Roles {
		n.Roles = append(n.Roles, r.Name)
	}
	slices.Sort(n.Profiles)
	n.Roles = slices.Compact(slices.Sorted(slices.Values(n.Roles)))
	return n, nil
}
