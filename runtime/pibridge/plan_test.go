package pibridge

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/golden"
)

func profile(name, scope, desc string, agent bool, l manifest.Launch) manifest.Profile {
	if l.SessionPersistence == "" {
		l.SessionPersistence = "ephemeral"
	}
	if l.Invocation == "" {
		l.Invocation = "both"
	}
	return manifest.Profile{Name: name, Scope: scope, Description: desc, AgentInvokable: agent, Launch: l}
}

func TestMainPlanWithProfile(t *testing.T) {
	m := &manifest.Manifest{
		Profiles: []manifest.Profile{
			profile("helper", "global", "General helper", true, manifest.Launch{Tools: []string{"read"}}),
			profile("review", "project", "", false, manifest.Launch{Tools: []string{"read"}, Invocation: "manual", SessionPersistence: "persistent"}),
			profile("reviewer", "project", "Reviews", true, manifest.Launch{Model: "anthropic/claude", ThinkingLevel: "high",
				Tools: []string{"read", "mcp__docs__search", "grep", "read", "list_mcp_resources"}, Skills: []string{"/s/a/SKILL.md"},
				Instructions: "Review only.", SessionPersistence: "persistent"}),
		},
		Main: []manifest.MainSection{{Path: "/g/MAIN.md", Content: "global rule\n"}, {Path: "/p/MAIN.md", Content: "  \n"}, {Path: "/p/.pi/facets/MAIN.md", Content: "near rule"}},
	}
	got := MainPlan(m, nil, "reviewer")
	want := Plan{
		Role: "main",
		Sections: map[string]string{
			// reviewer has no delegate tool, so the catalog is left out.
			SectionProfiles: "",
			SectionMain:     "## Facets Main context: /g/MAIN.md\n\nglobal rule\n\n## Facets Main context: /p/.pi/facets/MAIN.md\n\nnear rule",
			SectionProfile:  "## Active Facets profile: reviewer\nReview only.",
		},
		Profile: &ActiveProfile{Name: "reviewer", Provider: "anthropic", ModelID: "claude", ThinkingLevel: "high",
			Tools: []string{"read", "grep"}, Skills: []string{"/s/a/SKILL.md"}},
		Commands: []Command{
			{Name: "sub:helper", Profile: "helper", Description: "Manually invoke profile helper; reuse its Sub in this Main session"},
			{Name: "sub:review", Profile: "review", Description: "Manually invoke profile review; reuse its Sub in this Main session"},
			{Name: "sub:reviewer", Profile: "reviewer", Description: "Manually invoke profile reviewer; reuse its Sub in this Main session"},
		},
		Profiles: Notice{Level: "info", Text: "helper (global, both) — General helper\nreview (project, manual)\nreviewer (project, both) — Reviews"},
		Tools:    MainTools(), // their text: TestToolsGolden
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("MainPlan (-want +got):\n%s", d)
	}
	// A Main that can delegate, with or without a profile, gets the catalog.
	catalog := "## Available Facets delegation profiles\n- helper [global, ephemeral]: General helper\n- reviewer [project, persistent]: Reviews\n" +
		"Use the exact profile name as delegate.profile. Project profiles override same-named global profiles."
	m.Profiles = append(m.Profiles, profile("lead", "global", "Leads", false, manifest.Launch{Tools: []string{"read", "delegate"}, Invocation: "manual"}))
	for _, name := range []string{"lead", ""} {
		if got := MainPlan(m, nil, name).Sections[SectionProfiles]; got != catalog {
			t.Errorf("MainPlan(%q) catalog = %q, want %q", name, got, catalog)
		}
	}
}

