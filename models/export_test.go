package models

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

func asExternal(m Model) *external {
	if l, ok := m.(*loaded); ok {
		m = l.Model
	}
	return m.(*external)
}
