package spool

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
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

// Marshal parses its output back only for a job with a control character
// in some string; the other jobs' YAML is yaml.v3's as it comes. That is
// safe because yaml.v3 chooses a literal block, the style it can fail to
// read back, only for a string with a line break: strings without a
// control character, however YAML-like (indicators, U+2028, U+2029, a BOM,
// invalid UTF-8), read back as they were from every place a string goes.
func TestMarshal_NoControlCharacterNoParseBack(t *testing.T) {
	for _, s := range []string{
		"", " ", "  x ", "#", "a #b", ": ", "a: b", "- x", "? x", "|", ">", "|4-", "'", "\"", "'\"'",
		"{a: [b]}", "&a", "*a", "!x", "%YAML", "@", "`", "~", "null", "yes", "NO", "0x1f", "1e3", "1:20",
		"---", "...", "\u2028", "a\u2029b", "\u2028 ", "\ufeffx", "\u00a0", "\ufffe", "\ue000", "\U0001F600",
		"\xff\xfe", "a\\nb",
	} {
		j, err := Parse("job.yaml", []byte(validJob))
		if err != nil {
			t.Fatal(err)
		}
		j.Name, j.Reason, j.Notify = s, s, s
		j.Command = append(j.Command, s)
		j.Env = map[string]string{"X": s}
		j.Model.Params = map[string]float64{"k" + s: 1}
		j.History = []Event{{State: Queued, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Note: s}}
		if anyString(reflect.ValueOf(j), hasControl) {
			t.Fatalf("%q: counted as a control character", s)
		}
		out, err := j.Marshal()
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if want, _ := yaml.Marshal(j); string(out) != string(want) {
			t.Errorf("%q: not yaml.v3's own output:\n%s", s, out)
		}
		back, err := Parse("job.yaml", out)
		if err != nil {
			t.Fatalf("%q: %v\n%s", s, err, out)
		}
		if !reflect.DeepEqual(back, j) {
			t.Errorf("%q: read back differs:\n%+v\n%+v\n%s", s, back, j, out)
		}
	}
	// A control character anywhere, map keys and nested sections
	// included, sends the job to the path that parses back.
	for i, set := range []func(j *Job){
		func(j *Job) { j.Name = "a\nb" },
		func(j *Job) { j.Command = append(j.Command, "\t") },
		func(j *Job) { j.Env = map[string]string{"X": "\r"} },
		func(j *Job) { j.Model.Params = map[string]float64{"k\u0085": 1} },
		func(j *Job) { j.History = []Event{{State: Queued, Note: "\x1b[2J"}} },
		func(j *Job) { j.Schedule = &Schedule{Why: "\x7f"} },
	} {
		j, err := Parse("job.yaml", []byte(validJob))
		if err != nil {
			t.Fatal(err)
		}
		set(j)
		if !anyString(reflect.ValueOf(j), hasControl) {
			t.Errorf("case %d: control character not found", i)
		}
	}
}
