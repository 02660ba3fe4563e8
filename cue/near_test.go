package cue

import (
	"slices"
	"testing"
)

func TestNearMatches(t *testing.T) {
	names := []string{"reviewer", "Reviewer2", "writer", "review", "oracle", "reviewer"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"reviewr", []string{"Reviewer2", "review", "reviewer"}},  // within two edits
		{"REVIEWER", []string{"Reviewer2", "review", "reviewer"}}, // case is ignored
		{"view", []string{"Reviewer2", "review", "reviewer"}},
		{"oracel", []string{"oracle"}}, // a transposition is two edits
		{"zzz", nil},
		{"reviewer", []string{"Reviewer2", "review"}},
	} {
		if got := NearMatches(tc.name, names); !slices.Equal(got, tc.want) {
			t.Errorf("NearMatches(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
