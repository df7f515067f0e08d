package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The "external" kind: a performance model that is a program of its own,
// written in any language, which msched drives through the session protocol
// (protocol.go), as the Warwick MS evaluation library drove PACE models.
//
//	name: amdahl-sh
//	kind: external
//	params: {T1: 8, f: 0, C_com: 0.25}  # defaults over the program's own
//	data:
//	  command: [amdahl-sh.sh]           # argv: never a shell string
//	  timeout: 5s                       # per request; default 5s
//	  processes: 2                      # pool size; default 2
//	  cooldown: 30s                     # after a hang, fail fast this long
//	  order_dependent: false            # default false (order-free)
//
// command is run as argv, without a shell, in the model file's directory.
// Its first word, when it contains a '/', is a path relative to that
// directory; a bare name is a file in that directory if one exists, else a
// program found in $PATH (e.g. [awk, -f, model.awk]). The program is looked
// for when a process is first needed, not at load time, so a models
// directory that lacks it still loads (its predictions fail, and the
// scheduler uses its fallback estimate).
//
// The model keeps up to `processes` long-lived processes, each serving one
// request at a time. A process that dies is replaced, and the request it was
// serving is retried once on a fresh one. A process that does not answer
// within `timeout` is killed (with everything it started: each process leads
// its own process group) and the request fails; for `cooldown` afterwards
// the model fails at once, so that a hung program costs the scheduler one
// timeout and not one per prediction. Close stops every process.
//
// Every request sets the parameters a process holds to the job's values
// (the program's own values from its first `list`, the file's defaults over
// them, the job's over those), sending only the `set`s that change
// something, then `hrduse` if the hosts changed, then `eval`. A process that
// holds a value the request does not give (a parameter without a default
// that an earlier job set) is replaced rather than reused, so a prediction
// never depends on an earlier one.
type external struct {
	name      string
	dir       string   // the model file's directory, absolute
	argv      []string // as written in the file
	defaults  map[string]float64
	timeout   time.Duration
	cooldown  time.Duration
	orderFree bool
	fp        string
	slots     chan struct{} // one token per process that may exist

	mu        sync.Mutex
	idle      []*proc
	procs     map[*proc]struct{} // every process not yet reaped
	closed    bool
	listed    []Param   // the program's parameters, from the first `list`
	failUntil time.Time // after a timeout: fail fast until then
	starts    int       // processes started, for tests and errors
}

// Defaults of the external kind.
const (
	// DefaultExternalTimeout bounds one request: generous for a model that
	// computes a formula, short enough that a hung one does not stall a
	// scheduling decision for long.
	DefaultExternalTimeout = 5 * time.Second
	// DefaultExternalProcesses is the pool size: two processes let one
	// answer while the other starts or is replaced.
	DefaultExternalProcesses = 2
	// DefaultExternalCooldown is how long a model fails fast after a
	// timeout: long enough to cover a GA decision's many predictions.
	DefaultExternalCooldown = 30 * time.Second
	// maxExternalProcesses bounds the pool: each process is a program
	// instance held open for the scheduler's lifetime.
	maxExternalProcesses = 64
)

type externalData struct {
	Command        []string `yaml:"command"`
	Timeout        string   `yaml:"timeout"`
	Processes      int      `yaml:"processes"`
	Cooldown       string   `yaml:"cooldown"`
	OrderDependent bool     `yaml:"order_dependent"`
}

// The kind registers itself in a variable initialiser, as policies do (no
// init function): any program that links this package can load it.
var _ = func() bool { Register("external", newExternal); return true }()

// errClosedModel is returned by an external model after Close.
var errClosedModel = errors.New("model closed")

func newExternal(spec Spec, _ *Hardware) (Model, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("models: %s: model %q: "+format, append([]any{spec.Source, spec.Name}, args...)...)
	}
	if spec.Data.Kind == 0 {
		return nil, fail("kind external needs data: {command: [program, args...]}")
	}
	if err := CheckFields(&spec.Data, "command", "timeout", "processes", "cooldown", "order_dependent"); err != nil {
		return nil, fail("data: %w", err)
	}
	var d externalData
	if err := spec.Data.Decode(&d); err != nil {
		return nil, fail("data: %w", err)
	}
	if len(d.Command) == 0 || d.Command[0] == "" {
		return nil, fail("data.command: empty (want [program, args...])")
	}
	dur := func(field, s string, def time.Duration, zeroOK bool) (time.Duration, error) {
		if s == "" {
			return def, nil
		}
		t, err := time.ParseDuration(s)
		if err != nil || t < 0 || (t == 0 && !zeroOK) {
			return 0, fail("data.%s: %q is not a positive duration like 5s", field, s)
		}
		return t, nil
	}
	m := &external{
		name: spec.Name, argv: slices.Clone(d.Command), defaults: maps.Clone(spec.Params),
		orderFree: !d.OrderDependent, procs: map[*proc]struct{}{},
	}
	var err error
	if m.timeout, err = dur("timeout", d.Timeout, DefaultExternalTimeout, false); err != nil {
		return nil, err
	}
	if m.cooldown, err = dur("cooldown", d.Cooldown, DefaultExternalCooldown, true); err != nil {
		return nil, err
	}
	n := d.Processes
	if n == 0 {
		n = DefaultExternalProcesses
	}
	if n < 1 || n > maxExternalProcesses {
		return nil, fail("data.processes: %d, want 1..%d", d.Processes, maxExternalProcesses)
	}
	m.slots = make(chan struct{}, n)
	if m.dir, err = filepath.Abs(filepath.Dir(spec.Source)); err != nil {
		return nil, fail("%w", err)
	}
	m.fp = m.fingerprint()
	return m, nil
}

