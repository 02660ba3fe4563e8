// Command facets validates and compiles Pi capability profiles, role
// definitions and MAIN.md policy into a frozen launch manifest, and runs
// Sub Pi sessions from that manifest inside Herdr.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
