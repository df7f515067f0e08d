package models

// ValidName reports whether s may name an architecture, a model or a model
// parameter. Names appear verbatim in the evaluator's canonical cache keys
// ("SunUltra1:hardware/CPU_LOAD=0", "C_cpu=1000"), so they are restricted to
// characters that cannot be confused with the key's separators: an ASCII
// letter or underscore, then letters, digits, '_', '-' and '.'.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}
