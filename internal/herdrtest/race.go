//go:build race

package herdrtest

// raceEnabled: this test binary runs under the race detector.
const raceEnabled = true
