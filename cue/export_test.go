package cue

// Compiled reports whether CUE has been compiled for this schema: only a
// document the generated validators cannot decide needs it. It exists for
// tests (this package's and cue_test's), which check that laziness.
func (s *Schema) Compiled() bool { return s.ctx != nil }
