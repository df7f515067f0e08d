// Package envname is the one rule for the names of the environment
// variables a job file may set: spool holds job files to it, and launch
// exports the variables by it through a remote shell or a Slurm script. It
// is a leaf (the standard library only, no cgo) so that the job shepherd,
// which links no cgo, can use it.
package envname

// Valid reports whether k is a portable environment variable name, one sh
// can assign: ASCII letters, digits and '_', not starting with a digit.
func Valid(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
