package spool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong with a job file, at a line (0: the whole file)
// and a field path like "hosts.min" or "command[0]" ("" for the top level).
type Problem struct {
	Line  int
	Field string
	Msg   string
}

// ParseError lists everything wrong with a job file. Detail is the text the
// user receives in the rejection report.
type ParseError struct {
	File     string
	Problems []Problem
	// Omitted counts problems found and not kept in Problems (Parse keeps
	// the first few by line: see MaxReason).
	Omitted int
}

func (e *ParseError) Error() string { return "spool: " + e.Detail() }

// MaxReason bounds Detail, which is the reason a rejected job is given, the
// subject and body of its report and a line in init's log: a few lines to
// read, however many problems the file has and however long the values it
// quotes (a 20 KB file nested 10,000 deep was once rejected with a 30 KB
// field path). Detail lists the first maxProblems problems, each on a line
// of at most maxLine bytes, and then how many more there are.
const MaxReason = 4 << 10

const (
	maxProblems = 10  // problems Detail lists
	maxLine     = 360 // bytes of one line of Detail: (maxProblems+1)·(maxLine+1) ≤ MaxReason
	maxQuoted   = 64  // bytes of a value, key or name of the user's quoted in a problem
)

// Detail renders the problems one per line, compiler style:
// "job.yaml:3: hosts.min: must be ≥ 1, got 0". It lists at most
// maxProblems of them, each cut to maxLine bytes, and then a line saying
// how many more there are: never more than MaxReason bytes.
func (e *ParseError) Detail() string {
	var b strings.Builder
	shown := e.Problems[:min(len(e.Problems), maxProblems)]
	for i, p := range shown {
		if i > 0 {
			b.WriteByte('\n')
		}
		line := e.File
		if p.Line > 0 {
			line += ":" + strconv.Itoa(p.Line)
		}
		line += ": "
		if p.Field != "" {
			line += p.Field + ": "
		}
		b.WriteString(Clip(line+p.Msg, maxLine))
	}
	if more := len(e.Problems) - len(shown) + e.Omitted; more > 0 {
		if len(shown) > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(Clip(fmt.Sprintf("%s: … and %d more problems", e.File, more), maxLine))
	}
	return b.String()
}

// keepFirst keeps the first maxProblems problems and counts the others in
// Omitted.
func (e *ParseError) keepFirst() {
	if len(e.Problems) > maxProblems {
		e.Omitted += len(e.Problems) - maxProblems
		e.Problems = e.Problems[:maxProblems]
	}
}

// Clip cuts s to at most n bytes (n ≥ 3), ending it with "…" if it was
// cut; a cut falls on a UTF-8 character boundary. It bounds what is quoted
// of a user's file, here in reasons and in the reports (notify).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// valueError is what custom unmarshalers return. It is a *yaml.TypeError
// because yaml.v3 collects those and goes on decoding (any other error stops
// it, and the problems found so far are lost). The value is quoted in the
// text so that Parse can find the node, and so the field path, on the line.
func valueError(n *yaml.Node, msg string) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: value %q: %s", n.Line, n.Value, msg)}}
}

// Parse decodes and validates a job file strictly: unknown fields, wrong
// types, duplicate keys, several documents and impossible requests are all
// errors (*ParseError), each naming the line and field. name is used in the
// messages (normally the file's name).
func Parse(name string, data []byte) (*Job, error) { return parse(name, data, false) }

// ParseSubmission is Parse for a file from submitted/: it also refuses the
// daemon sections (jid, user, uid, history, …), which a submitter may not
// set. msched submit checks with it, so that it refuses what init would.
func ParseSubmission(name string, data []byte) (*Job, error) { return parse(name, data, true) }

// MaxDepth bounds how deep a job file nests. Its fields go four levels
// deep (history[0].state, model.params.N); yaml.v3 stops only at 10,000,
// and every walk of the tree after it (finding a problem's field path,
// unknown fields, decoding) costs more the deeper it goes.
const MaxDepth = 16

// maxSeparators bounds, in a submission, the bytes after which a YAML node
// may begin: [ { , - : ? and line breaks (\n, \r, and the bytes 0x85,
// 0xA8, 0xA9 that end NEL, LS and PS). Every node but a document's root
// begins after one of them, and at most two begin after each one (a flow
// pair or block mapping and its first key; a key and its empty value),
// so a submission under this bound parses into at most
// 2·(maxSeparators+2) nodes, whatever it holds: yaml.v3's memory for a
// submission is bounded before it reads it, as the bytes are by the
// file's size. A job at MaxArgs words, one per line, and MaxEnv
// variables has under 9,000; FuzzParse checks the bound on what it
// parses.
const maxSeparators = 1 << 15

