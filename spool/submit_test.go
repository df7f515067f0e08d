package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// msched submit records where it ran: submit_dir is added as one line at
// the end when that parses as the same job (the user's text and comments
// kept byte for byte), else by re-encoding the YAML tree; a file that sets
// submit_dir keeps it.
func TestSetSubmitDir(t *testing.T) {
	const dir = "/home/alice/runs"
	for _, c := range []struct {
		name, in, dir string
		want          string // exact output; "" only checked to parse
		wantDir       string
	}{
		{"block mapping with comments", "# my job\nname: x   # the name\ncommand: [\"./a\"]\n", dir,
			"# my job\nname: x   # the name\ncommand: [\"./a\"]\nsubmit_dir: /home/alice/runs\n", dir},
		{"no final newline", "command: [\"./a\"]", dir, "command: [\"./a\"]\nsubmit_dir: /home/alice/runs\n", dir},
		{"sets it itself", "command: [\"./a\"]\nsubmit_dir: /elsewhere\n", dir, "command: [\"./a\"]\nsubmit_dir: /elsewhere\n", "/elsewhere"},
		{"needs quoting", "command: [\"./a\"]\n", "/tmp/a: b #c", "command: [\"./a\"]\nsubmit_dir: '/tmp/a: b #c'\n", "/tmp/a: b #c"},
		{"flow mapping", "{command: [\"./a\"], name: x}\n", dir, "", dir},
		{"document end marker", "command: [\"./a\"]\n...\n", dir, "", dir},
		{"document start marker", "---\n# c\ncommand: [\"./a\"]\n", dir, "---\n# c\ncommand: [\"./a\"]\nsubmit_dir: /home/alice/runs\n", dir},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := SetSubmitDir([]byte(c.in), c.dir)
			if err != nil {
				t.Fatal(err)
			}
			if c.want != "" && string(out) != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", out, c.want)
			}
			j, err := Parse("job.yaml", out)
			if err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if j.SubmitDir != c.wantDir || j.Command[0] != "./a" {
				t.Errorf("parsed: submit_dir %q command %q", j.SubmitDir, j.Command)
			}
		})
	}
	if _, err := SetSubmitDir([]byte("command: [a]\n"), "rel/dir"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative dir: %v", err)
	}
}

// A submission has one name at every instant: init refuses a file with
// more (a hard link may be anyone's file), so a watcher of submitted/, as
// init is, never sees one of Submit's files with two.
func TestSubmit_NeverTwoNames(t *testing.T) {
	s := newSpool(t)
	dir := s.Dir(Submitted)
	stop := make(chan struct{})
	seen := make(chan string, 1)
	go func() {
		defer close(seen)
		for {
			select {
			case <-stop:
				return
			default:
			}
			es, _ := os.ReadDir(dir)
			for _, e := range es {
				fi, err := os.Lstat(filepath.Join(dir, e.Name()))
				if err != nil || e.Name()[0] == '.' {
					continue
				}
				if n := fi.Sys().(*syscall.Stat_t).Nlink; n > 1 {
					seen <- fmt.Sprintf("%s with %d names", e.Name(), n)
					return
				}
			}
		}
	}()
	for i := 0; i < 300; i++ {
		if _, err := s.Submit("job.yaml", []byte(validJob)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if what, ok := <-seen; ok {
		t.Errorf("submitted/ showed %s", what)
	}
}

// A submission tries its name, then NAME-2, NAME-3, … and gives up after
// maxSubmitNames, which anyone could otherwise make a root submitter (the
// web page's resubmit) loop through: nothing is left behind, nothing
// replaced.
func TestSubmit_GivesUpWhenEveryNameIsTaken(t *testing.T) {
	s := newSpool(t)
	dir := s.Dir(Submitted)
	for i := 1; i <= maxSubmitNames; i++ {
		name := "job.yaml"
		if i > 1 {
			name = fmt.Sprintf("job.yaml-%d", i)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("taken"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name, err := s.Submit("job.yaml", []byte(validJob))
	if !errors.Is(err, os.ErrExist) || name != "" {
		t.Fatalf("Submit with every name taken: %q, %v; want os.ErrExist", name, err)
	}
	es, _ := os.ReadDir(dir)
	if len(es) != maxSubmitNames {
		t.Errorf("%d entries in submitted/, want the %d taken names only", len(es), maxSubmitNames)
	}
	for _, e := range es {
		if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(b) != "taken" {
			t.Errorf("%s replaced or left: %q", e.Name(), b)
		}
	}
	// One name free past the first: taken.
	if err := os.Remove(filepath.Join(dir, "job.yaml-500")); err != nil {
		t.Fatal(err)
	}
	if name, err := s.Submit("job.yaml", []byte(validJob)); err != nil || name != "job.yaml-500" {
		t.Errorf("Submit with job.yaml-500 free: %q, %v", name, err)
	}
}

// Files submitted one after another are listed (and so given JIDs by
// init) in the order submitted, whatever their names: each one's mtime
// comes from the fine clock, where the kernel's coarse stamp made two
// submissions in one tick tie, and the tie went to the name.
func TestSubmit_ListedInTheOrderSubmitted(t *testing.T) {
	s := newSpool(t)
	var want []string
	for i := range 40 {
		for _, base := range []string{"z", "a"} {
			name, err := s.Submit(fmt.Sprintf("%s%02d.yaml", base, i), []byte(validJob))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, name)
		}
	}
	es, err := s.List(Submitted)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("listed\n%v\nsubmitted\n%v", got, want)
	}
}
