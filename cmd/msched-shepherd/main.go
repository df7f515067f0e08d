// Command msched-shepherd is the job shepherd of package launch as a binary
// of its own: the same code as `msched shepherd`, without the rest of
// msched. Every job start execs a shepherd, and this one links only the
// standard library and package launch, so it is a small static binary that
// starts in about a third of the CPU time of the full, dynamically linked
// msched (see launch.Local for how the run daemon finds it). Install it next
// to msched: `go install ./cmd/...`.
package main

import (
	"os"

	"msched/launch"
)

func main() {
	os.Exit(launch.ShepherdMain())
}
