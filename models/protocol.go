package models

// The session protocol
//
// A performance model program talks to msched the way PACE's models talked to
// the Warwick MS evaluation library: an interactive session, one request line
// in, one reply out, over the program's stdin and stdout. msched speaks the
// client side to "external" model programs (external.go) and the server side
// for any model it knows (Session.Serve, behind `msched model serve NAME`),
// so a user can try a model by hand, as in the MS paper's Fig. 5:
//
//	> list
//	< T1 8
//	< f 0
//	< C_com 0.25
//	< .
//	> set C_com 0.5
//	< ok
//	> set N 20000
//	< error: unknown parameter "N" (parameters: C_com T1 f)
//	> hrduse SunUltra1:hardware/CPU_LOAD=0 SunUltra1:hardware/CPU_LOAD=1
//	< ok
//	> eval
//	< 9
//	> quit
//
// Lines are text, terminated by '\n' (a trailing '\r' is ignored); a request
// is whitespace-separated words. The requests and their replies:
//
//	list                 the parameters and their current values, one
//	                     "NAME VALUE" line each, then a line holding only "."
//	                     (the terminator: no parameter is named "."). VALUE is
//	                     a number, or "-" for a parameter that has no value yet.
//	set NAME VALUE       sets a parameter; reply "ok". VALUE is a decimal
//	                     number (strconv.ParseFloat syntax; finite).
//	hrduse HOST...       the hosts the job would run on, one hardware model per
//	                     host, in order; reply "ok". HOST is
//	                     ARCH:hardware/CPU_LOAD=L (PACE's form), ARCH:L, or
//	                     ARCH alone (load 0). At least one host.
//	eval                 the predicted run time, in seconds, as one number on
//	                     its own line (e.g. "2.19181e+08" or "9").
//	quit                 ends the session; no reply. End of input does too.
//
// Any request that fails gets exactly one line starting "error:" instead of
// its reply, and changes nothing (a failed `list` sends no "." either). An
// empty line is ignored and gets no reply. Requests are answered in order,
// so a client may write several before reading their replies.
//
// Parameter names and architecture names are ValidName words; numbers are
// printed in the shortest form that reads back exactly (strconv 'g', -1).
// A model program must exit at end of input: msched closes its stdin to
// stop it, and a program whose msched died then exits on its own.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// loadPrefix is PACE's spelling of a host's load in a hardware model name,
// as in "SunUltra1:hardware/CPU_LOAD=0".
const loadPrefix = "hardware/CPU_LOAD="

// FormatHost writes h in the protocol's form, ARCH:hardware/CPU_LOAD=L.
func FormatHost(h HostSpec) string {
	return h.Arch + ":" + loadPrefix + strconv.FormatFloat(h.Load, 'g', -1, 64)
}

// ParseHost reads one host word: ARCH:hardware/CPU_LOAD=L, ARCH:L or ARCH.
// It checks the syntax only (a ValidName architecture, a finite load ≥ 0),
// not that the architecture exists.
func ParseHost(word string) (HostSpec, error) {
	arch, load, hasLoad := strings.Cut(word, ":")
	if !ValidName(arch) {
		return HostSpec{}, fmt.Errorf("host %q: invalid architecture name", word)
	}
	h := HostSpec{Arch: arch}
	if !hasLoad {
		return h, nil
	}
	l, err := strconv.ParseFloat(strings.TrimPrefix(load, loadPrefix), 64)
	if err != nil || l < 0 || math.IsInf(l, 0) || math.IsNaN(l) {
		return HostSpec{}, fmt.Errorf("host %q: load must be a number ≥ 0", word)
	}
	h.Load = l
	return h, nil
}

// Param is one parameter of a model and its current value.
type Param struct {
	Name  string
	Value float64
	Set   bool // false: the parameter has no value yet (listed as "-")
}

// Parameterised is implemented by models that know their parameters: the
// protocol's `list` shows them and `set` refuses other names. The closed-form
// kinds list theirs with the model file's defaults, table lists none, and an
// external model lists its program's parameters with the file's defaults
// over them (starting a process to ask, hence the context).
type Parameterised interface {
	Parameters(ctx context.Context) ([]Param, error)
}

// Parameters returns the formula's parameters with the file's defaults.
func (f *formula) Parameters(context.Context) ([]Param, error) {
	ps := make([]Param, len(f.params))
	for i, p := range f.params {
		v, ok := f.defaults[p.name]
		ps[i] = Param{Name: p.name, Value: v, Set: ok}
	}
	return ps, nil
}

// Parameters returns no parameters: a table takes none.
func (m *tableModel) Parameters(context.Context) ([]Param, error) { return []Param{}, nil }

// Session is the server side of the protocol for one model: it keeps the
// session's parameter values and hosts and answers `eval` with
// Model.Predict. A Session serves one conversation at a time.
type Session struct {
	Model    Model
	Hardware *Hardware // architectures `hrduse` accepts
	// Params are the parameters and their starting values, e.g. from
	// Library.Session; `set` refuses other names unless Open.
	Params []Param
	Open   bool
}

