package models_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/models"
)

// FuzzSession serves arbitrary bytes as a session's requests (the server
// side, `msched model serve`). Whatever comes in, Serve must not panic and
// must answer in step: every request before `quit` gets exactly one reply
// (one "error:" line, or `list`'s lines ending ".", or one line), and
// nothing else is written.
func FuzzSession(f *testing.F) {
	lib, err := models.LoadDir(filepath.Join("testdata", "models"), models.DefaultHardware())
	if err != nil {
		f.Fatal(err)
	}
	defer lib.Close()
	for _, s := range []string{
		"list\nset f 0.25\n\neval\nhrduse SunUltra1:hardware/CPU_LOAD=0 SunUltra1:hardware/CPU_LOAD=1\neval\nquit\neval\n",
		"hrduse SunUltra10 generic:0\r\neval\r\nset N 1\nset f x\nset f Inf\nset f\nset f 2\neval\n",
		"hrduse Cray\nhrduse generic:-1\nhrduse\nfrobnicate\nlist extra\nlist",
		"set f 1e-320\nhrduse generic:1e308\neval\n",
		"   \t \n\x00\xff\nquit now\nquit\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := lib.Session(context.Background(), "solver")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Serve(ctx, strings.NewReader(in), &out); err != nil {
			if !strings.Contains(err.Error(), "longer than") {
				t.Fatalf("Serve: %v", err)
			}
			return // a request line over the bound ends the session
		}
		replies := strings.SplitAfter(out.String(), "\n")
		if replies[len(replies)-1] != "" {
			t.Fatalf("output does not end with a newline: %q", out.String())
		}
		replies = replies[:len(replies)-1]
		next := func(req string) string {
			if len(replies) == 0 {
				t.Fatalf("no reply to %q; output:\n%s", req, out.String())
			}
			r := strings.TrimSuffix(replies[0], "\n")
			replies = replies[1:]
			return r
		}
		lines := strings.Split(in, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for _, line := range lines {
			words := strings.Fields(strings.TrimSuffix(line, "\r"))
			if len(words) == 0 {
				continue
			}
			if words[0] == "quit" && len(words) == 1 {
				break
			}
			r := next(line)
			if strings.HasPrefix(r, "error:") || words[0] != "list" || len(words) != 1 {
				continue
			}
			for r != "." {
				if strings.HasPrefix(r, "error:") || len(strings.Fields(r)) != 2 {
					t.Fatalf("list: line %q is not \"NAME VALUE\"", r)
				}
				r = next(line)
			}
		}
		if len(replies) > 0 {
			t.Fatalf("%d replies more than requests: %q", len(replies), replies)
		}
	})
}
