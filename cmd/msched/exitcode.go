package main

import (
	"errors"
	"fmt"
)

// msched's exit codes (README, "Exit codes"): one per kind of failure, so
// that scripts can tell them apart. A command that waits for a job
// (submit --wait) exits with the job's own status instead.
const (
	exitOK       = 0
	exitError    = 1 // anything else: I/O, a daemon's failure, a bad configuration
	exitUsage    = 2 // wrong flags or arguments
	exitNotFound = 3 // no such job (or spool)
	exitRefused  = 4 // refused: an invalid job file, another user's job, a state that does not allow it
)

// codedError is an error with the exit code msched ends with.
type codedError struct {
	code int
	err  error
	job  bool // code is a job's exit status (submit --wait), not msched's
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withCode gives err the exit code code (nil stays nil).
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

// codef is withCode of a formatted error.
func codef(code int, format string, a ...any) error {
	return withCode(code, fmt.Errorf(format, a...))
}

// jobStatus is the error that makes msched exit with a job's exit status
// code (a job's 2 is no usage error).
func jobStatus(code int, format string, a ...any) error {
	return &codedError{code: code, err: fmt.Errorf(format, a...), job: true}
}

// usageError reports whether err is a wrong flag or argument.
func usageError(err error) bool {
	var c *codedError
	return errors.As(err, &c) && c.code == exitUsage && !c.job
}

// exitCode is the code msched ends with after err: the one err carries,
// else exitError.
func exitCode(err error) int {
	var c *codedError
	if errors.As(err, &c) {
		return c.code
	}
	return exitError
}
