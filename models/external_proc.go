package models

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one running model program and msched's end of its pipes. Only the
// goroutine that holds it (out of the pool) talks to it; kill may come from
// anywhere.
type proc struct {
	pid     int
	in      *os.File // write end of the program's stdin
	out     *os.File // read end of the program's stdout
	br      *bufio.Reader
	bw      *bufio.Writer
	stderr  *tailBuffer
	done    chan struct{} // closed once the program has been reaped
	waitErr error         // set before done is closed
	closeIO sync.Once

	cur   map[string]float64 // parameter values the program holds
	hosts string             // the hosts of its last successful hrduse
	// ctxDeadline is set when the armed deadline is the caller's context's,
	// not the model's timeout: when it fires, ctx.Err() may still be nil
	// for an instant (the context's own timer has not run yet).
	ctxDeadline bool
}

// Errors of a request, by what they say about the process.
var (
	errTimeout = errors.New("timed out")
)

// modelError is an "error:" reply: the program is still in step.
type modelError struct{ req, msg string }

func (e *modelError) Error() string { return e.req + ": " + e.msg }

// diedError is a process that closed its end: it exited or was killed.
type diedError struct{ detail string }

func (e *diedError) Error() string { return "model process died: " + e.detail }

// startProc starts argv (path resolved) in dir, in a process group of its
// own so that a kill reaches whatever it started. Its stdin and stdout are
// pipes made here rather than by os/exec, so that both of msched's ends are
// pollable files with deadlines; its stderr is kept for error messages.
func startProc(path string, argv []string, dir string) (*proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	tail := &tailBuffer{}
	cmd := &exec.Cmd{
		Path: path, Args: argv, Dir: dir,
		Stdin: inR, Stdout: outW, Stderr: tail,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		// The group is killed with the program, so its stderr closes;
		// this only bounds Wait if a descendant escaped the group.
		WaitDelay: time.Second,
	}
	err = cmd.Start()
	inR.Close() // the child holds its own copies
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &proc{
		pid: cmd.Process.Pid, in: inW, out: outR, stderr: tail,
		br: bufio.NewReader(outR), bw: bufio.NewWriter(inW),
		done: make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill kills the process group with SIGKILL and closes msched's ends of the
// pipes, which ends any read or write in progress. It does not wait.
func (p *proc) kill() {
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	p.closePipes()
}

// closePipes closes msched's ends of the pipes, once.
func (p *proc) closePipes() {
	p.closeIO.Do(func() {
		p.in.Close()
		p.out.Close()
	})
}

// quit ends the session politely (quit, then end of input) and kills the
// process if it has not exited within grace. It returns once it is reaped.
func (p *proc) quit(grace time.Duration) {
	_ = p.in.SetWriteDeadline(time.Now().Add(grace))
	_, _ = p.bw.WriteString("quit\n")
	_ = p.bw.Flush()
	p.closePipes()
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	// The group may hold children the program left behind: kill it too.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	<-p.done
}

// holdsOther reports whether the process holds a value for a parameter
// that want does not give: it cannot be unset, so the process is unusable.
func (p *proc) holdsOther(want map[string]float64) bool {
	for n := range p.cur {
		if _, ok := want[n]; !ok {
			return true
		}
	}
	return false
}

// request is one prediction: the parameter values and the hrduse words.
type request struct {
	want  map[string]float64
	hosts string
}

// deadline arms the pipes' deadlines for one exchange: timeout from now, or
// ctx's deadline if sooner, or now when ctx is cancelled. The returned stop
// must be called when the exchange ends.
func (p *proc) deadline(ctx context.Context, timeout time.Duration) (stop func() bool) {
	d := time.Now().Add(timeout)
	p.ctxDeadline = false
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d, p.ctxDeadline = cd, true
	}
	_ = p.out.SetReadDeadline(d)
	_ = p.in.SetWriteDeadline(d)
	return context.AfterFunc(ctx, func() {
		_ = p.out.SetReadDeadline(time.Unix(1, 0))
		_ = p.in.SetWriteDeadline(time.Unix(1, 0))
	})
}

// ioError turns a failed read or write into what it says about the process.
func (p *proc) ioError(ctx context.Context, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("request abandoned: %w", ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded) && p.ctxDeadline:
		return fmt.Errorf("request abandoned: %w", context.DeadlineExceeded)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w after %v (process %d killed)", errTimeout, timeout, p.pid)
	case errors.Is(err, errLongLine):
		return fmt.Errorf("protocol: reply %w", err)
	}
	// The program closed its end: give it a moment to be reaped so that
	// the error can say how it ended.
	select {
	case <-p.done:
	case <-time.After(100 * time.Millisecond):
	}
	detail := err.Error()
	if p.exited() && p.waitErr != nil {
		detail = p.waitErr.Error()
	} else if p.exited() {
		detail = "exited"
	}
	if s := p.stderr.String(); s != "" {
		detail += "; stderr: " + s
	}
	return &diedError{detail: detail}
}

