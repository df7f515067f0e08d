package envname

import "testing"

func TestValid(t *testing.T) {
	for k, want := range map[string]bool{
		"A": true, "a": true, "_": true, "_1": true, "PATH": true, "x_Y9": true,
		"": false, "1X": false, "9": false, "A-B": false, "A.B": false, "A B": false,
		"é": false, "A=B": false, "A$": false, "Aé": false, "A\x00": false,
	} {
		if got := Valid(k); got != want {
			t.Errorf("Valid(%q) = %v, want %v", k, got, want)
		}
	}
}
