package profiles

// This file writes new, valid sources for facets (facets new): a profile in
// either form, a role file in the pi-herdr-agents format, and the JSON
// Schema that scaffolded profiles point their "$schema" at. It never
// overwrites a source, and inside a project it follows no symlink and opens
// no special file: a cloned repository controls every path below it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/internal/safefile"
)

// SchemaFile is the installed JSON Schema's name inside a facets directory
// (<agentDir>/facets or <project>/.pi/facets).
const SchemaFile = "profile.schema.json"

// Target is where a new profile or role goes: one scope's folders.
type Target struct {
	// FacetsDir is <agentDir>/facets or <project>/.pi/facets.
	FacetsDir string
	// AgentsDir is <agentDir>/agents or <project>/.pi/agents.
	AgentsDir string
	// Root is the folder below which no symlink is followed: the project
	// for ProjectTarget; empty for GlobalTarget, whose folders (and any
	// dotfile links in them) are the user's own.
	Root string
}

// GlobalTarget is the user's scope in Pi's agent dir.
func GlobalTarget(agentDir string) Target {
	return Target{FacetsDir: filepath.Join(agentDir, "facets"), AgentsDir: filepath.Join(agentDir, "agents")}
}

// ProjectTarget is the scope of a project directory (the working directory).
func ProjectTarget(dir string) Target {
	return Target{FacetsDir: filepath.Join(dir, ".pi", "facets"), AgentsDir: filepath.Join(dir, ".pi", "agents"), Root: dir}
}

// ErrInvalidName is the error NewProfile and NewRole wrap for a name that
// is not a valid profile or role name (see ValidName).
var ErrInvalidName = errors.New("a name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")

// defaultTools is the read-only tool set of a new profile; edit it.
var defaultTools = []string{"read", "grep", "find", "ls"}

// profileDoc is a new config.json, with "$schema" first for editors.
type profileDoc struct {
	Schema       string   `json:"$schema"`
	Version      int      `json:"version"`
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Invocation   string   `json:"invocation"`
	Tools        []string `json:"tools"`
	Instructions string   `json:"instructions,omitempty"`
}

// NewProfile writes a new profile called name under w.FacetsDir/profiles: a
// directory profile (config.json, instructions.md and an empty skills/
// kept by a .gitkeep, which private-skill discovery skips because it is
// hidden) or, with legacy, a <name>.json file with inline instructions.
// It refuses a name that is invalid or already defined in either form,
// and returns the paths it created.
func NewProfile(w Target, name string, legacy bool) ([]string, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("new profile %q: %w", name, ErrInvalidName)
	}
	dir := filepath.Join(w.FacetsDir, "profiles")
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name+".json")} {
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("new profile %s: %s already exists; not overwriting it", name, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("new profile %s: %w", name, err)
		}
	}
	// Manual until the description is written, so a TODO never reaches
	// Main's delegation catalog (check warns on one that would).
	doc := profileDoc{Version: 1, Name: name, Invocation: "manual", Tools: defaultTools,
		Description: "TODO: what " + name + " is for; then drop \"invocation\": \"manual\" to offer it to Main's model"}
	if legacy {
		doc.Schema = "../" + SchemaFile
		doc.Instructions = "TODO: how the " + name + " profile works and what it reports back."
		p := filepath.Join(dir, name+".json")
		if err := createJSON(w, p, doc); err != nil {
			return nil, err
		}
		return []string{p}, nil
	}
	doc.Schema = "../../" + SchemaFile
	pd := filepath.Join(dir, name)
	cfg := filepath.Join(pd, "config.json")
	instr := filepath.Join(pd, "instructions.md")
	keep := filepath.Join(pd, "skills", ".gitkeep")
	if err := createJSON(w, cfg, doc); err != nil {
		return nil, err
	}
	if err := create(w, instr, []byte("# "+name+"\n\nTODO: how the "+name+" profile works and what it reports back to the Main.\n")); err != nil {
		return nil, err
	}
	if err := create(w, keep, nil); err != nil {
		return nil, err
	}
	return []string{cfg, instr, keep}, nil
}

// NewRole writes a role file <name>.md in w.AgentsDir in the pi-herdr-agents
// format (line-based frontmatter, then the role prompt as the body) and
// returns its path. It refuses an invalid name and an existing file.
func NewRole(w Target, name string) (string, error) {
	if !ValidName(name) {
		return "", fmt.Errorf("new role %q: %w", name, ErrInvalidName)
	}
	p := filepath.Join(w.AgentsDir, name+".md")
	text := strings.Join([]string{
		"---",
		"name: " + name,
		"description: TODO describe what " + name + " does",
		"tools: " + strings.Join(defaultTools, ", "),
		"spawning: false",
		"auto-exit: true",
		"system-prompt: append",
		"---",
		"TODO write the role prompt. Say what " + name + " looks at, what it must not",
		"change, and what it reports back.",
		"",
	}, "\n")
	if err := create(w, p, []byte(text)); err != nil {
		return "", err
	}
	return p, nil
}

// EnsureSchema installs the profile JSON Schema that schema returns (see
// InstallSchema) when nothing is at w.FacetsDir/profile.schema.json yet, so
// a new profile's "$schema" resolves; an existing file, of whatever
// version, is left alone. It returns the path it wrote, or "".
func EnsureSchema(w Target, schema func() ([]byte, error)) (string, error) {
	if _, err := os.Lstat(filepath.Join(w.FacetsDir, SchemaFile)); !errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	b, err := schema()
	if err != nil {
		return "", err
	}
	return InstallSchema(w, b)
}

// InstallSchema writes b, the profile JSON Schema generated from the
// embedded CUE schema, to w.FacetsDir/profile.schema.json, where scaffolded
// profiles point "$schema", replacing an older copy, and returns its path.
// The file is facets' own wherever it goes: a link there is replaced, not
// written through, and a special file is refused unopened.
func InstallSchema(w Target, b []byte) (string, error) {
	root := w.Root
	if root == "" {
		if err := os.MkdirAll(w.FacetsDir, 0o755); err != nil {
			return "", fmt.Errorf("install schema: %w", err)
		}
		root = w.FacetsDir
	}
	p := filepath.Join(w.FacetsDir, SchemaFile)
	if err := safefile.WriteFileIn(root, p, b, 0o644); err != nil {
		return "", fmt.Errorf("install schema: %w", err)
	}
	return p, nil
}

func createJSON(w Target, path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return create(w, path, append(b, '\n'))
}

// create writes a new file, making its directories, and fails if anything
// (a link included) exists at path; inside w.Root no link is followed.
func create(w Target, path string, b []byte) error {
	root := w.Root
	if root == "" {
		// The user's own folders: links in them are followed.
		root = filepath.Dir(path)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return safefile.CreateIn(root, path, b, 0o644)
}