// list asks for the program's parameters (the handshake at start).
func (p *proc) list(ctx context.Context, timeout time.Duration) ([]Param, error) {
	stop := p.deadline(ctx, timeout)
	defer stop()
	if _, err := p.bw.WriteString("list\n"); err != nil {
		return nil, p.ioError(ctx, timeout, err)
	}
	if err := p.bw.Flush(); err != nil {
		return nil, p.ioError(ctx, timeout, err)
	}
	ps := []Param{}
	for {
		line, err := readLine(p.br)
		if err != nil {
			return nil, p.ioError(ctx, timeout, err)
		}
		if msg, ok := strings.CutPrefix(line, "error:"); ok {
			return nil, &modelError{"list", strings.TrimSpace(msg)}
		}
		if line == "." {
			break
		}
		f := strings.Fields(line)
		if len(f) != 2 || !ValidName(f[0]) {
			return nil, fmt.Errorf("protocol: list: line %q is not \"NAME VALUE\"", line)
		}
		prm := Param{Name: f[0]}
		if f[1] != "-" {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return nil, fmt.Errorf("protocol: list: parameter %s: value %q is not a number", f[0], f[1])
			}
			prm.Value, prm.Set = v, true
		}
		ps = append(ps, prm)
	}
	p.cur = map[string]float64{}
	for _, prm := range ps {
		if prm.Set {
			p.cur[prm.Name] = prm.Value
		}
	}
	return ps, nil
}

// do runs one prediction: the sets that change something, hrduse if the
// hosts changed, eval. All requests are written at once and every reply is
// read, so the process stays in step even when one of them fails; the first
// "error:" reply is the result.
func (p *proc) do(ctx context.Context, timeout time.Duration, r request) (float64, error) {
	type sent struct {
		line  string
		name  string // set: the parameter
		value float64
	}
	var reqs []sent
	for _, n := range slices.Sorted(maps.Keys(r.want)) {
		v := r.want[n]
		if cur, ok := p.cur[n]; ok && cur == v {
			continue
		}
		reqs = append(reqs, sent{line: "set " + n + " " + formatFloat(v), name: n, value: v})
	}
	if r.hosts != p.hosts {
		reqs = append(reqs, sent{line: "hrduse " + r.hosts})
	}
	reqs = append(reqs, sent{line: "eval"})

	stop := p.deadline(ctx, timeout)
	defer stop()
	for _, q := range reqs {
		p.bw.WriteString(q.line)
		p.bw.WriteByte('\n')
	}
	if err := p.bw.Flush(); err != nil {
		return 0, p.ioError(ctx, timeout, err)
	}
	var first error
	var v float64
	for _, q := range reqs {
		line, err := readLine(p.br)
		if err != nil {
			return 0, p.ioError(ctx, timeout, err)
		}
		word, _, _ := strings.Cut(q.line, " ")
		if msg, ok := strings.CutPrefix(line, "error:"); ok {
			if first == nil {
				first = &modelError{q.line, strings.TrimSpace(msg)}
			}
			if word == "hrduse" {
				p.hosts = ""
			}
			continue
		}
		switch word {
		case "set", "hrduse":
			if strings.TrimSpace(line) != "ok" {
				return 0, fmt.Errorf("protocol: %s: reply %q, want \"ok\" or \"error: ...\"", word, line)
			}
			if word == "set" {
				p.cur[q.name] = q.value
			} else {
				p.hosts = r.hosts
			}
		case "eval":
			x, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
			if err != nil {
				return 0, fmt.Errorf("protocol: eval: reply %q is not a number", line)
			}
			v = x
		}
	}
	if first != nil {
		return 0, first
	}
	return v, nil
}

// tailBuffer keeps the last tailMax bytes written to it (a program's
// stderr, for error messages).
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 512

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return oneLine(string(t.b))
}

var _ io.Writer = (*tailBuffer)(nil)
