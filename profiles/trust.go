package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Trust is the decision whether project scopes may contribute profiles,
// skills, roles and MAIN.md files, and where it came from.
type Trust struct {
	Trusted bool
	Reason  string // "flag", "trust.json", "settings" or "default"
	Path    string // the trust.json entry or settings file that decided, if any
}

// DecideTrust decides project trust the way Pi does in a non-interactive
// run: an explicit flag wins; otherwise the nearest entry for cwd or an
// ancestor in <agentDir>/trust.json; otherwise the defaultProjectTrust
// setting in <agentDir>/settings.json, where "ask" counts as untrusted
// because nobody can answer the prompt.
func DecideTrust(env Env, flag *bool) (Trust, error) {
	if flag != nil {
		return Trust{Trusted: *flag, Reason: "flag"}, nil
	}
	trustFile := filepath.Join(env.AgentDir, "trust.json")
	entries := map[string]*bool{}
	if err := readJSONFile(trustFile, &entries); err != nil {
		return Trust{}, err
	}
	up := Ancestors(canonical(env.Cwd))
	for i := len(up) - 1; i >= 0; i-- {
		if v, ok := entries[up[i]]; ok && v != nil {
			return Trust{Trusted: *v, Reason: "trust.json", Path: up[i]}, nil
		}
	}
	settingsFile := filepath.Join(env.AgentDir, "settings.json")
	var settings struct {
		DefaultProjectTrust string `json:"defaultProjectTrust"`
	}
	if err := readJSONFile(settingsFile, &settings); err != nil {
		return Trust{}, err
	}
	switch settings.DefaultProjectTrust {
	case "always":
		return Trust{Trusted: true, Reason: "settings", Path: settingsFile}, nil
	case "never":
		return Trust{Trusted: false, Reason: "settings", Path: settingsFile}, nil
	}
	return Trust{Trusted: false, Reason: "default"}, nil
}

// readJSONFile decodes a small JSON settings file; a missing file leaves v
// untouched.
func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// canonical resolves symlinks where possible, because Pi keys trust.json by
// canonical directory.
func canonical(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
