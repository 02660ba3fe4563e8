package subs

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNewerHerdrNoted: a Herdr newer than the newest Facets follows is
// named in the delegate and invoke results (their text and JSON), the only
// output a Pi user sees of a command that succeeded; a modelled Herdr adds
// no note.
func TestNewerHerdrNoted(t *testing.T) {
	const warn = "Herdr 0.9.4 is newer than 0.9.3"
	for _, tc := range []struct {
		name, version, server string
		noted                 bool
	}{
		{name: "modelled", version: "0.9.3"},
		{name: "newer herdr", version: "0.9.4", noted: true},
		{name: "newer server", version: "0.9.3", server: "0.9.4", noted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.control(fakeControl{Version: tc.version, ServerVersion: tc.server})
			d := f.delegate(mainID, "writer", "Write the README")
			inv := f.mustInvoke(mainID, "review", "Review MR 42")
			for _, r := range []struct {
				what string
				d    Delegation
				text string
			}{{"delegate", d, d.Text()}, {"invoke", inv, InvocationText(inv)}} {
				js, err := json.Marshal(r.d)
				if err != nil {
					t.Fatal(err)
				}
				got := strings.Count(r.text, warn) == 1 && strings.Count(string(js), warn) == 1 && len(r.d.Notes) == 1
				if tc.noted && !got {
					t.Errorf("%s: text %q, JSON %s; want one note saying %q", r.what, r.text, js, warn)
				}
				if !tc.noted && (len(r.d.Notes) != 0 || strings.Contains(r.text, "newer")) {
					t.Errorf("%s: text %q, notes %q; want none", r.what, r.text, r.d.Notes)
				}
			}
		})
	}
}
