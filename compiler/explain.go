package compiler

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/profiles"
)

// Statuses of one definition in an explanation.
const (
	StatusEffective  = "effective"  // this definition is what a launch uses
	StatusMasked     = "masked"     // a nearer definition replaces it
	StatusInvalid    = "invalid"    // it has errors; it hides broader definitions
	StatusHidden     = "hidden"     // valid, but a nearer invalid or unresolved definition hides it
	StatusUnresolved = "unresolved" // valid, but resolving it (its skills) failed
	StatusIgnored    = "ignored"    // a role file without frontmatter outside a pack
	StatusRejected   = "rejected"   // a pack role refused by the layering rules
)

// Definition is one file that defines the explained name.
type Definition struct {
	Scope       string       `json:"scope"` // global or project; for roles the layer
	Form        string       `json:"form,omitempty"`
	Path        string       `json:"path"`
	Status      string       `json:"status"`
	Reason      string       `json:"reason"`
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
}

// SkillOrigin says where one skill of a profile came from.
type SkillOrigin struct {
	Origin string `json:"origin"`        // private, name or path
	Ref    string `json:"ref,omitempty"` // the skills entry (name or path); empty for private skills
	Path   string `json:"path"`          // the resolved file passed to --skill
	Passed bool   `json:"passed"`        // false when the same file was already passed
}

