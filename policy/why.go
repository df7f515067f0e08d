package policy

import "fmt"

// moldableWhy is the Placement.Why of moldable job q placed on n hosts:
// the size and how it was chosen (how, a clause); "" for a rigid job.
func moldableWhy(q *QueuedJob, n int, how string) string {
	if q.Max != 0 && q.Min >= q.Max {
		return ""
	}
	upper := fmt.Sprint(q.Max)
	if q.Max == 0 {
		upper = "any number of"
	}
	return fmt.Sprintf("%d of %d–%s hosts: %s", n, max(q.Min, 1), upper, how)
}

// minimumWhy is how the policies that run a moldable job on its fewest
// hosts explain it.
const minimumWhy = "its minimum; this policy does not size moldable jobs (scojo-p and cirne-berman do)"
