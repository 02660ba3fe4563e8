package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestOverlay checks that every file kind discovery reads comes from the
// overlay when it holds the path, under the same size cap, and that a
// special file on disk is refused whatever the overlay says.
func TestOverlay(t *testing.T) {
	root := t.TempDir()
	agent := filepath.Join(root, "agent")
	cfg := filepath.Join(agent, "facets/profiles/p/config.json")
	instr := filepath.Join(agent, "facets/profiles/p/instructions.md")
	legacy := filepath.Join(agent, "facets/profiles/l.json")
	mainMD := filepath.Join(agent, "facets/MAIN.md")
	role := filepath.Join(agent, "agents/r.md")
	fifo := filepath.Join(agent, "facets/profiles/f/config.json")
	for p, data := range map[string]string{
		cfg: "disk config", instr: "disk instructions", legacy: "disk legacy", role: "disk role",
	} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Dir(fifo), 0o700)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ov := Overlay{cfg: []byte("buffer config"), instr: []byte("buffer instructions"), legacy: []byte("buffer legacy"),
		mainMD: []byte("buffer main"), role: []byte("buffer role"), fifo: []byte("buffer fifo")}
	env := Env{AgentDir: agent, Cwd: root, Overlay: ov}

	got := map[string]string{}
	for _, sp := range DiscoverProfiles(env, false) {
		for _, e := range sp.Entries {
			got[e.ConfigPath] = string(e.Config)
			if e.Instructions != nil {
				got[e.Instructions.Path] = string(e.Instructions.Content)
			}
			for _, p := range e.Problems {
				got[p.File] = p.Code
			}
		}
	}
	mains, _ := MainFiles(env, false)
	for _, m := range mains {
		got[m.Path] = string(m.Raw)
	}
	roles, _ := DiscoverRoles(RoleSources{AgentDir: agent, Overlay: ov})
	for _, f := range roles.Files {
		got[f.Path] = string(f.Data)
	}
	want := map[string]string{cfg: "buffer config", instr: "buffer instructions", legacy: "buffer legacy",
		mainMD: "buffer main", role: "buffer role", fifo: "not-regular-config"}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}

	// Without the overlay the disk copies are read.
	roles, _ = DiscoverRoles(RoleSources{AgentDir: agent})
	if len(roles.Files) != 1 || string(roles.Files[0].Data) != "disk role" {
		t.Errorf("without overlay: %+v", roles.Files)
	}

	// The size cap applies to an overlay's content too.
	big := Overlay{cfg: []byte(strings.Repeat(" ", MaxConfigBytes+1))}
	for _, sp := range DiscoverProfiles(Env{AgentDir: agent, Cwd: root, Overlay: big}, false) {
		for _, e := range sp.Entries {
			if e.ConfigPath == cfg && (len(e.Problems) != 1 || e.Problems[0].Code != "oversized-config" || e.Config != nil) {
				t.Errorf("oversized overlay: %+v", e.Problems)
			}
		}
	}
}

func TestSkillNames(t *testing.T) {
	root := t.TempDir()
	env := Env{AgentDir: filepath.Join(root, "agent"), Home: filepath.Join(root, "home"), Cwd: filepath.Join(root, "proj")}
	for _, p := range []string{
		"agent/skills/review/SKILL.md", "agent/skills/notes.md", "home/.agents/skills/deploy/SKILL.md",
		"proj/.pi/skills/local/SKILL.md", "agent/skills/empty-dir/README.md",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o700)
		os.WriteFile(filepath.Join(root, p), []byte("x"), 0o600)
	}
	if got, want := SkillNames(env, false), []string{"deploy", "notes", "review"}; !slices.Equal(got, want) {
		t.Errorf("untrusted: %v, want %v", got, want)
	}
	if got, want := SkillNames(env, true), []string{"deploy", "local", "notes", "review"}; !slices.Equal(got, want) {
		t.Errorf("trusted: %v, want %v", got, want)
	}
	// Every name resolves, as a profile's skills entry would.
	for _, n := range SkillNames(env, true) {
		if _, ok := ResolveSkill(n, root, env, true); !ok {
			t.Errorf("%s does not resolve", n)
		}
	}
}

// TestOverlayUnsavedFiles: a buffer for a file not on disk yet is
// discovered where the saved file would be: a legacy profile, a
// config.json in a new profile directory, a role file.
func TestOverlayUnsavedFiles(t *testing.T) {
	root := t.TempDir()
	agent := filepath.Join(root, "agent")
	profilesDir := filepath.Join(agent, "facets/profiles")
	os.MkdirAll(profilesDir, 0o700)
	os.MkdirAll(filepath.Join(agent, "agents"), 0o700)
	legacy := filepath.Join(profilesDir, "new.json")
	config := filepath.Join(profilesDir, "fresh/config.json")
	role := filepath.Join(agent, "agents/new-role.md")
	ov := Overlay{legacy: []byte("legacy"), config: []byte("config"), role: []byte("role"),
		filepath.Join(profilesDir, "fresh/deeper/config.json"): []byte("not a profile"),
		filepath.Join(agent, "agents/sub/x.md"):                []byte("not a role")}
	sp := scanProfiles(profilesDir, Global, ov)
	var got []string
	for _, e := range sp.Entries {
		got = append(got, fmt.Sprintf("%s %s %s %s", e.Name, e.Form, e.ConfigPath, e.Config))
	}
	want := []string{
		fmt.Sprintf("fresh directory %s config", config),
		fmt.Sprintf("new legacy %s legacy", legacy),
	}
	if !slices.Equal(got, want) {
		t.Errorf("profiles: got %q, want %q", got, want)
	}
	roles, _ := DiscoverRoles(RoleSources{AgentDir: agent, Overlay: ov})
	if len(roles.Files) != 1 || roles.Files[0].Path != role || string(roles.Files[0].Data) != "role" {
		t.Errorf("roles: %+v", roles.Files)
	}
	// Without an overlay nothing is there.
	if sp := ScanProfiles(profilesDir, Global); len(sp.Entries) != 0 {
		t.Errorf("without overlay: %+v", sp.Entries)
	}
}