// InstructionsOrigin says where a profile's instructions came from.
type InstructionsOrigin struct {
	Source string `json:"source"` // instructions.md, inline or none
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Explanation says how a profile or role name was resolved: every
// definition nearest first, which one won and why, the trust decision, and
// for profiles where skills and instructions came from.
type Explanation struct {
	Kind        string         `json:"kind"` // profile or role
	Name        string         `json:"name"`
	Found       bool           `json:"found"`
	Decision    string         `json:"decision"`
	Trust       manifest.Trust `json:"trust"`
	TrustReason string         `json:"trustReason"`
	Definitions []Definition   `json:"definitions"`
	NearMatches []string       `json:"nearMatches,omitempty"`
	// Profile is the effective profile and its launch snapshot.
	Profile      *manifest.Profile   `json:"profile,omitempty"`
	Skills       []SkillOrigin       `json:"skills,omitempty"`
	Instructions *InstructionsOrigin `json:"instructions,omitempty"`
	Visibility   string              `json:"visibility,omitempty"`
	// Workspace says where a Sub of the profile works (shared or worktree).
	Workspace string `json:"workspace,omitempty"`
	// Role is the effective role definition.
	Role        *manifest.Role `json:"role,omitempty"`
	Diagnostics []Diagnostic   `json:"diagnostics"`
	// SubArgv is pi's argv for a new Sub of the effective profile, without
	// "pi", as the SubArgvFunc given to ExplainProfile builds it.
	SubArgv []string `json:"subArgv,omitempty"`
	// SubArgvNote says what the argv assumes.
	SubArgvNote string `json:"subArgvNote,omitempty"`
}

// SubArgvFunc builds pi's argv for a new Sub of p titled title, as delegate
// (or, for a manual profile, invoke) launches it. The runtime supplies it,
// so explain prints the argv the launch really uses without the compiler
// importing the runtime.
type SubArgvFunc func(p manifest.Profile, trusted bool, title string, manual bool) []string

// ExplainProfile compiles opts and explains how the profile name resolved.
// A name nobody defines is not an error: Found is false and NearMatches
// lists similar names. With subArgv set, an effective profile's
// explanation carries its Sub argv.
func ExplainProfile(schema *cue.Schema, opts Options, name string, subArgv SubArgvFunc) (*Explanation, error) {
	x, m, ds, err := newExplanation(schema, opts, "profile", name)
	if err != nil {
		return nil, err
	}
	var entries []profiles.Entry // nearest first
	var all []string
	for _, sp := range profiles.DiscoverProfiles(opts.Env, m.Trust.Trusted) {
		for _, e := range sp.Entries {
			all = append(all, e.Name)
			if e.Name == name {
				entries = append([]profiles.Entry{e}, entries...)
			}
		}
	}
	i := slices.IndexFunc(m.Profiles, func(p manifest.Profile) bool { return p.Name == name })
	if i >= 0 {
		p := m.Profiles[i]
		x.Profile = &p
	}
	for _, p := range m.Profiles {
		all = append(all, p.Name)
	}
	if len(entries) == 0 {
		x.Decision = fmt.Sprintf("no scope defines a profile named '%s'", name)
		if !m.Trust.Trusted {
			x.Decision = fmt.Sprintf("no loaded scope defines a profile named '%s' (untrusted: %s)", name, x.TrustReason)
			// Listing the skipped scopes reads names only, never a file's content.
			for _, sp := range profiles.DiscoverProfiles(opts.Env, true) {
				if sp.Scope != profiles.Project {
					continue
				}
				for _, e := range sp.Entries {
					if e.Name == name {
						x.Decision += fmt.Sprintf("; the untrusted project scope defines it at %s: pass --trust, or trust the project in Pi (/trust)", e.ConfigPath)
						return x, nil
					}
				}
			}
		}
		x.NearMatches = cue.NearMatches(name, all)
		return x, nil
	}
	x.Found = true
	v := validator{schema: schema}
	var blocker string // the nearest definition, when it is not usable
	for k, e := range entries {
		own := "" // a directory profile owns its directory's files too
		if e.Form == profiles.Directory {
			own = e.Dir
		}
		d := Definition{Scope: string(e.Scope), Form: string(e.Form), Path: e.ConfigPath, Diagnostics: fileDiags(ds, e.ConfigPath, own)}
		_, valid := v.validateEntry(e)
		switch {
		case k == 0 && x.Profile != nil:
			d.Status = StatusEffective
			d.Reason = "the only definition"
			if len(entries) > 1 {
				d.Reason = "the nearest scope wins and replaces the whole same-named profile (no field merging)"
			}
			x.Decision = fmt.Sprintf("%s profile at %s", e.Scope, e.ConfigPath)
		case k == 0 && !valid:
			d.Status, d.Reason = StatusInvalid, "has errors; a launch of this name fails instead of falling back to a broader definition"
			blocker = e.ConfigPath
			x.Decision = "no usable definition: the nearest one is invalid"
		case k == 0:
			d.Status, d.Reason = StatusUnresolved, "valid, but resolving it failed (see its diagnostics)"
			blocker = e.ConfigPath
			x.Decision = "no usable definition: the nearest one could not be resolved"
		case blocker != "" && valid:
			d.Status, d.Reason = StatusHidden, "hidden by the unusable nearer definition at "+blocker
		case blocker != "":
			d.Status, d.Reason = StatusInvalid, "has errors, and a nearer definition hides it anyway"
		case valid:
			d.Status, d.Reason = StatusMasked, "masked by the nearer definition at "+entries[0].ConfigPath
		default:
			d.Status, d.Reason = StatusInvalid, "has errors, but the nearer definition at "+entries[0].ConfigPath+" masks it"
		}
		x.Definitions = append(x.Definitions, d)
	}
	if p := x.Profile; p != nil {
		x.Skills = skillOrigins(*p, opts.Env, m.Trust.Trusted)
		x.Instructions = instructionsOrigin(*p)
		if p.AgentInvokable {
			x.Visibility = "invocation both: Main sees it in the facets_profiles catalog and may delegate to it; the user can run /sub:" + name
		} else {
			x.Visibility = "invocation manual: kept out of Main's catalog; only the user can start it with /sub:" + name
		}
		x.Workspace = "workspace shared: a Sub works in the Main's checkout"
		if p.Launch.Workspace == manifest.WorkspaceWorktree {
			x.Workspace = "workspace worktree: each Sub works in its own git worktree of the Main's repository, at its HEAD, on a new branch facets/" + name + "/<run>; close keeps the branch when it has work"
		}
		if mo := manifest.MainOnlyTools(p.Launch.Tools); len(mo) > 0 {
			// Only a manual profile gets here (an agent-invokable one with
			// Main-only tools does not compile): it starts a Main, never a Sub.
			x.SubArgvNote = "no Sub argv: tools " + strings.Join(mo, ", ") + " exist only in a Main Pi, so /sub:" + name + " cannot start; pi --profile " + name + " starts a Main with them"
		} else if subArgv != nil {
			manual := !p.AgentInvokable
			x.SubArgv = subArgv(*p, x.Trust.Trusted, name, manual)
			how := "facets delegate --profile " + name + " --title " + name
			if manual {
				how = "/sub:" + name + " (facets invoke)"
			}
			x.SubArgvNote = "as " + how + " launches a new Sub; a Pi Main also loads, with -e, the extensions that own the profile's non-built-in tools, and --name carries the delegate title"
		}
	}
	return x, nil
}

// newExplanation compiles the whole catalog of opts (an explanation looks
// at every definition, not only the named ones) and starts the explanation
// of name: trust and the diagnostics about it. It returns the compile too.
func newExplanation(schema *cue.Schema, opts Options, kind, name string) (*Explanation, *manifest.Manifest, []Diagnostic, error) {
	opts.Names = nil
	m, ds, err := Compile(schema, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	x := &Explanation{Kind: kind, Name: name, Trust: m.Trust, Definitions: []Definition{}, Diagnostics: []Diagnostic{}}
	switch m.Trust.Reason {
	case "flag":
		x.TrustReason = "decided by --trust/--no-trust"
	case "pi":
		x.TrustReason = "Pi's own decision for this project (it holds .pi settings or resources Pi asks trust for)"
	case "trust.json":
		x.TrustReason = "the nearest entry in trust.json, for " + m.Trust.Path
	case "settings":
		x.TrustReason = "defaultProjectTrust in " + m.Trust.Path
	default:
		x.TrustReason = "no trust.json entry and no defaultProjectTrust setting: untrusted, as Pi decides when nobody can answer its prompt"
	}
	if !m.Trust.Trusted {
		x.TrustReason += "; project scopes were not loaded"
	}
	for _, d := range ds {
		if d.Subject == name {
			x.Diagnostics = append(x.Diagnostics, d)
		}
	}
	return x, m, ds, nil
}

// fileDiags are the diagnostics located in path or under dir.
func fileDiags(ds []Diagnostic, path, dir string) []Diagnostic {
	var out []Diagnostic
	for _, d := range ds {
		if d.File == path || (dir != "" && isUnder(d.File, dir)) {
			out = append(out, d)
		}
	}
	return out
}

func isUnder(p, dir string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../")
}

// skillOrigins lists the skills of p in the order compile resolved them:
// private skills of a directory profile, then each skills entry.
func skillOrigins(p manifest.Profile, env profiles.Env, trusted bool) []SkillOrigin {
	dir := filepath.Dir(p.SourcePath)
	var out []SkillOrigin
	if p.Form == string(profiles.Directory) {
		private, _ := profiles.PrivateSkills(dir, p.Name, nil)
		for _, s := range private {
			out = append(out, SkillOrigin{Origin: "private", Path: s})
		}
	}
	for _, ref := range p.Launch.SkillRefs {
		o := SkillOrigin{Origin: "path", Ref: ref}
		if profiles.IsNamedSkill(ref) {
			o.Origin = "name"
		}
		o.Path, _ = profiles.ResolveSkill(ref, dir, env, trusted)
		out = append(out, o)
	}
	left := slices.Clone(p.Launch.Skills)
	for i := range out {
		if j := slices.Index(left, out[i].Path); j >= 0 {
			out[i].Passed = true
			left = slices.Delete(left, j, j+1)
		}
	}
	return out
}

func instructionsOrigin(p manifest.Profile) *InstructionsOrigin {
	l := p.Launch
	switch {
	case l.InstructionsSource == "":
		return &InstructionsOrigin{Source: "none"}
	case l.InstructionsSource == p.SourcePath:
		return &InstructionsOrigin{Source: "inline", Path: l.InstructionsSource, SHA256: l.InstructionsSHA256}
	}
	return &InstructionsOrigin{Source: "instructions.md", Path: l.InstructionsSource, SHA256: l.InstructionsSHA256}
}

// roleLayers is the role precedence, nearest first.
var roleLayers = []string{profiles.LayerProject, profiles.LayerGlobal, profiles.LayerPackage, profiles.LayerBundled}

// ExplainRole compiles opts and explains how the role name resolved across
// the bundled, package, global and project layers.
func ExplainRole(schema *cue.Schema, opts Options, name string) (*Explanation, error) {
	x, m, ds, err := newExplanation(schema, opts, "role", name)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(m.Roles, func(r manifest.Role) bool { return r.Name == name }); i >= 0 {
		r := m.Roles[i]
		x.Role = &r
	}
	found, _ := profiles.DiscoverRoles(profiles.RoleSources{BundledDir: opts.BundledRoles, Packs: opts.RolePacks,
		AgentDir: opts.Env.AgentDir, Cwd: opts.Env.Cwd, Trusted: m.Trust.Trusted})
	p := roleParser{schema: schema}
	var defs []roleDef
	var all []string
	for i := range found.Files {
		def, _ := p.parse(&found.Files[i])
		def.file = i
		all = append(all, def.name)
		if def.name == name {
			defs = append(defs, def)
		}
	}
	for _, r := range m.Roles {
		all = append(all, r.Name)
	}
	slices.SortStableFunc(defs, func(a, b roleDef) int {
		return slices.Index(roleLayers, found.Files[a.file].Layer) - slices.Index(roleLayers, found.Files[b.file].Layer)
	})
	if len(defs) == 0 {
		x.Decision = fmt.Sprintf("no layer defines a role named '%s'", name)
		x.NearMatches = cue.NearMatches(name, all)
		return x, nil
	}
	x.Found = true
	if r := x.Role; r != nil && r.DisableModelInvocation {
		x.Visibility = "disable-model-invocation: hidden from role listings, so Main's model does not see it; still launchable by exact name"
	} else if r != nil {
		// facets puts no role catalog in Main's prompt; the role provider
		// (pi-herdr-agents) does, when it is loaded.
		x.Visibility = "not hidden: a role provider such as pi-herdr-agents, when Main loads it, lists it to Main's model (facets adds no role catalog to the prompt)"
	}
	if x.Role != nil {
		x.Decision = fmt.Sprintf("%s role at %s (precedence: project > global > package > bundled)", x.Role.Layer, x.Role.Path)
	} else {
		x.Decision = "no usable definition (see the diagnostics)"
	}
	for _, def := range defs {
		file := &found.Files[def.file]
		d := Definition{Scope: file.Layer, Path: file.Path, Diagnostics: fileDiags(ds, file.Path, "")}
		switch {
		case x.Role != nil && file.Path == x.Role.Path:
			d.Status, d.Reason = StatusEffective, "the nearest usable layer defining the name"
		case def.ignored:
			d.Status, d.Reason = StatusIgnored, "no frontmatter: not a role definition outside a pack"
		case !def.valid:
			d.Status, d.Reason = StatusInvalid, "has errors; outside a pack it removes the name from lower layers"
		case x.Role != nil && slices.Contains(x.Role.Overrides, file.Path):
			d.Status, d.Reason = StatusMasked, "masked by "+x.Role.Path
		case file.Layer == profiles.LayerPackage:
			d.Status, d.Reason = StatusRejected, "refused by the pack rules (see its diagnostics)"
		default:
			d.Status, d.Reason = StatusHidden, "hidden by a nearer invalid definition"
		}
		x.Definitions = append(x.Definitions, d)
	}
	return x, nil
}
