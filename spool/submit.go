package spool

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"
)

// Submit adds a job file to submitted/ atomically (written as a dot-file,
// fsynced, then renamed into place without replacing a file), for `msched
// submit`. The name is made
// unique by a numeric suffix if needed; the chosen name is returned. The
// file is owned by the caller, which init takes for the job's user.
func (s *Spool) Submit(name string, data []byte) (string, error) {
	t, err := s.submit(name, data, -1)
	return t.Name, err
}

// CheckSubmission checks a job file's bytes as init will judge them once
// submitted: at most JobFileLimit bytes (init reads no more of a claim) and
// ParseSubmission (Claim.Job), the one check of what a submission says.
// msched submit calls it on the bytes it is about to write, so that it
// refuses exactly what init would reject.
func (s *Spool) CheckSubmission(name string, data []byte) (*Job, error) {
	if max := s.JobFileLimit(); int64(len(data)) > max {
		return nil, &ParseError{File: name, Problems: []Problem{{Msg: sizeWhy(int64(len(data)), max, false)}}}
	}
	j, err := ParseSubmission(name, data)
	if err != nil {
		return nil, err
	}
	if p := arrayBytesProblem(j, len(data)); p != nil {
		return nil, &ParseError{File: name, Problems: []Problem{*p}}
	}
	return j, nil
}

// SubmitAs is Submit for a file owned by uid: the web page resubmitting a
// user's job as root (init runs a job as its file's owner, so a file root
// wrote would run as root). The dot-file is given to uid before it is
// renamed into submitted/, so the submission never exists as anyone else's.
// Only root may give a file away; for anyone else it is an error unless uid
// is the caller's own.
func (s *Spool) SubmitAs(name string, data []byte, uid int) (string, error) {
	if uid < 0 {
		return "", fmt.Errorf("spool: submit: bad uid %d", uid)
	}
	t, err := s.submit(name, data, uid)
	return t.Name, err
}

// maxSubmitNames is how many names a submission tries (NAME, NAME-2, …)
// before it gives up.
const maxSubmitNames = 1000

func (s *Spool) submit(name string, data []byte, uid int) (Ticket, error) {
	if max := s.JobFileLimit(); int64(len(data)) > max {
		return Ticket{}, fmt.Errorf("spool: submit %s: %d bytes, over the limit of %d bytes (%s) for a job file",
			name, len(data), max, humanBytes(max))
	}
	base := filepath.Base(name)
	if base == "." || base == "/" || base[0] == '.' {
		base = "job" + strings.TrimLeft(base, "./")
	}
	dir := s.Dir(Submitted)
	p, err := NewPendingFile("", dir, base)
	if err != nil {
		return Ticket{}, err
	}
	defer p.Cleanup()
	if uid >= 0 && uid != os.Geteuid() {
		if err := p.Chown(uid, -1); err != nil {
			return Ticket{}, fmt.Errorf("spool: submit as %s: %w", describeUser(uid), err)
		}
	}
	if _, err := p.Write(data); err != nil {
		return Ticket{}, fmt.Errorf("spool: submit: %w", err)
	}
	stampNow(p.File)
	// Mode FilePerm (atomicfile.Perm), fsynced, then renamed without
	// replacing a file: not link(2) and unlink, which would give the file
	// two names in between (init refuses a file with two: a hard link may
	// be anyone's file, readUntrusted).
	final, before, after, err := p.CommitNoReplace(func(try int) (string, error) {
		switch {
		case try == 1:
			return base, nil
		case try > maxSubmitNames:
			// Names anyone can make in submitted/: bounded, so that
			// nobody keeps a root submitter looping.
			return "", fmt.Errorf("%w: %s and %d more names taken in %s", os.ErrExist, base, maxSubmitNames-1, dir)
		}
		return fmt.Sprintf("%s-%d", base, try), nil
	})
	if final == "" {
		return Ticket{}, fmt.Errorf("spool: submit: %w", err)
	}
	// The ticket: the name, and the arrival (ctime) and inode that init's
	// claim will see (it lstats the file before renaming it; the rename
	// just made set the ctime, and nothing else of ours changes it, but
	// init's rename does, if it came before the fstat: ticketOf).
	now, _ := os.Lstat(filepath.Join(dir, final))
	t := ticketOf(final, before, after, now)
	if err != nil {
		return t, fmt.Errorf("spool: submit: %w", err)
	}
	return t, nil
}

