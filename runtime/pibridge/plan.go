package pibridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
)

// Prompt section keys. They are the keys TypeScript Facets uses, so a
// session patched by either implementation has the same sections and a
// reloaded Main replaces them instead of adding a second copy.
const (
	SectionProfiles    = "facets_profiles"
	SectionProfile     = "facets_profile"
	SectionMain        = "facets_main"
	SectionSubProtocol = "facets_sub_protocol"
)

// catalogLimit caps the facets_profiles section at 16 KiB, so a large
// catalog cannot crowd the Main's prompt; the profiles past it are counted
// in one line.
const catalogLimit = 16 << 10

// SubProtocol is the body of the facets_sub_protocol section.
const SubProtocol = "## Facets Sub protocol\n" +
	"You are an isolated Sub Pi working with a Main Pi. You have not received the Main's conversation and must not read Pi session files. " +
	"Use talk whenever you need information from the Main or need to deliver work. Each talk sends one message to the Main and ends the current turn. " +
	"Remain available after delivery. The Main alone decides whether to respond, request more work, or close this Sub session. Never close the session yourself."

// Plan is everything the extension applies to one Pi process at startup.
// The extension only executes it: register what it lists, put Sections into
// systemPromptOptions.sections, and apply Profile through Pi's API.
type Plan struct {
	Role string `json:"role"` // "main" or "sub"
	// Protocol and Facets are the binary's side of the handshake: its
	// Protocol and build version. A plan without them comes from a binary
	// older than the handshake.
	Protocol int    `json:"protocol,omitempty"`
	Facets   string `json:"facets,omitempty"`
	// Mismatch is set, with Error or Warnings, when the extension's
	// protocol is not the binary's (see MismatchPlan).
	Mismatch string `json:"mismatch,omitempty"`
	// Sections maps prompt section keys to their text; a key with an empty
	// value must be deleted from the prompt.
	Sections map[string]string `json:"sections"`
	Profile  *ActiveProfile    `json:"profile,omitempty"`
	// Commands are the /sub:<profile> commands to register (Main only).
	Commands []Command `json:"commands,omitempty"`
	// Tools are the model-facing tools to register, in this order.
	Tools []Tool `json:"tools,omitempty"`
	// Profiles is the /profiles report.
	Profiles Notice `json:"profiles"`
	// Error blocks every input with "Cannot start agent: <Error>".
	Error string `json:"error,omitempty"`
	// Kickoff and Task (Sub only): the extension replaces an input that is
	// exactly Kickoff, the fixed text herdr typed, by Task from the channel
	// manifest, once per Pi process.
	Kickoff string `json:"kickoff,omitempty"`
	Task    string `json:"task,omitempty"`
	// SelfStart (Sub only): nothing types Kickoff into this Sub (tmux), so
	// the extension submits Task as its first user message itself, once,
	// when Pi starts.
	SelfStart bool `json:"selfStart,omitempty"`
	// Warnings are shown once at startup, one line each (a stale snapshot).
	Warnings []string `json:"warnings,omitempty"`
	// Trusted is the trust decision of a Main's plan (profiles.DecideTrust):
	// the extension passes it to every runtime command as --trust or
	// --no-trust, so the Sub's --approve is the decision this plan used.
	Trusted bool `json:"trusted,omitempty"`
	// Serve asks the extension to start facets serve at startup: always
	// for a Sub; for a Main only when it already has run channels (a
	// restarted session). Otherwise a Main starts it after its first
	// runtime command, so a Pi that never delegates spawns one facets
	// process at startup, not two.
	Serve bool `json:"serve,omitempty"`
}

