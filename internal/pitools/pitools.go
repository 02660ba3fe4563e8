// Package pitools names the tools Pi itself provides, which a Sub has
// without loading any extension; the launcher decides with it which tools
// need an extension, and facets lsp offers them as completions.
package pitools

import "slices"

// Native returns Pi's own tool names, in Pi's order.
func Native() []string {
	return []string{"read", "bash", "powershell", "edit", "write", "grep", "find", "ls"}
}

// IsNative reports whether name is one of Pi's own tools.
func IsNative(name string) bool { return slices.Contains(Native(), name) }