// fingerprint hashes the command and the content of every file it names in
// the model directory (the program, a script it reads), so that editing the
// program invalidates the evaluator's persistent cache at the next load.
func (m *external) fingerprint() string {
	h := sha256.New()
	for _, a := range m.argv {
		io.WriteString(h, a)
		h.Write([]byte{0})
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(m.dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			if b, err := os.ReadFile(p); err == nil {
				h.Write(b)
			}
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Fingerprint implements Fingerprinter; the library mixes it into the
// model file's fingerprint.
func (m *external) Fingerprint() string { return m.fp }

// HostOrderIrrelevant implements OrderFree: true unless the file says
// order_dependent.
func (m *external) HostOrderIrrelevant() bool { return m.orderFree }

// program resolves the command's first word (see external).
func (m *external) program() (string, error) {
	p := m.argv[0]
	switch {
	case filepath.IsAbs(p):
		return p, nil
	case strings.ContainsRune(p, '/'):
		return filepath.Join(m.dir, p), nil
	}
	if fi, err := os.Stat(filepath.Join(m.dir, p)); err == nil && fi.Mode().IsRegular() {
		return filepath.Join(m.dir, p), nil
	}
	return exec.LookPath(p)
}

func (m *external) errorf(format string, args ...any) error {
	return fmt.Errorf("models: model %q (external): "+format, append([]any{m.name}, args...)...)
}

// Predict implements Model.
func (m *external) Predict(ctx context.Context, s Scenario) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(s.Hosts) == 0 {
		return 0, errors.New("models: no hosts")
	}
	words := make([]string, len(s.Hosts))
	for i, h := range s.Hosts {
		if !ValidName(h.Arch) {
			return 0, m.errorf("host %d: invalid architecture name %q", i+1, h.Arch)
		}
		if !(h.Load >= 0) || h.Load > 1e300 {
			return 0, m.errorf("host %s: invalid load %v", h.Arch, h.Load)
		}
		words[i] = FormatHost(h)
	}
	req := request{hosts: strings.Join(words, " ")}
	for attempt := 0; ; attempt++ {
		p, err := m.acquire(ctx)
		if err != nil {
			return 0, err
		}
		req.want = m.want(s.Params)
		if p.holdsOther(req.want) {
			m.discard(p)
			if p, err = m.acquireFresh(ctx); err != nil {
				return 0, err
			}
		}
		v, err := p.do(ctx, m.timeout, req)
		var died *diedError
		switch {
		case err == nil:
			m.release(p)
			return v, nil
		case errors.As(err, new(*modelError)):
			m.release(p) // the program answered: it is still in step
			return 0, m.errorf("%w", err)
		case errors.As(err, &died) && attempt == 0 && !m.isClosed():
			m.discard(p)
			continue // a process that died between requests: retry once
		}
		m.discard(p)
		if errors.Is(err, errTimeout) && m.cooldown > 0 {
			m.mu.Lock()
			m.failUntil = time.Now().Add(m.cooldown)
			m.mu.Unlock()
		}
		return 0, m.errorf("%w", err)
	}
}

// want is the parameter values a request must leave the process holding.
func (m *external) want(job map[string]float64) map[string]float64 {
	m.mu.Lock()
	w := make(map[string]float64, len(m.listed)+len(m.defaults)+len(job))
	for _, p := range m.listed {
		if p.Set {
			w[p.Name] = p.Value
		}
	}
	m.mu.Unlock()
	maps.Copy(w, m.defaults)
	maps.Copy(w, job)
	return w
}

// Parameters implements Parameterised: the program's parameters (asking a
// process for its `list`), with the file's defaults over their values.
func (m *external) Parameters(ctx context.Context) ([]Param, error) {
	m.mu.Lock()
	listed := m.listed
	m.mu.Unlock()
	if listed == nil {
		p, err := m.acquire(ctx)
		if err != nil {
			return nil, err
		}
		m.release(p)
		m.mu.Lock()
		listed = m.listed
		m.mu.Unlock()
	}
	byName := map[string]Param{}
	for _, p := range listed {
		byName[p.Name] = p
	}
	for n, v := range m.defaults {
		byName[n] = Param{Name: n, Value: v, Set: true}
	}
	out := make([]Param, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out, nil
}

// acquire returns an idle process, or starts one when the pool has room,
// waiting at most the timeout (and ctx) for a process to come free.
func (m *external) acquire(ctx context.Context) (*proc, error) {
	if err := m.takeSlot(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	for len(m.idle) > 0 {
		p := m.idle[len(m.idle)-1]
		m.idle = m.idle[:len(m.idle)-1]
		if !p.exited() {
			m.mu.Unlock()
			return p, nil
		}
		// Died while idle (killed, or crashed on its own): replace it.
		delete(m.procs, p)
		p.kill()
	}
	m.mu.Unlock()
	return m.start(ctx)
}

// acquireFresh starts a process in the slot a discarded one held.
func (m *external) acquireFresh(ctx context.Context) (*proc, error) {
	if err := m.takeSlot(ctx); err != nil {
		return nil, err
	}
	return m.start(ctx)
}

func (m *external) takeSlot(ctx context.Context) error {
	m.mu.Lock()
	closed, failing := m.closed, time.Until(m.failUntil)
	m.mu.Unlock()
	switch {
	case closed:
		return m.errorf("%w", errClosedModel)
	case failing > 0:
		return m.errorf("a request timed out recently; failing fast for another %v", failing.Round(time.Millisecond))
	}
	t := time.NewTimer(m.timeout)
	defer t.Stop()
	select {
	case m.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return m.errorf("waiting for a process: %w", ctx.Err())
	case <-t.C:
		return m.errorf("all %d processes busy for %v", cap(m.slots), m.timeout)
	}
}

// start starts a process in a slot already taken, and reads its `list`.
func (m *external) start(ctx context.Context) (*proc, error) {
	path, err := m.program()
	if err != nil {
		<-m.slots
		return nil, m.errorf("command %q: %w", m.argv[0], err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-m.slots
		return nil, m.errorf("%w", errClosedModel)
	}
	p, err := startProc(path, m.argv, m.dir)
	if err != nil {
		m.mu.Unlock()
		<-m.slots
		return nil, m.errorf("start %s: %w", path, err)
	}
	m.procs[p] = struct{}{}
	m.starts++
	m.mu.Unlock()

	ps, err := p.list(ctx, m.timeout)
	if err != nil {
		m.discard(p)
		return nil, m.errorf("start %s: %w", path, err)
	}
	m.mu.Lock()
	if m.listed == nil {
		m.listed = ps
	}
	m.mu.Unlock()
	return p, nil
}

// release returns a healthy process to the pool.
func (m *external) release(p *proc) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.discard(p)
		return
	}
	m.idle = append(m.idle, p)
	m.mu.Unlock()
	<-m.slots
}

// discard kills a process that is out of the pool and frees its slot. The
// process is forgotten once it has been reaped.
func (m *external) discard(p *proc) {
	p.kill()
	<-p.done
	m.mu.Lock()
	delete(m.procs, p)
	m.mu.Unlock()
	<-m.slots
}

func (m *external) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Close stops every process: an idle one is asked to `quit` and has its
// stdin closed, then is killed if it has not exited within a second; a busy
// one is killed at once (its request fails). Close returns when every
// process has been reaped. Later predictions fail.
func (m *external) Close() error {
	m.mu.Lock()
	m.closed = true
	idle := m.idle
	m.idle = nil
	var busy []*proc
	for p := range m.procs {
		if !slices.Contains(idle, p) {
			busy = append(busy, p)
		}
	}
	m.mu.Unlock()
	for _, p := range busy {
		p.kill()
	}
	var wg sync.WaitGroup
	for _, p := range idle {
		wg.Go(func() {
			p.quit(time.Second)
			m.mu.Lock()
			delete(m.procs, p) // idle: it held no slot
			m.mu.Unlock()
		})
	}
	wg.Wait()
	for _, p := range busy {
		<-p.done // their callers discard them and free the slots
	}
	return nil
}

// pids returns the process ids of the processes not yet reaped.
func (m *external) pids() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []int
	for p := range m.procs {
		ids = append(ids, p.pid)
	}
	slices.Sort(ids)
	return ids
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
