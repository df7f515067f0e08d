package models

import "time"

// ExternalPids returns the process ids of an external model's processes
// that have not been reaped (m as Library.Get returns it).
func ExternalPids(m Model) []int { return asExternal(m).pids() }

// ExternalStarts returns how many processes an external model has started.
func ExternalStarts(m Model) int {
	e := asExternal(m)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.starts
}

// SetExternalTimeout sets an external model's per-request timeout (the
// file's data.timeout) and returns the one it had. Call it only while no
// request of m is in flight: a test gives a model's first request, which
// starts a process, more time than the short timeout it tests.
func SetExternalTimeout(m Model, d time.Duration) (old time.Duration) {
	e := asExternal(m)
	old, e.timeout = e.timeout, d
	return old
}

func asExternal(m Model) *external {
	if l, ok := m.(*loaded); ok {
		m = l.Model
	}
	return m.(*external)
}
