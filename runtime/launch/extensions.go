package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/facets-dev/facets/internal/pitools"
)

// ToolSource is where the Main's Pi says a tool comes from: the tool's
// sourceInfo.path and sourceInfo.source, passed on unchanged.
type ToolSource struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// ResolveExtensions returns the extensions a Sub must load (-e) to have
// the profile's non-MCP tools, given where each tool comes from in the
// Main: native builtins need nothing, other tools need their extension's
// path. The result is deduplicated absolute paths in tool order, or an
// error naming the tool a separate Pi process cannot load.
func ResolveExtensions(profile string, tools []string, sources map[string]ToolSource) ([]string, error) {
	var out []string
	for _, name := range tools {
		// Native MCP connects asynchronously; its tools need not exist in the Main yet.
		if IsMCPTool(name) {
			continue
		}
		src, ok := sources[name]
		if !ok {
			return nil, fmt.Errorf("Profile '%s' references unavailable tool '%s'.", profile, name)
		}
		path := src.Path
		if src.Source == "builtin" {
			if pitools.IsNative(name) && (path == "builtin:"+name || path == "<builtin:"+name+">") {
				continue
			}
			if !slices.Contains(builtinExtensions, path) {
				return nil, fmt.Errorf("Profile '%s' tool '%s' requires unsupported isolated built-in extension '%s'.", profile, name, path)
			}
			out = append(out, path)
			continue
		}
		if src.Source == "sdk" || path == "" || strings.HasPrefix(path, "<") {
			return nil, fmt.Errorf("Profile '%s' tool '%s' cannot be loaded in an isolated Sub process.", profile, name)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("Profile '%s' tool '%s' extension is missing: %s.", profile, name, path)
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, fmt.Errorf("Profile '%s' tool '%s' has an unsupported extension path: %s.", profile, name, path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("Profile '%s' tool '%s' extension path %s: %w", profile, name, path, err)
		}
		out = append(out, abs)
	}
	return unique(out), nil
}

// ParseToolSource reads one tool's provenance as the CLI receives it:
// NAME=PATH, where a builtin:… or <builtin:…> path marks a built-in, or
// Pi's sourceInfo verbatim as {"name":NAME,"path":PATH,"source":SOURCE}.
func ParseToolSource(v string) (string, ToolSource, error) {
	var t struct {
		Name   string `json:"name"`
		Path   string `json:"path"`
		Source string `json:"source"`
	}
	if strings.HasPrefix(v, "{") {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return "", ToolSource{}, fmt.Errorf("tool source %q: %w", v, err)
		}
		// A second value would be dropped unseen; refuse the argument.
		if _, err := dec.Token(); err != io.EOF {
			return "", ToolSource{}, fmt.Errorf("tool source %q: unexpected data after the JSON object", v)
		}
	} else {
		var ok bool
		if t.Name, t.Path, ok = strings.Cut(v, "="); !ok {
			return "", ToolSource{}, fmt.Errorf("tool source %q: want NAME=PATH or a JSON object", v)
		}
		if strings.HasPrefix(t.Path, "builtin:") || strings.HasPrefix(t.Path, "<builtin:") {
			t.Source = "builtin"
		}
	}
	if t.Name == "" {
		return "", ToolSource{}, fmt.Errorf("tool source %q names no tool", v)
	}
	return t.Name, ToolSource{Path: t.Path, Source: t.Source}, nil
}