// separators counts the bytes of data that maxSeparators bounds.
func separators(data []byte) int {
	n := 0
	for _, c := range data {
		switch c {
		case '[', '{', ',', '-', ':', '?', '\n', '\r', 0x85, 0xA8, 0xA9:
			n++
		}
	}
	return n
}

func parse(name string, data []byte, submission bool) (*Job, error) {
	pe := &ParseError{File: name}
	fail := func(line int, field, msg string) (*Job, error) {
		pe.Problems = append(pe.Problems, Problem{line, field, msg})
		return nil, pe
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(0, "", "empty job file")
	}
	if n := separators(data); submission && n > maxSeparators {
		return fail(0, "", fmt.Sprintf("too many items for a job file: %d places where a YAML item may begin ([ { , - : ? and line breaks), over the limit of %d (a job has at most %d command words and %d env variables)",
			n, maxSeparators, MaxArgs, MaxEnv))
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		line, msg := syntaxError(err)
		return fail(line, "", msg)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return fail(extra.Line, "", "more than one YAML document; a job file holds one job")
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return fail(doc.Line, "", "a job file must be a mapping of fields (name: …, command: […])")
	}
	if n := deeper(doc, MaxDepth); n != nil {
		return fail(n.Line, "", fmt.Sprintf("nested more than %d levels deep (a job file's fields go 4 deep)", MaxDepth))
	}
	if n := mergeKey(doc); n != nil {
		// yaml.v3 panics on some merges (a mapping as a key beside
		// <<: "hash of unhashable type", found by FuzzParse in
		// 14 bytes), and a job file needs none.
		return fail(n.Line, "", "a merge key (<<): not allowed in a job file; write the fields out")
	}
	if n := alias(doc); n != nil {
		// A job file needs none (the daemons' never have one: yaml.v3
		// writes none), and an alias makes what it names count again at
		// each use: the bounds on bytes and items above would no longer
		// bound what decoding and the walks of the tree cost (a history
		// of aliases of one large mapping is quadratic).
		return fail(n.Line, "", fmt.Sprintf("an alias (*%s): anchors and aliases are not allowed in a job file; write the value out", Clip(n.Value, maxQuoted)))
	}
	if mappingProblems(doc, pe); len(pe.Problems) > 0 {
		pe.keepFirst()
		return nil, pe
	}

	// Decode the tree already parsed (parsing is most of the cost), and
	// check field names against the types as yaml.v3's KnownFields would:
	// Node.Decode has no strict mode of its own.
	var j Job
	unknown := unknownFields(doc, reflect.TypeOf(j), nil, 0)
	if err := decodeSafely(&root, &j); err != nil || len(unknown) > 0 {
		var te *yaml.TypeError
		switch {
		case err == nil:
		case errors.As(err, &te):
			unknown = append(unknown, te.Errors...)
		default:
			line, msg := syntaxError(err)
			pe.Problems = append(pe.Problems, Problem{line, "", msg})
			return nil, pe
		}
		// Each problem's field path is a walk of the tree: only the
		// problems Detail lists are given one.
		sort.SliceStable(unknown, func(a, b int) bool { return lineNumber(unknown[a]) < lineNumber(unknown[b]) })
		if len(unknown) > maxProblems {
			pe.Omitted = len(unknown) - maxProblems
			unknown = unknown[:maxProblems]
		}
		for _, s := range unknown {
			pe.Problems = append(pe.Problems, typeProblem(doc, s))
		}
		pe.keepFirst()
		return nil, pe
	}
	if submission {
		pe.Problems = submitterProblems(&j, doc)
	}
	pe.Problems = append(pe.Problems, validate(&j, doc)...)
	if len(pe.Problems) > 0 {
		pe.keepFirst()
		return nil, pe
	}
	canonicalDeps(&j)
	return &j, nil
}

// deeper returns a node more than max levels below n (n is level 1), or nil.
func deeper(n *yaml.Node, max int) *yaml.Node {
	if max == 0 {
		return n
	}
	for _, c := range n.Content {
		if d := deeper(c, max-1); d != nil {
			return d
		}
	}
	return nil
}

// maxMapping bounds the entries of one mapping: a job file's largest are
// env and model.params. yaml.v3 compares every two keys of a mapping it
// decodes (a duplicate is an error), and adds one error per equal pair: 3,000
// copies of one env name, an 18 KB file, once took 8 s and 2.6 GB and gave
// a 189 MB reason. Here each mapping is checked first, its duplicates found
// through a set, so that yaml.v3 decodes only mappings of distinct keys
// within this bound.
const maxMapping = max(MaxEnv, MaxParams)

