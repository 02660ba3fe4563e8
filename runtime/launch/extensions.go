package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ToolSource is where the Main's Pi says a tool comes from: the tool's
// sourceInfo.path and sourceInfo.source, passed on unchanged.
type ToolSource struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// nativeTools are Pi's own tools; a Sub has them without any extension.
var nativeTools = []string{"read", "bash", "powershell", "edit", "write", "grep", "find", "ls"}

// ResolveExtensions returns the extensions a Sub must load (-e) to have
// the profile's non-MCP tools, given the Main's tool provenance (facets-ts
// §5 "Tool provenance"): deduplicated absolute paths in tool order, or the
// reference's error for a tool a separate Pi process cannot load.
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
			if slices.Contains(nativeTools, name) && (path == "builtin:"+name || path == "<builtin:"+name+">") {
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