// PlanRequest is what the extension tells the plan about its Pi: the
// facts Pi knows only when its session starts. The extension starts
// `facets pi-extension plan` as soon as Pi loads it, so the binary starts
// while Pi is still starting, and writes the request on the plan's stdin
// at session_start (protocol 3). Each set field overrides the flag of the
// same name; an empty stdin leaves the flags alone.
type PlanRequest struct {
	Cwd string `json:"cwd,omitempty"` // -C
	// Approve is Pi's --approve (true) or --no-approve (false), an explicit
	// decision: it acts as --trust or --no-trust.
	Approve *bool `json:"approve,omitempty"`
	// PiTrusted is Pi's answer, ctx.isProjectTrusted(). It counts only
	// where Pi really decides (profiles.DecideTrust): Pi says "yes" by
	// default for a project holding nothing Pi itself asks trust for.
	PiTrusted   *bool    `json:"piTrusted,omitempty"`
	RolePacks   []string `json:"rolePacks,omitempty"`   // --role-pack, each
	Profile     string   `json:"profile,omitempty"`     // --profile
	MainSession string   `json:"mainSession,omitempty"` // --main-session
}

// ReadRequest reads a PlanRequest from r up to EOF; ok is false when r
// holds nothing but white space.
func ReadRequest(r io.Reader) (req PlanRequest, ok bool, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxRequestBytes+1))
	if err != nil {
		return req, false, fmt.Errorf("read the plan request: %w", err)
	}
	if len(data) > maxRequestBytes {
		return req, false, fmt.Errorf("read the plan request: more than %d bytes", maxRequestBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return req, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, false, fmt.Errorf("read the plan request: %w", err)
	}
	return req, true, nil
}

// maxRequestBytes bounds the request: a cwd, a session id and some role
// pack paths fit many times over.
const maxRequestBytes = 1 << 20

// HasRuns reports whether the Main session mainSession has run channels
// under the runtime root, i.e. Subs whose deliveries its serve must watch.
func HasRuns(root, mainSession string) bool {
	if mainSession == "" {
		return true // unknown session: be safe and serve
	}
	entries, err := os.ReadDir(filepath.Join(root, channel.Safe(mainSession)))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	// A run channel is a directory; the Main's presence file is not one.
	return slices.ContainsFunc(entries, fs.DirEntry.IsDir)
}

// ActiveProfile is the launch snapshot the extension applies to Pi.
type ActiveProfile struct {
	Name          string `json:"name"`
	Provider      string `json:"provider,omitempty"`
	ModelID       string `json:"modelId,omitempty"`
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
	// ThinkingDefault says ThinkingLevel is not the profile's but Pi's
	// default for the model (DefaultThinking): the level a Sub of the
	// profile starts at. Pi lowering it for a model is then no surprise.
	ThinkingDefault bool `json:"thinkingDefault,omitempty"`
	// Tools is the exact non-MCP active tool set; MCP tools stay as Pi's
	// configuration makes them.
	Tools  []string `json:"tools"`
	Skills []string `json:"skills"`
}

// Command is one /sub:<profile> command; its handler runs
// `facets invoke --profile Profile [--task ARGS]`.
type Command struct {
	Name        string `json:"name"`
	Profile     string `json:"profile"`
	Description string `json:"description"`
}

// Notice is a text for ui.notify with its level.
type Notice struct {
	Text  string `json:"text"`
	Level string `json:"level"` // info or warning
}

// MainPlan builds the plan of a Main Pi from a compiled manifest and its
// diagnostics; profile is the --profile value (empty: none).
func MainPlan(m *manifest.Manifest, ds []diag.Diagnostic, profile string) Plan {
	p := Plan{Role: "main", Sections: map[string]string{
		SectionProfiles: catalog(m.Profiles),
		SectionMain:     mainContext(m.Main),
		SectionProfile:  "",
	}}
	p.Profiles = listing(m.Profiles, ds)
	p.Trusted = m.Trust.Trusted
	if w := untrustedLine(ds); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	p.Tools = MainTools()
	for _, pr := range m.Profiles {
		p.Commands = append(p.Commands, Command{
			Name:        "sub:" + pr.Name,
			Profile:     pr.Name,
			Description: fmt.Sprintf("Manually invoke profile %s; reuse its Sub in this Main session", pr.Name),
		})
	}
	if profile == "" {
		return p
	}
	i := slices.IndexFunc(m.Profiles, func(pr manifest.Profile) bool { return pr.Name == profile })
	if i < 0 {
		p.Error = unknownProfile(profile, m.Profiles, ds)
		return p
	}
	pr := m.Profiles[i]
	ap, err := activeProfile(pr.Name, pr.Launch.Model, pr.Launch.ThinkingLevel, pr.Launch.Tools, pr.Launch.Skills)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	p.Profile = ap
	p.Sections[SectionProfile] = "## Active Facets profile: " + pr.Name + "\n" + pr.Launch.Instructions
	if !slices.Contains(pr.Launch.Tools, "delegate") {
		// The catalog is for choosing a delegate.profile; a Main whose
		// profile has no delegate tool cannot use it.
		p.Sections[SectionProfiles] = ""
	}
	return p
}