// mappingProblems adds to pe a problem for each mapping under n with more
// than maxMapping entries and each key given twice in one mapping (as
// yaml.v3 compares keys: same kind, same value), with its field path; past
// maxProblems problems it only counts them.
func mappingProblems(doc *yaml.Node, pe *ParseError) {
	type key struct {
		kind  yaml.Kind
		value string
	}
	add := func(p Problem) {
		if len(pe.Problems) < maxProblems {
			pe.Problems = append(pe.Problems, p)
		} else {
			pe.Omitted++
		}
	}
	var walk func(n *yaml.Node, line int)
	walk = func(n *yaml.Node, line int) { // line: of n's key, if it has one
		if n.Kind == yaml.MappingNode {
			if entries := len(n.Content) / 2; entries > maxMapping {
				field, _ := pathAt(doc, n.Line, func(m *yaml.Node) bool { return m == n })
				add(Problem{line, field, fmt.Sprintf("%d entries, over the limit of %d (env and model.params have at most %d)", entries, maxMapping, maxMapping)})
				return
			}
			first := make(map[key]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if line, dup := first[key{k.Kind, k.Value}]; dup {
					field := ""
					if len(pe.Problems) < maxProblems {
						field, _ = pathAt(doc, k.Line, nil, k.Value)
					}
					add(Problem{k.Line, field, fmt.Sprintf("given twice (first at line %d)", line)})
					continue
				}
				first[key{k.Kind, k.Value}] = k.Line
			}
		}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 1 {
				walk(c, n.Content[i-1].Line) // a value
			} else {
				walk(c, c.Line) // a key (yaml.v3 decodes it too), an item
			}
		}
	}
	walk(doc, doc.Line)
}

// mergeKey returns the first merge key (<< resolved as !!merge) under n,
// or nil.
func mergeKey(n *yaml.Node) *yaml.Node {
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 && c.Kind == yaml.ScalarNode && c.ShortTag() == "!!merge" {
			return c
		}
		if m := mergeKey(c); m != nil {
			return m
		}
	}
	return nil
}

// decodeSafely is root.Decode(v), with a panic of yaml.v3's turned into
// an error: a job file is a user's, and no file may stop the daemon that
// reads it (init judges a claim again at every start). The checks before
// it refuse every input known to make yaml.v3 panic; this is for those not
// known yet.
func decodeSafely(root *yaml.Node, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("yaml: the YAML decoder failed on this file: %v", p)
		}
	}()
	return root.Decode(v)
}

// alias returns the first alias node under n, or nil.
func alias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n
	}
	for _, c := range n.Content {
		if a := alias(c); a != nil {
			return a
		}
	}
	return nil
}

// lineNumber is N of a yaml.v3 error line "line N: …" (0 if none).
func lineNumber(s string) int {
	rest, ok := strings.CutPrefix(s, "line ")
	if !ok {
		return 0
	}
	end := strings.IndexByte(rest, ':')
	if end < 0 {
		return 0
	}
	n, _ := strconv.Atoi(rest[:end])
	return n
}

// unknownFields lists, in yaml.v3's words ("line N: field K not found in
// type T"), the mapping keys of n that name no field of the struct type t,
// descending into the fields, slices and maps that t's fields are.
func unknownFields(n *yaml.Node, t reflect.Type, out []string, depth int) []string {
	if n == nil || depth > 32 {
		return out
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return out // it decodes itself (Duration)
	}
	switch n.Kind { // no alias: parse refuses them
	case yaml.MappingNode:
		switch t.Kind() {
		case reflect.Struct:
			fields := yamlFields(t)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				ft, ok := fields[k.Value]
				if !ok {
					out = append(out, fmt.Sprintf("line %d: field %s not found in type %s", k.Line, k.Value, t))
					continue
				}
				out = unknownFields(v, ft, out, depth+1)
			}
		case reflect.Map:
			for i := 1; i < len(n.Content); i += 2 {
				out = unknownFields(n.Content[i], t.Elem(), out, depth+1)
			}
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, c := range n.Content {
				out = unknownFields(c, t.Elem(), out, depth+1)
			}
		}
	}
	return out
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// yamlFields maps the YAML keys of struct type t to the fields' types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	fieldCache.Store(t, m)
	return m
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

func syntaxError(err error) (int, string) {
	m := lineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, "not YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
	}
	n, _ := strconv.Atoi(m[1])
	return n, "not YAML: " + m[2]
}