func TestMainPlanErrors(t *testing.T) {
	m := &manifest.Manifest{Profiles: []manifest.Profile{
		profile("bad-model", "global", "", true, manifest.Launch{Model: "claude", Tools: []string{"read"}}),
		profile("ok", "global", "", true, manifest.Launch{Tools: []string{"read"}}),
	}}
	ds := []diag.Diagnostic{{Severity: diag.Error, File: "/g/broken/config.json", Message: "tools must be a non-empty string array"}}
	// broken2 did not compile: it is invalid, not unknown, and its own
	// diagnostics come first; warnings and other profiles' errors do not.
	ds2 := append([]diag.Diagnostic{
		{Severity: diag.Warning, File: "/g/x.json", Message: "a warning", Subject: "broken2"},
		{Severity: diag.Error, File: "/g/broken2/config.json", Line: 3, Column: 5, Message: `unknown field "tols"`, Subject: "broken2"},
		{Severity: diag.Error, File: "/g/broken2/instructions.md", Message: "instructions.md is empty", Subject: "broken2"},
	}, ds...)
	for _, tc := range []struct {
		name string
		ds   []diag.Diagnostic
		want string
	}{
		{"nope", ds, "Unknown Facets profile 'nope'. Available: bad-model, ok. Invalid profiles: /g/broken/config.json: tools must be a non-empty string array"},
		{"bad-model", ds, "Profile 'bad-model' model must use provider/model format."},
		{"broken2", ds2, `Invalid Facets profile 'broken2': /g/broken2/config.json:3:5: unknown field "tols"; /g/broken2/instructions.md: instructions.md is empty. Fix it (facets check lists every problem) or pick another profile.`},
	} {
		ds := tc.ds
		p := MainPlan(m, ds, tc.name)
		if p.Error != tc.want || p.Profile != nil {
			t.Errorf("MainPlan(%s).Error = %q (profile %v), want %q", tc.name, p.Error, p.Profile, tc.want)
		}
	}
	p := MainPlan(&manifest.Manifest{}, ds, "")
	if want := "No Facets profiles configured.\n\nInvalid profiles:\n/g/broken/config.json: tools must be a non-empty string array"; p.Profiles.Text != want || p.Profiles.Level != "warning" {
		t.Errorf("/profiles = %+v, want warning %q", p.Profiles, want)
	}
	// Warnings are not invalid profiles: they get their own heading.
	warnings := []diag.Diagnostic{
		{Severity: diag.Warning, Code: "no-profiles", File: "/g/profiles", Message: "no profiles found"},
		{Severity: diag.Warning, Code: "masked", File: "/g/profiles/ok.json", Message: "ok is masked by a nearer definition"},
	}
	if w := MainPlan(m, warnings, "").Profiles; w.Text != "bad-model (global, both)\nok (global, both)\n\nWarnings:\n/g/profiles: no profiles found\n/g/profiles/ok.json: ok is masked by a nearer definition" || w.Level != "warning" {
		t.Errorf("/profiles with warnings only = %q (%s)", w.Text, w.Level)
	}
	if w := MainPlan(m, append(warnings[:1:1], ds...), "").Profiles; w.Text != "bad-model (global, both)\nok (global, both)\n\nInvalid profiles:\n/g/broken/config.json: tools must be a non-empty string array\n\nWarnings:\n/g/profiles: no profiles found" {
		t.Errorf("/profiles with both = %q", w.Text)
	}
	if want := "## Available Facets delegation profiles\nNo agent-invokable profiles are configured. Do not call delegate until the user configures one."; p.Sections[SectionProfiles] != want {
		t.Errorf("empty catalog = %q", p.Sections[SectionProfiles])
	}
	if p.Sections[SectionProfile] != "" || p.Sections[SectionMain] != "" {
		t.Errorf("sections without a profile or MAIN.md must be empty (deleted): %q", p.Sections)
	}
}

func TestCatalogLimit(t *testing.T) {
	var ps []manifest.Profile
	desc := strings.Repeat("d", 900)
	for i := range 40 {
		ps = append(ps, profile(fmt.Sprintf("p%02d", i), "global", desc, true, manifest.Launch{Tools: []string{"read"}}))
	}
	c := catalog(ps)
	if len(c) > catalogLimit+64 {
		t.Errorf("catalog is %d bytes, want about %d at most", len(c), catalogLimit)
	}
	shown := strings.Count(c, "\n- p")
	if want := fmt.Sprintf("- (%d additional profiles omitted from context)", 40-shown); !strings.Contains(c, want) {
		t.Errorf("catalog lacks %q", want)
	}
	if !strings.HasSuffix(c, "Project profiles override same-named global profiles.") {
		t.Errorf("catalog lost its footer")
	}
}

