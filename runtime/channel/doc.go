// Package channel implements the private file channel between a Main Pi and
// one Sub Pi: a per-run directory with two inboxes, per-direction sequence
// counters and small control files, written durably and read defensively.
//
// The on-disk layout and JSON shapes match the pi-facets reference so that a
// channel written by one implementation can be read by the other; unlike the
// reference, every write is fsynced (file and directory) before it is
// reported as done.
package channel