var (
	unknownRE  = regexp.MustCompile(`^line (\d+): field (.+) not found in type (.+)$`)
	typeRE     = regexp.MustCompile("^line (\\d+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
	valueRE    = regexp.MustCompile(`^line (\d+): value ("(?:[^"\\]|\\.)*"): (.*)$`)
	anyLineRE  = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlKinds  = map[string]string{"!!str": "a string", "!!int": "an integer", "!!float": "a number", "!!bool": "a boolean", "!!seq": "a list", "!!map": "a mapping", "!!null": "nothing", "!!timestamp": "a timestamp", "!!binary": "binary data"}
	goTypeDesc = map[string]string{"int": "an integer", "float64": "a number", "string": "a string", "bool": "true or false", "[]string": "a list of strings", "map[string]float64": "a mapping of names to numbers", "time.Time": "a timestamp like 2026-01-02T15:04:05Z", "spool.State": "a state name"}
)

// typeProblem turns one of yaml.v3's TypeError lines into a Problem that
// names the field, found in the node tree by line (and value).
func typeProblem(doc *yaml.Node, s string) Problem {
	if m := unknownRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		key := m[2]
		field, _ := pathAt(doc, line, nil, key)
		return Problem{line, parentPath(field), fmt.Sprintf("unknown field %q", Clip(key, maxQuoted))}
	}
	if m := typeRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		tag, val, into := m[2], m[3], m[4]
		// yaml.v3 shortens a value over 10 bytes to its first 7 and "...".
		prefix, short := strings.CutSuffix(val, "...")
		field, node := pathAt(doc, line, func(n *yaml.Node) bool {
			return n.ShortTag() == tag && (val == "" || n.Value == val || short && len(n.Value) > 10 && strings.HasPrefix(n.Value, prefix))
		})
		if node != nil && node.Kind == yaml.ScalarNode {
			val = node.Value
		}
		want, ok := goTypeDesc[strings.TrimPrefix(into, "*")]
		switch {
		case ok:
		case strings.HasPrefix(into, "[]"):
			want = "a list"
		default:
			want = "a mapping"
		}
		if field == "command" {
			want += " (argv, e.g. [\"./prog\", \"-n\", \"5\"]; never a shell line)"
		}
		got := yamlKinds[tag]
		if got == "" {
			got = tag
		}
		if val != "" {
			got += fmt.Sprintf(" %q", Clip(val, maxQuoted))
		}
		return Problem{line, field, "want " + want + ", got " + got}
	}
	if m := valueRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		val, _ := strconv.Unquote(m[2])
		field, _ := pathAt(doc, line, func(n *yaml.Node) bool { return n.Value == val })
		return Problem{line, field, m[3]}
	}
	if m := anyLineRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{line, "", m[2]}
	}
	return Problem{0, "", s}
}

// pathAt finds the field path of a node on the given line: with key set,
// the mapping key of that name; otherwise the deepest value node accepted by
// ok (children are tried before their parent, so "command[0]" beats "command").
// The path is made only for the node found, each key in it cut to
// maxQuoted bytes: the walk costs one step a node, however long the keys.
func pathAt(root *yaml.Node, line int, ok func(*yaml.Node) bool, key ...string) (string, *yaml.Node) {
	type step struct {
		key   *yaml.Node // a mapping key, or nil for index
		index int
	}
	var path []step
	render := func() string {
		var b strings.Builder
		for _, s := range path {
			switch {
			case s.key == nil:
				fmt.Fprintf(&b, "[%d]", s.index)
			case b.Len() > 0:
				b.WriteString("." + Clip(s.key.Value, maxQuoted))
			default:
				b.WriteString(Clip(s.key.Value, maxQuoted))
			}
		}
		return b.String()
	}
	var walk func(n *yaml.Node) *yaml.Node
	walk = func(n *yaml.Node) *yaml.Node {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				path = append(path, step{key: k})
				if len(key) > 0 && k.Line == line && k.Value == key[0] {
					return k
				}
				if found := walk(v); found != nil {
					return found
				}
				path = path[:len(path)-1]
			}
		case yaml.SequenceNode:
			for i, v := range n.Content {
				path = append(path, step{index: i})
				if found := walk(v); found != nil {
					return found
				}
				path = path[:len(path)-1]
			}
		}
		if len(key) == 0 && n.Line == line && ok(n) {
			return n
		}
		return nil
	}
	if found := walk(root); found != nil {
		return render(), found
	}
	return "", nil
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// lookup returns the key node of a field path in the document, or nil.
func lookup(doc *yaml.Node, path ...string) *yaml.Node {
	k, _ := lookupKV(doc, path...)
	return k
}

// lookupKV returns the key and value nodes of a field path, or nils.
func lookupKV(doc *yaml.Node, path ...string) (key, value *yaml.Node) {
	n := doc
	for _, name := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil, nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				key, next = n.Content[i], n.Content[i+1]
			}
		}
		if next == nil {
			return nil, nil
		}
		n = next
	}
	return key, n
}

// lineOf is the line of a field's key, or of the nearest present parent, or 0.
func lineOf(doc *yaml.Node, path ...string) int {
	for i := len(path); i > 0; i-- {
		if k := lookup(doc, path[:i]...); k != nil {
			return k.Line
		}
	}
	return 0
}
