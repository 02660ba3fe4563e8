// Package herdr runs Facets Sub Pis in Herdr tabs: the runtime's
// surface.Surface on the herdr command line (CLI), and the visibility plugin.
package herdr

import "github.com/facets-dev/facets/runtime/surface"

// The runtime's surface types, under the names this package's API uses.
type (
	Surface    = surface.Surface
	Handle     = surface.Handle
	TabSpec    = surface.TabSpec
	EnvVar     = surface.EnvVar
	AgentSpec  = surface.AgentSpec
	Metadata   = surface.Metadata
	AgentState = surface.AgentState
	Status     = surface.Status
	Existence  = surface.Existence
)

// Agent states and tab existence, as in package surface.
const (
	StatusWorking = surface.StatusWorking
	StatusBlocked = surface.StatusBlocked
	StatusIdle    = surface.StatusIdle
	StatusUnknown = surface.StatusUnknown

	TabUncertain = surface.TabUncertain
	TabPresent   = surface.TabPresent
	TabGone      = surface.TabGone
)

// Errors the runtime acts on, as in package surface.
var (
	ErrTabIDMissing = surface.ErrTabIDMissing
	ErrSecretOnArgv = surface.ErrSecretOnArgv
)
