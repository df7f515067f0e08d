package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msched/spool"
	"msched/web"
)

// status and history print every user's jobs to whoever lists them, root
// included: a name with control characters (YAML's "\e", "\r", "\n") is
// shown Go-quoted, so it cannot drive the reader's terminal or forge rows;
// the same in a reaped job's record. A plain name is printed as it is.
func TestStatusTable_QuotesControlCharacters(t *testing.T) {
	j, err := spool.ParseSubmission("evil.yaml", []byte("name: \"x\\e]2;owned\\a\\e[2K\\rrunning   J000001  backup  root\\n\"\ncommand: [\"true\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	j.JID, j.User = "J000002", "mallory"
	plain := &spool.Job{JID: "J000003", User: "alice", Name: "nightly build", Command: []string{"true"}}
	var b bytes.Buffer
	if err := writeJobTable(&b, []web.JobView{web.ViewJob(spool.Queued, j), web.ViewJob(spool.Queued, plain)}, false); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(&b, web.ViewJob(spool.Queued, j)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\a\r") {
		t.Fatalf("a user's control characters reach the reader's terminal: %q", out)
	}
	if want := `"x\x1b]2;owned\a\x1b[2K\rrunning   J000001  backup  root\n"`; strings.Count(out, want) != 2 {
		t.Errorf("the name is not shown quoted in the table and the record:\n%s", out)
	}
	if !strings.Contains(out, "  nightly build  ") {
		t.Errorf("a plain name is not printed as it is:\n%s", out)
	}
}

// status JID of a reaped job prints its report, which its owner can edit:
// its control characters are shown escaped (line breaks and tabs kept), so
// that a user's escape sequences cannot drive root's terminal.
func TestStatus_ReportControlCharactersShown(t *testing.T) {
	sp := emptySpool(t)
	report := "To: mallory\nSubject: done\n\nname:\tx\x1b]2;owned\a\x1b[2K\rok \u202egnp.exe\xff\n"
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirReports), "J000002.txt"), []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, sp, "status", "J2")
	if code != exitOK {
		t.Fatalf("status J2: %d %q", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\a\r\u202e\xff") {
		t.Fatalf("the report's control characters reach the reader's terminal: %q", out)
	}
	if want := "\n\nname:\tx\\x1b]2;owned\\a\\x1b[2K\\rok \\u202egnp.exe\\xff\n"; !strings.HasSuffix(out, want) {
		t.Errorf("status J2: %q; want it to end %q", out, want)
	}
}

func TestVisibleText(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		"plain\ttext\nnext ✓\n": "plain\ttext\nnext ✓\n",
		"\x1b[31mred\r\n":       `\x1b[31mred\r` + "\n",
		"\x00\x7f\u0085\ufeff":  `\x00\x7f\u0085\ufeff`,
		"bad \xc3 utf-8 \ufffd": `bad \xc3 utf-8 ` + "\ufffd",
	} {
		if got := visibleText(in); got != want {
			t.Errorf("visibleText(%q) = %q; want %q", in, got, want)
		}
	}
}

// A byte that is not UTF-8 (a file name in submitted/ may hold any bytes)
// is quoted too: ranging over it yields U+FFFD, which is printable, while
// the raw byte 0x9b is a terminal's 8-bit CSI.
func TestCell_QuotesInvalidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"job\x9b31m.yaml": `"job\x9b31m.yaml"`,
		"\xff":            `"\xff"`,
		"café.yaml":       "café.yaml",
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %s, want %s", in, got, want)
		}
	}
}
