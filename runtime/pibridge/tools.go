package pibridge

// Tool is one model-facing tool of the plan. Its name, description and
// parameter schema are what the model sees; the rest tells the extension,
// without any tool-specific code, how a call becomes a facets command.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the call's arguments (an object).
	Parameters Schema `json:"parameters"`
	// Command is the facets command a call runs; the extension appends
	// --format json and --main-session. Empty for a tool Serve answers.
	Command []string `json:"command,omitempty"`
	// Launch adds the Main's launch facts (bridge, cwd, trust, role packs,
	// tool sources) right after Command.
	Launch bool `json:"launch,omitempty"`
	// Flags maps parameters to command-line flags, in order. A missing,
	// false or empty value is left out; true is a bare flag.
	Flags []Flag `json:"flags,omitempty"`
	// Input names the parameter written to the command's stdin, so a long
	// message never travels on a command line.
	Input string `json:"input,omitempty"`
	// Serve names the facets serve request a call becomes instead of a
	// command ("send": the Sub's talk); the parameter Input is its text.
	Serve string `json:"serve,omitempty"`
	// Closes marks a command that closes the run its answer names
	// (runId); the extension passes that on to facets serve, whose watcher
	// then takes the channel's removal as the end of the run.
	Closes bool `json:"closes,omitempty"`

	Exposure      string `json:"exposure,omitempty"`      // Pi's ToolExposure; empty is Pi's default
	ExecutionMode string `json:"executionMode,omitempty"` // Pi's per-tool execution mode
	// Terminate ends the model's turn after the call.
	Terminate bool `json:"terminate,omitempty"`
}

// Flag maps one parameter to a flag.
type Flag struct {
	Param string `json:"param"`
	Flag  string `json:"flag"`
}

// Schema is the subset of JSON Schema the tools use.
type Schema struct {
	Type        string            `json:"type"`
	Description string            `json:"description,omitempty"`
	Properties  map[string]Schema `json:"properties,omitempty"`
	Required    []string          `json:"required,omitempty"`
}

func object(required []string, props map[string]Schema) Schema {
	return Schema{Type: "object", Properties: props, Required: required}
}

func str(desc string) Schema { return Schema{Type: "string", Description: desc} }

// SubTalkQueued is the result text of the Sub's talk tool.
const SubTalkQueued = "Message queued for the Main Pi."

// MainTools are the tools of a Main Pi; --profile narrows them to the
// profile's tools like any other.
func MainTools() []Tool {
	return []Tool{
		{
			Name:        "delegate",
			Description: "Launch a fresh agent-invokable Sub Pi with a Facets profile, or resume a persistent one by session ID.",
			Parameters: object([]string{"title", "task", "profile"}, map[string]Schema{
				"title":           str("Short title for the Sub's tab (at most 48 characters shown)"),
				"task":            str("Self-contained task for the Sub"),
				"profile":         str("Exact profile name from the Facets catalog"),
				"cwd":             str("Working directory for the Sub"),
				"resumeSessionId": str("Persistent Sub session to resume"),
			}),
			Command: []string{"delegate"}, Launch: true,
			Flags: []Flag{{"profile", "--profile"}, {"title", "--title"}, {"task", "--task"}, {"cwd", "--cwd"}, {"resumeSessionId", "--resume"}},
			// Only the model delegates; the user has /sub:<profile>.
			Exposure: "model-only", Terminate: true,
		},
		{
			Name:        "talk",
			Description: "Queue one message to an open Sub.",
			Parameters:  object([]string{"runId", "message"}, map[string]Schema{"runId": str(""), "message": str("")}),
			Command:     []string{"talk"}, Flags: []Flag{{"runId", "--run"}}, Input: "message",
			ExecutionMode: "sequential",
		},
		{
			Name:        "interrupt_sub",
			Description: "Cancel the current turn of a Sub without closing it.",
			Parameters:  object([]string{"runId"}, map[string]Schema{"runId": str("")}),
			Command:     []string{"interrupt"}, Flags: []Flag{{"runId", "--run"}},
		},
		{
			Name:        "close_sub",
			Description: "Stop a Sub's work if needed and close its session.",
			Parameters:  object([]string{"runId"}, map[string]Schema{"runId": str(""), "reason": str("")}),
			Command:     []string{"close"}, Flags: []Flag{{"runId", "--run"}, {"reason", "--reason"}}, Closes: true,
		},
		{
			Name:        "list_sub",
			Description: "List open Subs with their live status (idle ephemeral ones only with all), and resumable Sub sessions with the profile each needs.",
			Parameters: object(nil, map[string]Schema{"all": {Type: "boolean",
				Description: "Also list idle or unknown ephemeral Subs, which are hidden by default but still hold a slot until closed"}}),
			Command: []string{"list"}, Flags: []Flag{{"all", "--all"}},
		},
	}
}

// SubTools are the tools a Sub adds to its profile's: talk to its Main.
func SubTools() []Tool {
	return []Tool{{
		Name:        "talk",
		Description: "Send one message to the Main Pi and end the current turn.",
		Parameters:  object([]string{"message"}, map[string]Schema{"message": str("Message for the Main Pi")}),
		Serve:       "send", Input: "message",
		Exposure: "model-only", ExecutionMode: "sequential", Terminate: true,
	}}
}
