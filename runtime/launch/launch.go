// Package launch turns a compiled profile into the exact pi command line,
// tab environment, channel profile snapshot and first prompt of a Sub, in
// the form the Sub side of the Facets extension expects.
package launch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/surface"
)

// RoleSub is the value of envvar.Role, with envvar.Channel, in a Sub Pi's
// environment. The capability token itself never travels here:
// OpenTab adds envvar.TokenFile.
const RoleSub = "sub"

// BuiltinExtensions are loaded into every Sub because --no-extensions turns
// off Pi's built-in codemode, tool search and MCP support too.
var builtinExtensions = []string{"builtin:codemode", "builtin:tool-search", "builtin:mcp"}

// ambientTools are always selectable in a Sub: talk (the protocol tool) and
// the native MCP and discovery helpers, which profiles never narrow.
var ambientTools = []string{"talk", "codemode", "tool_search", "mcp__*", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"}

// Spec is one Sub launch: the profile snapshot plus the facts the Main
// contributes (trust, origin, session to resume) and the Facets bridge.
type Spec struct {
	Profile manifest.Profile
	// Bridge is the absolute path of the Facets Pi extension loaded with -e
	// right after --no-extensions.
	Bridge string
	// HerdrAgentState is Herdr's Pi lifecycle extension
	// (<agentDir>/extensions/herdr-agent-state.ts); empty when not installed.
	HerdrAgentState string
	// Trusted is the Main project's trust: --approve or --no-approve.
	Trusted bool
	// Title is shown in the session name; it is normalized here.
	Title string
	// Manual marks a user-invoked (/sub:) run.
	Manual bool
	// ResumeSessionID is the persistent Pi session to reopen, if any.
	ResumeSessionID string
}

// SubArgv returns a builder of a new Sub's argv (see Spec.Args) for the
// bridge extension and Herdr's lifecycle extension, in the form explain
// takes (compiler.SubArgvFunc), so explain prints what a launch runs.
func SubArgv(bridge, herdrAgentState string) func(p manifest.Profile, trusted bool, title string, manual bool) []string {
	return func(p manifest.Profile, trusted bool, title string, manual bool) []string {
		return Spec{Profile: p, Bridge: bridge, HerdrAgentState: herdrAgentState, Trusted: trusted, Title: title, Manual: manual}.Args()
	}
}

// Args returns pi's arguments in a fixed order, the one TypeScript Facets
// launches a Sub with, so a Sub gets the same Pi from either: bridge, Herdr's
// lifecycle extension, session, trust, name, extensions, tools, model,
// thinking, skills.
func (s Spec) Args() []string {
	l := s.Profile.Launch
	args := []string{"--no-extensions", "-e", s.Bridge}
	if s.HerdrAgentState != "" {
		args = append(args, "-e", s.HerdrAgentState)
	}
	switch {
	case s.ResumeSessionID != "":
		args = append(args, "--session", s.ResumeSessionID)
	case l.SessionPersistence != "persistent":
		args = append(args, "--no-session")
	}
	if s.Trusted {
		args = append(args, "--approve")
	} else {
		args = append(args, "--no-approve")
	}
	args = append(args, "--name", SessionName(s.Title, s.Manual))
	for _, ext := range unique(append(slices.Clone(l.Extensions), builtinExtensions...)) {
		if ext != s.Bridge {
			args = append(args, "-e", ext)
		}
	}
	var tools []string
	for _, t := range l.Tools {
		if !IsMCPTool(t) {
			tools = append(tools, t)
		}
	}
	args = append(args, "--tools", strings.Join(unique(append(tools, ambientTools...)), ","))
	if l.Model != "" {
		args = append(args, "--model", l.Model)
	}
	if l.ThinkingLevel != "" {
		args = append(args, "--thinking", l.ThinkingLevel)
	}
	args = append(args, "--no-skills")
	for _, sk := range l.Skills {
		args = append(args, "--skill", sk)
	}
	return args
}

// Env returns the tab environment Facets sets itself; OpenTab appends
// PI_FACETS_TOKEN_FILE so the token stays off every command line.
func Env(channelDir string) []surface.EnvVar {
	return []surface.EnvVar{{Name: envvar.Role, Value: RoleSub}, {Name: envvar.Channel, Value: channelDir}}
}

// SessionName is the Sub's --name: "[sub] <title>" or, for user-invoked
// runs, "[sub:manual] <title>", with the title normalized as a tab label.
func SessionName(title string, manual bool) string {
	if manual {
		return "[sub:manual] " + surface.NormalizeTitle(title)
	}
	return "[sub] " + surface.NormalizeTitle(title)
}

// IsMCPTool reports whether a tool belongs to Pi's MCP support, which Sub
// launch always enables and profile tool lists never select.
func IsMCPTool(name string) bool {
	switch name {
	case "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource":
		return true
	}
	return strings.HasPrefix(name, "mcp__")
}

// DefaultManualTask is the task of a profile command invoked without text.
const DefaultManualTask = "The user invoked this profile for the current workspace. Perform the task described by your profile; ask Main for any required details."

// KickoffPrompt is the only text herdr types into a new Sub. The task
// itself stays in the channel manifest (a 0600 file), because herdr takes a
// prompt on its command line, where any local user can read it and Linux
// caps an argument at 128 KiB. The Sub's extension replaces this exact text
// with the task, so the task is the Sub's first user message.
const KickoffPrompt = "[Facets] Start the task from this Sub's channel."

// ManualTask wraps a user's /sub: request so the Sub knows it came from the
// user rather than from Main's model; an empty task gets the default.
func ManualTask(profile, task string) string {
	task = strings.TrimSpace(task)
	if task == "" {
		task = DefaultManualTask
	}
	return "[User-invoked profile: " + profile + "]\nThe user explicitly requests this task:\n" + task
}

// resolvedProfile is the channel manifest's "profile" member; its field
// order is the on-disk key order both implementations write.
type resolvedProfile struct {
	Version            int      `json:"version"`
	Name               string   `json:"name"`
	Tools              []string `json:"tools"`
	Invocation         string   `json:"invocation,omitempty"`
	Description        string   `json:"description,omitempty"`
	Model              string   `json:"model,omitempty"`
	ThinkingLevel      string   `json:"thinkingLevel,omitempty"`
	SessionPersistence string   `json:"sessionPersistence,omitempty"`
	Skills             []string `json:"skills,omitempty"`
	Instructions       string   `json:"instructions,omitempty"`
	Source             string   `json:"source"`
	SourcePath         string   `json:"sourcePath"`
	ResolvedSkills     []string `json:"resolvedSkills"`
	ResolvedExtensions []string `json:"resolvedExtensions"`
}

// ResolvedProfile renders p as the profile snapshot the Sub reads from its
// channel manifest.
func ResolvedProfile(p manifest.Profile) (json.RawMessage, error) {
	l := p.Launch
	r := resolvedProfile{
		Version:            1,
		Name:               p.Name,
		Tools:              l.Tools,
		Invocation:         l.Invocation,
		Description:        p.Description,
		Model:              l.Model,
		ThinkingLevel:      l.ThinkingLevel,
		SessionPersistence: l.SessionPersistence,
		Skills:             l.SkillRefs,
		Instructions:       l.Instructions,
		Source:             p.Scope,
		SourcePath:         p.SourcePath,
		ResolvedSkills:     nonNil(l.Skills),
		ResolvedExtensions: nonNil(l.Extensions),
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode profile %s snapshot: %w", p.Name, err)
	}
	return data, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func unique(items []string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		if !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	return out
}
