// Package bench holds msched's experiments: the settings, runs and reports
// behind `msched bench …`. Each experiment takes a context, fixed seeds and
// an io.Writer, and returns a result struct whose JSON form is the command's
// --json output, so what a benchmark prints can be checked by a test.
package bench