// DefaultThinking gives an active profile that sets a model and no
// thinking level the level a Sub of it starts at: level, Pi's default for
// that model (profiles.DefaultThinkingLevel). Pi's own model switch would
// keep the level of the model before instead, which is "off" after a
// model without reasoning.
func (p *Plan) DefaultThinking(level func(model string) string) {
	if ap := p.Profile; ap != nil && ap.ModelID != "" && ap.ThinkingLevel == "" {
		ap.ThinkingLevel, ap.ThinkingDefault = level(ap.Provider+"/"+ap.ModelID), true
	}
}

// untrustedLine is the one line a Main shows when the project's facets
// files were left out because it is not trusted, or "" when none were.
func untrustedLine(ds []diag.Diagnostic) string {
	var dirs []string
	for _, d := range ds {
		if d.Code == diag.CodeUntrustedProject {
			dirs = append(dirs, d.File)
		}
	}
	if len(dirs) == 0 {
		return ""
	}
	return "Facets did not load " + strings.Join(dirs, ", ") + " (profiles, MAIN.md, roles, skills): this project is not trusted. " +
		"To use them, trust it with /trust and restart Pi, add it to trust.json, or start Pi with --approve."
}

// subProfile is the part of a channel manifest's profile snapshot (the
// shape launch.ResolvedProfile writes) a Sub applies.
type subProfile struct {
	Name         string   `json:"name"`
	Tools        []string `json:"tools"`
	Instructions string   `json:"instructions"`
}

// ManualSubGuidance ends the protocol section of a Sub the user invoked
// with /sub:<profile>.
const ManualSubGuidance = "The user invoked this Sub directly through its profile command. Work on the user's request within your profile's purpose and report findings and related follow-ups to the Main with talk; the Main relays them."

// SubPlan builds the plan of a Sub Pi from the raw profile snapshot of its
// channel manifest and the run's origin ("manual" for /sub: runs): exactly
// the profile's non-MCP tools plus talk, the protocol section and the
// profile's instructions.
func SubPlan(rawProfile json.RawMessage, origin string) Plan {
	protocol := SubProtocol
	if origin == manifest.OriginManual {
		protocol += "\n\n" + ManualSubGuidance
	}
	p := Plan{Role: "sub", Sections: map[string]string{SectionSubProtocol: protocol, SectionProfile: ""},
		Tools: SubTools(), Profiles: Notice{Text: "This is a Facets Sub; profiles are chosen by its Main.", Level: "info"}}
	var sp subProfile
	if err := json.Unmarshal(rawProfile, &sp); err != nil || sp.Name == "" {
		p.Error = "Invalid Facets channel manifest: profile snapshot is unreadable."
		return p
	}
	// The Sub's model, thinking level and skills come from its launch argv
	// (--model, --thinking, --no-skills --skill), so the plan leaves them
	// out; the tool set is enforced here as well, because a stray ambient
	// tool would widen what the Sub can do.
	ap, err := activeProfile(sp.Name, "", "", append(sp.Tools, "talk"), nil)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	p.Profile = ap
	if sp.Instructions != "" {
		p.Sections[SectionProfile] = "## Facets profile: " + sp.Name + "\n" + sp.Instructions
	}
	return p
}

func activeProfile(name, model, thinking string, tools, skills []string) (*ActiveProfile, error) {
	ap := &ActiveProfile{Name: name, ThinkingLevel: thinking, Tools: []string{}, Skills: []string{}}
	if model != "" {
		prov, id, ok := strings.Cut(model, "/")
		if !ok || prov == "" || id == "" {
			return nil, fmt.Errorf("Profile '%s' model must use provider/model format.", name)
		}
		ap.Provider, ap.ModelID = prov, id
	}
	if len(tools) == 0 {
		return nil, errors.New("Profile '" + name + "' has no tools.")
	}
	// MCP tools are left to Pi's own configuration, by the launch package's
	// rule, so a Main and its Subs agree.
	for _, t := range tools {
		if !launch.IsMCPTool(t) && !slices.Contains(ap.Tools, t) {
			ap.Tools = append(ap.Tools, t)
		}
	}
	ap.Skills = append(ap.Skills, skills...)
	return ap, nil
}

