package spool

import (
	"reflect"
	"strings"
	"testing"
)

// Strings with control characters that yaml.v3 would write as literal
// blocks it cannot read back (FuzzParse found "\t}\n") are written
// double-quoted, in every field and map, and read back as they were; the
// other values keep yaml.v3's plain style, and a value that looks like a
// placeholder is left alone.
func TestMarshal_ControlCharactersReadBack(t *testing.T) {
	j, err := Parse("job.yaml", []byte(validJob))
	if err != nil {
		t.Fatal(err)
	}
	j.Name = "\t}\n"
	j.Command = append(j.Command, "a\n\tb", "msched-quoted-0000000000000000-0")
	j.Env = map[string]string{"X": "\tx\n\ty\n", "P": "plain"}
	j.Reason = "open /tmp/\t}\n: no such file"
	out, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("job.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(back, j) {
		t.Fatalf("read back differs:\n%+v\n%+v\n%s", back, j, out)
	}
	if !strings.Contains(string(out), "P: plain\n") {
		t.Errorf("a plain value lost its plain style:\n%s", out)
	}
}
