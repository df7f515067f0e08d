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
}

func (e *ParseError) Error() string { return "spool: " + e.Detail() }

// Detail renders the problems one per line, compiler style:
// "job.yaml:3: hosts.min: must be ≥ 1, got 0".
func (e *ParseError) Detail() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Field != "" {
			b.WriteString(p.Field + ": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
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

func parse(name string, data []byte, submission bool) (*Job, error) {
	pe := &ParseError{File: name}
	fail := func(line int, field, msg string) (*Job, error) {
		pe.Problems = append(pe.Problems, Problem{line, field, msg})
		return nil, pe
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(0, "", "empty job file")
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

	// Decode the tree already parsed (parsing is most of the cost), and
	// check field names against the types as yaml.v3's KnownFields would:
	// Node.Decode has no strict mode of its own.
	var j Job
	unknown := unknownFields(doc, reflect.TypeOf(j), nil, 0)
	if err := root.Decode(&j); err != nil || len(unknown) > 0 {
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
		for _, s := range unknown {
			pe.Problems = append(pe.Problems, typeProblem(doc, s))
		}
		sort.SliceStable(pe.Problems, func(a, b int) bool { return pe.Problems[a].Line < pe.Problems[b].Line })
		return nil, pe
	}
	if submission {
		pe.Problems = submitterProblems(&j, doc)
	}
	pe.Problems = append(pe.Problems, validate(&j, doc)...)
	if len(pe.Problems) > 0 {
		return nil, pe
	}
	return &j, nil
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
	switch n.Kind {
	case yaml.AliasNode:
		return unknownFields(n.Alias, t, out, depth+1)
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
	dupRE      = regexp.MustCompile(`^line (\d+): mapping key "(.*)" already defined at line (\d+)$`)
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
		return Problem{line, parentPath(field), fmt.Sprintf("unknown field %q", key)}
	}
	if m := typeRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		tag, val, into := m[2], m[3], m[4]
		// yaml.v3 shortens long values to their first few bytes and " ...".
		prefix, short := strings.CutSuffix(val, " ...")
		field, node := pathAt(doc, line, func(n *yaml.Node) bool {
			return n.ShortTag() == tag && (val == "" || n.Value == val || short && strings.HasPrefix(n.Value, prefix))
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
			got += fmt.Sprintf(" %q", val)
		}
		return Problem{line, field, "want " + want + ", got " + got}
	}
	if m := valueRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		val, _ := strconv.Unquote(m[2])
		field, _ := pathAt(doc, line, func(n *yaml.Node) bool { return n.Value == val })
		return Problem{line, field, m[3]}
	}
	if m := dupRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		field, _ := pathAt(doc, line, nil, m[2])
		return Problem{line, field, "given twice (first at line " + m[3] + ")"}
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
func pathAt(root *yaml.Node, line int, ok func(*yaml.Node) bool, key ...string) (string, *yaml.Node) {
	var walk func(n *yaml.Node, path string) (string, *yaml.Node)
	walk = func(n *yaml.Node, path string) (string, *yaml.Node) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if len(key) > 0 && k.Line == line && k.Value == key[0] {
					return p, k
				}
				if r, found := walk(v, p); found != nil {
					return r, found
				}
			}
		case yaml.SequenceNode:
			for i, v := range n.Content {
				if r, found := walk(v, fmt.Sprintf("%s[%d]", path, i)); found != nil {
					return r, found
				}
			}
		}
		if len(key) == 0 && n.Line == line && ok(n) {
			return path, n
		}
		return "", nil
	}
	return walk(root, "")
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
