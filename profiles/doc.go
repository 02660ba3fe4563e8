// Package profiles discovers and reads the files facets compiles: profile
// directories and legacy profile files in the global and trusted project
// scopes, instructions.md, profile-private and named skills, role
// definitions and role packs, and the MAIN.md hierarchy. It checks only what
// the filesystem can tell (file kinds, sizes, encodings, names); schema
// validation and resolution happen later, in the cue and compiler packages.
package profiles
