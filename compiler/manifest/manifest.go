// Package manifest is the frozen launch snapshot facets compile writes and
// the runtime launches from: its types and its deterministic encoding. It
// imports no CUE: reading a manifest back, checked against the #Manifest
// schema, is the compiler's (compiler.ReadManifest), so the runtime carries
// the types without the schema evaluator.
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/facets-dev/facets/internal/diag"
)

// Version is the format version of the launch manifest.
const Version = 1

// OriginManual is the origin of a run a user started with a profile
// command (/sub:<name>), in run records and channel manifests.
const OriginManual = "manual"

// ManualMainGuidance is what the Main is told wherever it meets a
// user-invoked specialist (a listing, a delivery): the routing rule of
// manual profiles.
const ManualMainGuidance = "User-invoked specialists were started by the user for a specific purpose. Interpret their findings, make fixes and ask related follow-ups, but do not assign them unrelated tasks or use them in place of general consulting profiles."

// Manifest is the frozen result of a compile: the resolved catalog of
// profiles with their launch snapshots, the role catalog, the MAIN.md
// sections and the digests of every source. It carries everything the
// runtime needs, so later edits to the sources never change a compiled run.
type Manifest struct {
	Version     int               `json:"version"`
	Cwd         string            `json:"cwd"`
	AgentDir    string            `json:"agentDir"`
	Trust       Trust             `json:"trust"`
	Profiles    []Profile         `json:"profiles"`
	Roles       []Role            `json:"roles"`
	Main        []MainSection     `json:"main"`
	Sources     []Source          `json:"sources"`
	Diagnostics []diag.Diagnostic `json:"diagnostics"`
}

// Trust records whether project scopes were loaded and why.
type Trust struct {
	Trusted bool   `json:"trusted"`
	Reason  string `json:"reason"` // flag, pi, trust.json, settings, default
	Path    string `json:"path,omitempty"`
}

// Profile is one effective profile: where it came from and its launch
// snapshot.
type Profile struct {
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	Scope          string   `json:"scope"` // global or project
	Form           string   `json:"form"`  // directory or legacy
	SourcePath     string   `json:"sourcePath"`
	SourceSHA256   string   `json:"sourceSha256"`
	AgentInvokable bool     `json:"agentInvokable"`
	Overrides      []string `json:"overrides,omitempty"` // config paths this profile shadows, broadest first
	Launch         Launch   `json:"launch"`
}

// Summary is the profile's listing line, as /profiles and facets profiles
// print it: "name (scope, invocation)" and " — description" when set.
func (p Profile) Summary() string {
	line := fmt.Sprintf("%s (%s, %s)", p.Name, p.Scope, p.Launch.Invocation)
	if p.Description != "" {
		line += " — " + p.Description
	}
	return line
}

// MainOnlyTools are the tools the Facets Pi extension registers in a Main
// only (runtime/pibridge.MainTools less talk, which a Sub has too): a Sub
// started from a profile that lists one cannot start.
func MainOnlyTools(tools []string) []string {
	var out []string
	for _, t := range tools {
		switch t {
		case "delegate", "list_sub", "close_sub", "interrupt_sub":
			out = append(out, t)
		}
	}
	return out
}

// UnknownProfileMessage is the message for a profile name that is not in
// the catalog ps: the name and every available name, so the user (or the
// model) can pick a valid one without listing profiles first.
func UnknownProfileMessage(name string, ps []Profile) string {
	avail := make([]string, 0, len(ps))
	for _, p := range ps {
		avail = append(avail, p.Name)
	}
	list := strings.Join(avail, ", ")
	if list == "" {
		list = "(none)"
	}
	return fmt.Sprintf("Unknown Facets profile '%s'. Available: %s.", name, list)
}

// Launch is the snapshot a Sub or a startup --profile is launched from.
type Launch struct {
	Model              string   `json:"model,omitempty"`
	ThinkingLevel      string   `json:"thinkingLevel,omitempty"`
	Tools              []string `json:"tools"`
	Skills             []string `json:"skills"` // resolved absolute paths, private skills first
	SkillRefs          []string `json:"skillRefs,omitempty"`
	Extensions         []string `json:"extensions"`
	Instructions       string   `json:"instructions,omitempty"`
	InstructionsSource string   `json:"instructionsSource,omitempty"` // path of instructions.md or config.json
	InstructionsSHA256 string   `json:"instructionsSha256,omitempty"`
	SessionPersistence string   `json:"sessionPersistence"`
	Invocation         string   `json:"invocation"`
	// Workspace is WorkspaceWorktree for a Sub that works in its own git
	// worktree; empty means the Main's checkout ("shared").
	Workspace string `json:"workspace,omitempty"`
}

// WorkspaceWorktree is Launch.Workspace of a profile whose Subs each get a
// git worktree of the Main's repository on a branch of their own.
const WorkspaceWorktree = "worktree"

// Role is one effective role definition from the role catalog.
type Role struct {
	Name                   string   `json:"name"`
	Layer                  string   `json:"layer"` // bundled, package, global, project
	Path                   string   `json:"path"`
	SHA256                 string   `json:"sha256"`
	Provider               string   `json:"provider,omitempty"`
	ProviderVersion        string   `json:"providerVersion,omitempty"`
	Description            string   `json:"description,omitempty"`
	Model                  string   `json:"model,omitempty"`
	Thinking               string   `json:"thinking,omitempty"`
	Tools                  []string `json:"tools,omitempty"`
	DenyTools              []string `json:"denyTools,omitempty"`
	Skills                 []string `json:"skills,omitempty"`
	Spawning               *bool    `json:"spawning,omitempty"`
	AutoExit               *bool    `json:"autoExit,omitempty"`
	Interactive            *bool    `json:"interactive,omitempty"`
	Persistent             *bool    `json:"persistent,omitempty"`
	SystemPrompt           string   `json:"systemPrompt,omitempty"`
	SessionMode            string   `json:"sessionMode,omitempty"`
	Cwd                    string   `json:"cwd,omitempty"`
	DisableModelInvocation bool     `json:"disableModelInvocation,omitempty"`
	Body                   string   `json:"body,omitempty"`
	Overrides              []string `json:"overrides,omitempty"`
}

// MainSection is one non-empty MAIN.md file, in global-to-nearest order.
type MainSection struct {
	Path    string `json:"path"`
	Scope   string `json:"scope"`
	SHA256  string `json:"sha256"`
	Content string `json:"content"`
}

// Source is the digest of one file read during the compile.
type Source struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Digest returns the lowercase hex sha256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Encode renders the manifest as deterministic JSON: struct fields in
// declaration order, sorted slices, no HTML escaping, two-space indent and a
// trailing newline.
func (m *Manifest) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// MaxBytes caps a manifest read back from disk: far above what the
// profile, role and MAIN.md limits allow in practice.
const MaxBytes = 256 << 20
