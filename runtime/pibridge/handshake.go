package pibridge

import (
	"fmt"
	"io"
)

// Protocol is the version of the contract between the facets binary and the
// Pi extension it installs: the plan and serve command lines, the Plan JSON
// and the serve requests and events. It changes whenever one side could
// misread the other. Protocol 1 is every extension from before the
// handshake, which passed no --protocol; protocol 2 passed the whole plan
// request as flags; protocol 3 starts the plan when Pi loads the extension
// and sends the rest of the request on its stdin (PlanRequest); protocol 4
// sends Pi's trust answer and --approve flag instead of a decision, and the
// plan answers with the decision (Plan.Trusted): a protocol-3 extension
// passed Pi's default "yes" as a decision. index.ts
// spells the same number as its PROTOCOL constant (a test keeps them equal).
const Protocol = 4

// protocolBeforeHandshake is what an extension that passes no --protocol speaks.
const protocolBeforeHandshake = 1

// Peer is one side of the startup handshake.
type Peer struct {
	// Protocol is the side's Protocol.
	Protocol int
	// Version is the facets build version: the binary's own, or for the
	// extension the version of the facets that installed it (empty when
	// unknown, as for an extension from before the handshake).
	Version string
	// Path is where the binary lives (the binary only; may be empty).
	Path string
}

// FixCommand is what a user runs to bring the extension in line with the
// binary it calls.
const FixCommand = "facets pi-extension install"

// Mismatch returns the one-line message for an extension and a binary that
// speak different protocols, naming both versions and the fix, or "" when
// they match. The extension's index.ts builds the same text for a binary
// too old to answer the handshake.
func Mismatch(ext, bin Peer) string {
	if ext.Protocol == bin.Protocol {
		return ""
	}
	extV := "installed by facets " + orUnknown(ext.Version)
	if ext.Protocol <= protocolBeforeHandshake && ext.Version == "" {
		extV = "installed before the version handshake"
	}
	binV := "facets " + orUnknown(bin.Version)
	if bin.Path != "" {
		binV += " at " + bin.Path
	}
	return fmt.Sprintf("The facets Pi extension (protocol %d, %s) does not match the facets binary (protocol %d, %s). Run `%s` with the facets you want Pi to use, then restart Pi.",
		ext.Protocol, extV, bin.Protocol, binV, FixCommand)
}

func orUnknown(v string) string {
	if v == "" {
		return "unknown version"
	}
	return v
}

// MismatchPlan is the plan for an extension whose protocol is not this
// binary's. Every extension, old or new, reads the fields it uses: Error
// ends a Pi started with a profile and a Sub (exit 1, and a Sub tells its
// Main); a plain Main gets one warning and nothing else, so Pi runs on
// without Facets. Mismatch carries the message for extensions that know it.
func MismatchPlan(role, profile, msg string) Plan {
	p := Plan{Role: role, Protocol: Protocol, Mismatch: msg,
		Profiles: Notice{Text: msg, Level: "warning"}}
	if role == "sub" || profile != "" {
		p.Error = msg
		return p
	}
	// Empty sections delete what an earlier, matching start of the same
	// session put into the prompt (after a /reload).
	p.Sections = map[string]string{SectionProfiles: "", SectionMain: "", SectionProfile: ""}
	p.Warnings = []string{msg}
	return p
}

// Drain is what facets serve does for an extension of another protocol: it
// reads its requests until Pi closes them and answers none, so the
// extension's bridge stays quiet instead of reporting a dead helper (the
// plan has already said why Facets is off).
func Drain(in io.Reader) error {
	_, err := io.Copy(io.Discard, in)
	return err
}
