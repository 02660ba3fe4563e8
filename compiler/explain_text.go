package compiler

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/facets-dev/facets/internal/termesc"
)

// Write prints the explanation as text, or with format "json" as one object.
func (x *Explanation) Write(w io.Writer, format string) error {
	if format == FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(x)
	}
	var b strings.Builder
	// Names, paths and reasons come from files: escape control characters.
	e := termesc.Escape
	fmt.Fprintf(&b, "%s %s: %s\n", x.Kind, e(x.Name), e(x.Decision))
	if !x.Found {
		if len(x.NearMatches) > 0 {
			fmt.Fprintf(&b, "did you mean: %s?\n", e(strings.Join(x.NearMatches, ", ")))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "trust: %s (%s): %s\n", trustWord(x.Trust.Trusted), x.Trust.Reason, e(x.TrustReason))
	b.WriteString("\ndefinitions, nearest first:\n")
	for _, d := range x.Definitions {
		kind := d.Scope
		if d.Form != "" {
			kind += " " + d.Form
		}
		fmt.Fprintf(&b, "  %-10s %s %s\n", d.Status, kind, e(d.Path))
		fmt.Fprintf(&b, "  %-10s %s\n", "", e(d.Reason))
	}
	if p := x.Profile; p != nil {
		b.WriteString("\nskills:\n")
		if len(x.Skills) == 0 {
			b.WriteString("  (none)\n")
		}
		for _, s := range x.Skills {
			line := "  " + fmt.Sprintf("%-8s", s.Origin)
			if s.Ref != "" {
				line += e(s.Ref) + " -> "
			}
			line += e(s.Path)
			if !s.Passed {
				line += " (the same file as an earlier skill; passed once)"
			}
			b.WriteString(line + "\n")
		}
		in := x.Instructions
		fmt.Fprintf(&b, "\ninstructions: %s", e(in.Source))
		if in.Path != "" {
			fmt.Fprintf(&b, " %s sha256 %s", e(in.Path), in.SHA256)
		}
		fmt.Fprintf(&b, "\n%s\n%s\n", x.Visibility, e(x.Workspace))
		if len(x.SubArgv) == 0 && x.SubArgvNote != "" {
			fmt.Fprintf(&b, "\n%s\n", x.SubArgvNote)
		} else {
			fmt.Fprintf(&b, "\nsub argv (%s):\n  pi %s\n", x.SubArgvNote, e(shellJoin(x.SubArgv)))
		}
	}
	if rl := x.Role; rl != nil {
		fmt.Fprintf(&b, "\nrole: %s", rl.Layer)
		if rl.Provider != "" {
			fmt.Fprintf(&b, " from %s", e(rl.Provider))
			if rl.ProviderVersion != "" {
				fmt.Fprintf(&b, "@%s", e(rl.ProviderVersion))
			}
		}
		fmt.Fprintf(&b, ", sha256 %s\n", rl.SHA256)
		b.WriteString(x.Visibility + "\n")
		b.WriteString("roles are launched by pi-herdr-agents, not by facets delegate: no Sub argv\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(x.Diagnostics) > 0 {
		if _, err := io.WriteString(w, "\ndiagnostics:\n"); err != nil {
			return err
		}
		return WriteDiagnostics(w, FormatText, "", x.Diagnostics)
	}
	return nil
}

// shellJoin quotes each argument for a POSIX shell where needed, so the
// printed command can be pasted.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		safe := a != ""
		for _, c := range a {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_@%+=:,./-", c)) {
				safe = false
				break
			}
		}
		if safe {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