// Session returns a protocol session for the named model, starting from the
// model's parameters (Parameterised) or else from its file's defaults.
func (lib *Library) Session(ctx context.Context, name string) (*Session, error) {
	l, ok := lib.models[name]
	if !ok {
		return nil, fmt.Errorf("models: unknown model %q", name)
	}
	s := &Session{Model: l, Hardware: lib.hw}
	if p, ok := l.Model.(Parameterised); ok {
		ps, err := p.Parameters(ctx)
		if err != nil {
			return nil, err
		}
		s.Params = ps
		return s, nil
	}
	// The model does not say which parameters it takes: start from the
	// file's defaults and accept any name.
	for _, n := range slices.Sorted(maps.Keys(l.spec.Params)) {
		s.Params = append(s.Params, Param{Name: n, Value: l.spec.Params[n], Set: true})
	}
	s.Open = true
	return s, nil
}

// maxLine bounds a request or reply line; a longer one is a protocol error.
const maxLine = 64 << 10

// Serve reads requests from r and writes replies to w until `quit`, end of
// input or a write error. It returns nil at `quit` or end of input. ctx
// bounds each `eval`.
func (s *Session) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	st := sessionState{s: s, values: map[string]float64{}, known: map[string]bool{}}
	for _, p := range s.Params {
		st.known[p.Name] = true
		if p.Set {
			st.values[p.Name] = p.Value
		}
	}
	st.open = s.Open
	br := bufio.NewReader(r)
	bw := bufio.NewWriter(w)
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return bw.Flush()
		}
		if err != nil {
			bw.Flush()
			return err
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		if words[0] == "quit" && len(words) == 1 {
			return bw.Flush()
		}
		reply, err := st.handle(ctx, words)
		if err != nil {
			reply = "error: " + oneLine(err.Error()) + "\n"
		}
		if _, err := bw.WriteString(reply); err != nil {
			return err
		}
		// Flush once the client has nothing more queued: a by-hand user
		// sees each reply at once, a pipelining client gets one write.
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
}

// errLongLine is returned by readLine for a line over maxLine bytes.
var errLongLine = fmt.Errorf("line longer than %d bytes", maxLine)

// readLine returns the next line without its "\n" or "\r\n". A last line
// without a newline is returned as a line; then io.EOF.
func readLine(br *bufio.Reader) (string, error) {
	var long []byte
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(b) > maxLine {
				return "", errLongLine
			}
			long = append(long, b...)
			continue
		}
		if long != nil {
			b = append(long, b...)
		}
		if err != nil && (len(b) == 0 || !errors.Is(err, io.EOF)) {
			return "", err
		}
		if len(b) > maxLine {
			return "", errLongLine
		}
		s := strings.TrimSuffix(string(b), "\n")
		return strings.TrimSuffix(s, "\r"), nil
	}
}

// oneLine keeps an error message on one line, as the protocol requires.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

type sessionState struct {
	s      *Session
	values map[string]float64
	known  map[string]bool
	open   bool // any ValidName may be set
	hosts  []HostSpec
}

func (st *sessionState) names() []string {
	return slices.Sorted(maps.Keys(st.known))
}

// handle answers one request: the full reply text, or an error.
func (st *sessionState) handle(ctx context.Context, words []string) (string, error) {
	cmd, args := words[0], words[1:]
	switch cmd {
	case "list":
		if len(args) != 0 {
			return "", errors.New("usage: list")
		}
		var b strings.Builder
		for _, n := range st.names() {
			if v, ok := st.values[n]; ok {
				fmt.Fprintf(&b, "%s %s\n", n, strconv.FormatFloat(v, 'g', -1, 64))
			} else {
				fmt.Fprintf(&b, "%s -\n", n)
			}
		}
		b.WriteString(".\n")
		return b.String(), nil
	case "set":
		if len(args) != 2 {
			return "", errors.New("usage: set NAME VALUE")
		}
		name, val := args[0], args[1]
		if !st.known[name] && !(st.open && ValidName(name)) {
			return "", fmt.Errorf("unknown parameter %q (parameters: %s)", name, strings.Join(st.names(), " "))
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return "", fmt.Errorf("set %s: %q is not a finite number", name, val)
		}
		st.known[name] = true
		st.values[name] = v
		return "ok\n", nil
	case "hrduse":
		if len(args) == 0 {
			return "", errors.New("usage: hrduse ARCH[:hardware/CPU_LOAD=L] (one per host)")
		}
		hosts := make([]HostSpec, len(args))
		for i, a := range args {
			h, err := ParseHost(a)
			if err != nil {
				return "", err
			}
			if st.s.Hardware != nil {
				if _, err := st.s.Hardware.Lookup(h.Arch); err != nil {
					return "", fmt.Errorf("host %d: unknown architecture %q (known: %s)", i+1, h.Arch, strings.Join(st.s.Hardware.Names(), " "))
				}
			}
			hosts[i] = h
		}
		st.hosts = hosts
		return "ok\n", nil
	case "eval":
		if len(args) != 0 {
			return "", errors.New("usage: eval")
		}
		if len(st.hosts) == 0 {
			return "", errors.New("no hosts: send hrduse first")
		}
		v, err := st.s.Model.Predict(ctx, Scenario{Params: maps.Clone(st.values), Hosts: slices.Clone(st.hosts)})
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(v, 'g', -1, 64) + "\n", nil
	}
	return "", fmt.Errorf("unknown request %q (requests: list, set, hrduse, eval, quit)", cmd)
}
