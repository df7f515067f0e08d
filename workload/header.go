package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// Header is the comment block at the top of an SWF file. Lines holds the
// comments verbatim (each with its leading ';'): they carry copyrights and
// acknowledgements that must travel with every copy, so a Writer writes
// them back unchanged. The other fields are parsed from Lines; a field the
// header does not give is zero ("" or 0), and Get tells absent from zero.
type Header struct {
	Lines []string

	Version        string
	Computer       string
	Installation   string
	MaxJobs        int64
	MaxRecords     int64
	UnixStartTime  int64
	TimeZone       int64 // seconds from UTC (SWF 2.2 deprecates it for TimeZoneString)
	TimeZoneString string
	StartTime      string
	EndTime        string
	MaxNodes       int
	MaxProcs       int
	MaxRuntime     int64 // seconds
	MaxMemory      int64 // KB
	MaxQueues      int
	MaxPartitions  int

	// Fields lists every "Key: value" of the header in order, with
	// continuation lines joined to their key's value by a newline, so
	// repeated keys (Note, Queue, Partition) and keys msched does not parse
	// are kept.
	Fields []HeaderField
}

// HeaderField is one "; Key: value" of an SWF header.
type HeaderField struct {
	Key, Value string
	Line       int // 1-based line of the key in the header
}

// Get returns the value of the first field named key (case-insensitive)
// and whether there is one.
func (h *Header) Get(key string) (string, bool) {
	for _, f := range h.Fields {
		if strings.EqualFold(f.Key, key) {
			return f.Value, true
		}
	}
	return "", false
}

// Set appends "; key: value" to the header and parses it. Generators build
// their headers with Set and Comment.
func (h *Header) Set(key, value string) error {
	return h.add(fmt.Sprintf("; %s: %s", key, value))
}

// set is Set for values the caller knows to be valid.
func (h *Header) set(key, value string) {
	if err := h.Set(key, value); err != nil {
		panic(err)
	}
}

// Comment appends free text to the header, one "; " line per line of text.
func (h *Header) Comment(text string) {
	for l := range strings.SplitSeq(text, "\n") {
		// Indented like an SWF continuation line so that text with a
		// colon in it is not read back as a key.
		h.Lines = append(h.Lines, strings.TrimRight(";   "+l, " "))
	}
}

func (h *Header) add(line string) error {
	h.Lines = append(h.Lines, line)
	return h.parseLine(line, len(h.Lines))
}

// ParseHeader parses the comment lines of an SWF header (each starting with
// ';', possibly after white space). An error names the line of a numeric
// field that does not parse.
func ParseHeader(lines []string) (Header, error) {
	var h Header
	for _, l := range lines {
		if err := h.add(l); err != nil {
			return h, err
		}
	}
	return h, nil
}

// parseLine parses header line n (1-based) and records its field. A key
// line is ';' followed by at most two blanks and a capitalised word with a
// colon ("; MaxProcs: 128"); a deeper-indented line continues the previous
// key's value (";              http://…"), as in the archive's traces.
func (h *Header) parseLine(line string, n int) error {
	body, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), ";")
	if !ok {
		return fmt.Errorf("workload: swf header line %d: %q is not a comment", n, line)
	}
	trimmed := strings.TrimLeft(body, " \t")
	indent := len(body) - len(trimmed)
	key, value, isKey := strings.Cut(trimmed, ":")
	isKey = isKey && indent <= 2 && key != "" && key[0] >= 'A' && key[0] <= 'Z' && !strings.ContainsAny(key, " \t")
	if !isKey {
		if t := strings.TrimSpace(trimmed); t != "" && len(h.Fields) > 0 && indent > 2 {
			f := &h.Fields[len(h.Fields)-1]
			f.Value += "\n" + t
		}
		return nil
	}
	value = strings.TrimSpace(value)
	h.Fields = append(h.Fields, HeaderField{Key: key, Value: value, Line: n})
	bad := func(err error) error {
		return fmt.Errorf("workload: swf header line %d: %s %q: %w", n, key, value, err)
	}
	i64 := func(dst *int64) error {
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return bad(err)
		}
		*dst = v
		return nil
	}
	i := func(dst *int) error {
		v, err := strconv.Atoi(value)
		if err != nil {
			return bad(err)
		}
		*dst = v
		return nil
	}
	switch strings.ToLower(key) {
	case "version":
		h.Version = value
	case "computer":
		h.Computer = value
	case "installation":
		h.Installation = value
	case "maxjobs":
		return i64(&h.MaxJobs)
	case "maxrecords":
		return i64(&h.MaxRecords)
	case "unixstarttime":
		return i64(&h.UnixStartTime)
	case "timezone":
		return i64(&h.TimeZone)
	case "timezonestring":
		h.TimeZoneString = value
	case "starttime":
		h.StartTime = value
	case "endtime":
		h.EndTime = value
	case "maxnodes":
		return i(&h.MaxNodes)
	case "maxprocs":
		return i(&h.MaxProcs)
	case "maxruntime":
		return i64(&h.MaxRuntime)
	case "maxmemory":
		return i64(&h.MaxMemory)
	case "maxqueues":
		return i(&h.MaxQueues)
	case "maxpartitions":
		return i(&h.MaxPartitions)
	}
	return nil
}