// stampNow sets f's times from the fine clock: the kernel stamps a write
// from a coarse one (a tick, some milliseconds), and submitted/ is listed,
// and its files given JIDs, by mtime, then name; so `msched submit b.yaml
// a.yaml` would often give a.yaml the first JID. utimensat(2) on the
// descriptor itself (a NULL path, as futimens(3) does), not x/sys's Futimes,
// which goes through /proc. Best effort: a file system that refuses keeps
// the kernel's stamp, and only the order of a tie is lost.
func stampNow(f *os.File) {
	ts := [2]unix.Timespec{unix.NsecToTimespec(time.Now().UnixNano())}
	ts[1] = ts[0]
	_, _, _ = unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
}

// SetSubmitDir returns the job file data with submit_dir: dir added (where
// `msched submit` ran: relative paths in the job resolve against it), or
// data itself if the file sets submit_dir. The user's text is kept as it is
// (addFields). data must parse (Parse) before and does after.
func SetSubmitDir(data []byte, dir string) ([]byte, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("spool: submit_dir %q is not an absolute path", dir)
	}
	want, err := Parse("job", data)
	if err != nil {
		return nil, err
	}
	if want.SubmitDir != "" {
		return data, nil
	}
	want.SubmitDir = filepath.Clean(dir)
	return addFields(data, want, "submit_dir", []field{{"submit_dir", want.SubmitDir}})
}

// SubmitFields are the fields msched submit's flags add to a job file
// (--after, --afterok, --array).
type SubmitFields struct {
	After, AfterOK []string
	Array          string
}

// AddSubmitFields returns data with the fields of f that are set added,
// the user's text kept as it is (addFields). A file that sets one of them
// itself is an error naming it: a flag does not quietly override a file.
// data must parse (Parse) before and does after.
func AddSubmitFields(data []byte, f SubmitFields) ([]byte, error) {
	want, err := Parse("job", data)
	if err != nil {
		return nil, err
	}
	var fs []field
	clash := func(key string, set bool) error {
		if set {
			return fmt.Errorf("spool: the job file sets %s: itself; give it there or as --%s, not both", key, key)
		}
		return nil
	}
	if len(f.After) > 0 {
		if err := clash("after", len(want.After) > 0); err != nil {
			return nil, err
		}
		want.After = f.After
		fs = append(fs, field{"after", f.After})
	}
	if len(f.AfterOK) > 0 {
		if err := clash("afterok", len(want.AfterOK) > 0); err != nil {
			return nil, err
		}
		want.AfterOK = f.AfterOK
		fs = append(fs, field{"afterok", f.AfterOK})
	}
	if f.Array != "" {
		if err := clash("array", want.Array != ""); err != nil {
			return nil, err
		}
		want.Array = f.Array
		fs = append(fs, field{"array", f.Array})
	}
	if len(fs) == 0 {
		return data, nil
	}
	canonicalDeps(want)
	return addFields(data, want, "--after, --afterok or --array", fs)
}

type field struct {
	key   string
	value any
}

// addFields returns data with fs added at the top level, so that it parses
// as want. The user's text is kept as it is: each field is appended as one
// line at the end (flow style), unless that would not parse as want (a
// flow mapping, an end-of-document marker), in which case the document is
// re-encoded from its YAML tree, which keeps comments but not always the
// layout. what names the fields in errors.
func addFields(data []byte, want *Job, what string, fs []field) ([]byte, error) {
	same := func(out []byte) bool {
		got, err := Parse("job", out)
		return err == nil && reflect.DeepEqual(got, want)
	}
	var text bytes.Buffer
	text.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		text.WriteByte('\n')
	}
	for _, f := range fs {
		var n yaml.Node
		if err := n.Encode(f.value); err != nil {
			return nil, fmt.Errorf("spool: %s: %w", f.key, err)
		}
		if n.Kind == yaml.SequenceNode {
			n.Style = yaml.FlowStyle
		}
		value, err := yaml.Marshal(&n) // quoted as YAML needs it
		if err != nil {
			return nil, fmt.Errorf("spool: %s: %w", f.key, err)
		}
		text.WriteString(f.key + ": ")
		text.Write(value)
	}
	if out := text.Bytes(); same(out) {
		return out, nil
	}

	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("spool: %s: cannot add it to this job file", what)
	}
	doc := root.Content[0]
	for _, f := range fs {
		var n yaml.Node
		if err := n.Encode(f.value); err != nil {
			return nil, fmt.Errorf("spool: %s: %w", f.key, err)
		}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: f.key}, &n)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, fmt.Errorf("spool: %s: %w", what, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("spool: %s: %w", what, err)
	}
	if !same(out.Bytes()) {
		return nil, fmt.Errorf("spool: %s: cannot add it to this job file without changing it; write it into the file yourself", what)
	}
	return out.Bytes(), nil
}