// catalog renders facets_profiles: the agent-invokable profiles only, cut
// at catalogLimit with a count of what was left out.
func catalog(ps []manifest.Profile) string {
	const head = "## Available Facets delegation profiles\n"
	const foot = "Use the exact profile name as delegate.profile. Project profiles override same-named global profiles."
	var lines []string
	for _, p := range ps {
		if !p.AgentInvokable {
			continue
		}
		line := fmt.Sprintf("- %s [%s, %s", p.Name, p.Scope, p.Launch.SessionPersistence)
		if p.Launch.Workspace == manifest.WorkspaceWorktree {
			// The Main's model should know the Sub's edits come back as a branch.
			line += ", own git worktree"
		}
		line += "]"
		if p.Description != "" {
			line += ": " + p.Description
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return head + "No agent-invokable profiles are configured. Do not call delegate until the user configures one."
	}
	var b strings.Builder
	b.WriteString(head)
	for i, l := range lines {
		if b.Len()+len(l)+1+len(foot) > catalogLimit {
			fmt.Fprintf(&b, "- (%d additional profiles omitted from context)\n", len(lines)-i)
			break
		}
		b.WriteString(l + "\n")
	}
	b.WriteString(foot)
	return b.String()
}

// mainContext renders facets_main from the MAIN.md sections, global to nearest.
func mainContext(ms []manifest.MainSection) string {
	var parts []string
	for _, s := range ms {
		if c := strings.TrimSpace(s.Content); c != "" {
			parts = append(parts, "## Facets Main context: "+s.Path+"\n\n"+c)
		}
	}
	return strings.Join(parts, "\n\n")
}

// listing renders the /profiles report: the profiles, then the errors
// under "Invalid profiles:" (TypeScript Facets' heading) and the warnings
// (no-profiles, misnamed-path, masked, ...) under their own "Warnings:",
// since a warning invalidates nothing.
func listing(ps []manifest.Profile, ds []diag.Diagnostic) Notice {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.Summary())
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		lines = []string{"No Facets profiles configured."}
	}
	n := Notice{Level: "info"}
	var errs, warns []string
	for _, d := range ds {
		if d.Severity == diag.Error {
			errs = append(errs, diagLine(d))
		} else {
			warns = append(warns, diagLine(d))
		}
	}
	for _, group := range []struct {
		heading string
		lines   []string
	}{{"Invalid profiles:", errs}, {"Warnings:", warns}} {
		if len(group.lines) > 0 {
			n.Level = "warning"
			lines = append(append(lines, "", group.heading), group.lines...)
		}
	}
	n.Text = strings.Join(lines, "\n")
	return n
}

func diagLine(d diag.Diagnostic) string {
	switch {
	case d.File == "":
		return d.Message
	case d.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Column, d.Message)
	}
	return d.File + ": " + d.Message
}

// unknownProfile explains why --profile name is not in the catalog. A
// profile that exists but did not compile is invalid, not unknown: its own
// diagnostics come first, so the user sees what to fix.
func unknownProfile(name string, ps []manifest.Profile, ds []diag.Diagnostic) string {
	var own, bad []string
	for _, d := range ds {
		switch {
		case d.Severity != diag.Error:
		case d.Subject == name:
			own = append(own, diagLine(d))
		default:
			bad = append(bad, diagLine(d))
		}
	}
	if len(own) > 0 {
		return fmt.Sprintf("Invalid Facets profile '%s': %s. Fix it (facets check lists every problem) or pick another profile.", name, strings.Join(own, "; "))
	}
	msg := manifest.UnknownProfileMessage(name, ps)
	if len(bad) > 0 {
		msg += " Invalid profiles: " + strings.Join(bad, "; ")
	}
	return msg
}