func TestSubPlan(t *testing.T) {
	raw := json.RawMessage(`{"version":1,"name":"worker","tools":["read","mcp__x__y","bash"],"instructions":"Be brief.",
		"source":"global","sourcePath":"/p","resolvedSkills":["/s/SKILL.md"],"resolvedExtensions":[]}`)
	got := SubPlan(raw, "")
	want := Plan{Role: "sub",
		Sections: map[string]string{SectionSubProtocol: SubProtocol, SectionProfile: "## Facets profile: worker\nBe brief."},
		Profile:  &ActiveProfile{Name: "worker", Tools: []string{"read", "bash", "talk"}, Skills: []string{}},
		Tools:    SubTools(),
		Profiles: Notice{Text: "This is a Facets Sub; profiles are chosen by its Main.", Level: "info"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SubPlan (-want +got):\n%s", d)
	}
	if p := SubPlan(raw, "manual"); p.Sections[SectionSubProtocol] != SubProtocol+"\n\n"+ManualSubGuidance {
		t.Errorf("manual Sub protocol = %q", p.Sections[SectionSubProtocol])
	}
	if p := SubPlan(json.RawMessage(`null`), ""); p.Error == "" || p.Profile != nil {
		t.Errorf("SubPlan(null) = %+v, want an error", p)
	}
}

// TestToolsGolden pins every model-facing tool text and schema (they live
// in Go, not in the TypeScript extension) against testdata/tools.json;
// FACETS_UPDATE=1 rewrites it.
func TestToolsGolden(t *testing.T) {
	got, err := json.MarshalIndent(map[string][]Tool{"main": MainTools(), "sub": SubTools()}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "tools.json"), append(got, '\n'))
}

// TestToolFlagsNameParameters: every flag and stdin input of a tool maps a
// parameter its schema declares, so no call argument is silently dropped
// and no flag reads a parameter the model cannot send.
func TestToolFlagsNameParameters(t *testing.T) {
	for _, tl := range append(MainTools(), SubTools()...) {
		used := map[string]bool{}
		for _, f := range tl.Flags {
			used[f.Param] = true
		}
		if tl.Input != "" {
			used[tl.Input] = true
		}
		for p := range used {
			if _, ok := tl.Parameters.Properties[p]; !ok {
				t.Errorf("%s: %q is not a parameter", tl.Name, p)
			}
		}
		for p := range tl.Parameters.Properties {
			if !used[p] {
				t.Errorf("%s: parameter %q reaches no flag or input", tl.Name, p)
			}
		}
		if (len(tl.Command) == 0) == (tl.Serve == "") {
			t.Errorf("%s: want exactly one of command and serve", tl.Name)
		}
	}
}

// TestMainOnlyToolsAreTheMainTools: the compiler's list of tools a Sub
// cannot have is exactly the Main's tools less talk, which a Sub has too.
func TestMainOnlyToolsAreTheMainTools(t *testing.T) {
	var names []string
	for _, tool := range MainTools() {
		names = append(names, tool.Name)
	}
	var want []string
	for _, n := range names {
		if !slices.ContainsFunc(SubTools(), func(s Tool) bool { return s.Name == n }) {
			want = append(want, n)
		}
	}
	if got := manifest.MainOnlyTools(append(names, "read", "talk")); !slices.Equal(got, want) {
		t.Errorf("manifest.MainOnlyTools = %v, want %v", got, want)
	}
}

// A worktree profile is marked in the catalog, so the Main's model knows
// the Sub's edits come back as a branch, not in its checkout.
func TestCatalogMarksWorktreeProfiles(t *testing.T) {
	c := catalog([]manifest.Profile{
		profile("writer", "project", "Edits code", true, manifest.Launch{Tools: []string{"edit"}, SessionPersistence: "ephemeral", Workspace: manifest.WorkspaceWorktree}),
		profile("reader", "global", "Reads", true, manifest.Launch{Tools: []string{"read"}, SessionPersistence: "ephemeral"}),
	})
	for _, want := range []string{"\n- writer [project, ephemeral, own git worktree]: Edits code\n", "\n- reader [global, ephemeral]: Reads\n"} {
		if !strings.Contains(c, want) {
			t.Errorf("catalog lacks %q:\n%s", want, c)
		}
	}
}
