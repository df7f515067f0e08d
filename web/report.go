package web

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"msched/notify"
	"msched/spool"
)

// A reaped job's request is not in the accounting log: its record keeps
// the executable (command[0]), not the command line, workdir or output
// destination. The reaper's report (reports/<JID>.txt, notify.Render)
// shows them on its first lines, "Command:    …", "Workdir:    …", with
// every argument that is not a plain word quoted Go-style, so the page
// reads them back from there: for the job's page and the recent jobs list
// (the command) and for Resubmit. A report goes after
// retention.reports_age; then only the executable is known.

// reportHead is what the page reads of a report's header.
type reportHead struct {
	Command []string
	// Clipped: a field was cut at notify.FieldLimit, so the command or the
	// workdir read is not the job's.
	Clipped     bool
	Workdir     string
	Stdout      string // "Standard output went to X." (the job named a file)
	Coallocated bool   // a Components line: a co-allocated request
}

// reportHeadBytes bounds what is read of a report: its header lines are
// each at most notify.FieldLimit, and a reason at most notify.ReasonLimit;
// the captured output after them is not needed.
const reportHeadBytes = 32 << 10

// errNoReport is a report that is not there (never written, or removed by
// retention), or not a regular file.
var errNoReport = errors.New("no report")

// readReportHead reads the header of reports/<jid>.txt. The file is opened
// without following a symbolic link, as serveFile does.
func readReportHead(sp *spool.Spool, jid string) (reportHead, error) {
	if !spool.ValidJID(jid) {
		return reportHead{}, errNoReport
	}
	f, err := os.OpenFile(filepath.Join(sp.Path(spool.DirReports), jid+".txt"), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
		return reportHead{}, errNoReport
	} else if err != nil {
		return reportHead{}, fmt.Errorf("web: report %s: %w", jid, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return reportHead{}, errNoReport
	}
	b, err := io.ReadAll(io.LimitReader(f, reportHeadBytes))
	if err != nil {
		return reportHead{}, fmt.Errorf("web: report %s: %w", jid, err)
	}
	return parseReportHead(string(b)), nil
}

// parseReportHead reads the "Key:       value" lines notify.Render writes
// (the key and its colon padded to 12 columns) from "Job:" up to the first
// empty line, and the line that says where standard output went.
func parseReportHead(s string) reportHead {
	var h reportHead
	// The reaper writes the mail's To and Subject, one line each, before
	// the body, with an empty line between (daemons.Reaper); the body
	// begins "Job:". Values a user wrote that hold a line break are
	// written Go-quoted (notify's lineTo), so no line is forged; a header
	// naming a key twice is not trusted.
	if strings.HasPrefix(s, "To:") {
		_, s, _ = strings.Cut(s, "\n\n")
	}
	if !strings.HasPrefix(s, "Job:") {
		return reportHead{Clipped: true}
	}
	head, rest, _ := strings.Cut(s, "\n\n")
	seen := map[string]bool{}
	for _, l := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, " ") {
			continue // a continuation line (reason, components)
		}
		v = strings.TrimLeft(v, " ")
		if seen[k] {
			return reportHead{Clipped: true}
		}
		seen[k] = true
		clipped := len(v) >= notify.FieldLimit-len("…") && strings.HasSuffix(v, "…")
		switch k {
		case "Command":
			argv, err := parseArgv(v)
			if err != nil || clipped {
				h.Clipped = true
			}
			h.Command = argv
		case "Workdir":
			if strings.HasPrefix(v, `"`) {
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				} else {
					clipped = true
				}
			}
			h.Workdir = v
			h.Clipped = h.Clipped || clipped
		case "Components":
			h.Coallocated = true
		}
	}
	const went = "Standard output went to "
	if i := strings.Index(rest, went); i >= 0 && (i == 0 || rest[i-1] == '\n') {
		l, _, _ := strings.Cut(rest[i+len(went):], "\n")
		h.Stdout = strings.TrimSuffix(l, ".")
	}
	return h
}

// parseArgv reverses notify's quoteArgv: words separated by single
// spaces, each plain or a Go-quoted string.
func parseArgv(s string) ([]string, error) {
	var argv []string
	for s != "" {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return argv, fmt.Errorf("web: report: command: %w", err)
			}
			a, err := strconv.Unquote(q)
			if err != nil {
				return argv, fmt.Errorf("web: report: command: %w", err)
			}
			argv = append(argv, a)
			s = s[len(q):]
		} else {
			w, _, _ := strings.Cut(s, " ")
			argv = append(argv, w)
			s = s[len(w):]
		}
		if s != "" {
			if s[0] != ' ' {
				return argv, errors.New("web: report: command: words not separated by a space")
			}
			s = s[1:]
		}
	}
	return argv, nil
}
