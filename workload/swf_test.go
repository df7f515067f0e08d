package workload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	nasaTrace = "testdata/NASA-iPSC-1993-3.1-cln.swf.gz"
	sdscTrace = "testdata/SDSC-SP2-1998-4.2-cln.first5k.swf"
)

func sampleTrace(t *testing.T) (Header, []Job) {
	t.Helper()
	h, err := ParseHeader([]string{
		"; Version: 2.2",
		"; Computer: test machine",
		"; Acknowledge: someone",
		";              and someone else: with a colon",
		";",
		"; MaxJobs: 3",
		"; MaxRecords: 3",
		"; UnixStartTime: 893466664",
		"; TimeZoneString: US/Pacific",
		"; MaxNodes: 64",
		"; MaxProcs: 128",
		"; Note: first",
		"; Note: second",
	})
	if err != nil {
		t.Fatal(err)
	}
	a := NewJob()
	a.ID = 1
	b := Job{ID: 2, Submit: 12.5, Wait: 0, Run: 3600.25, Procs: 64, CPU: 1.0 / 3, Memory: 1024,
		ReqProcs: 64, ReqTime: 7200, ReqMemory: 2048.5, Status: 1, User: 7, Group: 2,
		Executable: 13, Queue: 3, Partition: 3010402, Preceding: 1, Think: 4.75}
	c := b
	c.ID, c.Submit, c.Partition, c.Preceding, c.Think = 3, 1e9, 99999999999999, -1, -1
	return h, []Job{a, b, c}
}

func TestSWF_RoundTripKeepsJobsAndHeader(t *testing.T) {
	h, jobs := sampleTrace(t)
	var buf bytes.Buffer // the text itself is checked below
	if err := WriteAll(&buf, h, jobs); err != nil {
		t.Fatal(err)
	}
	h2, jobs2, err := ReadAll(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jobs, jobs2) {
		t.Errorf("jobs changed in the round trip:\n got %+v\nwant %+v", jobs2, jobs)
	}
	if !reflect.DeepEqual(h.Lines, h2.Lines) {
		t.Errorf("header lines changed:\n got %q\nwant %q", h2.Lines, h.Lines)
	}
	if h2.MaxProcs != 128 || h2.MaxNodes != 64 || h2.MaxJobs != 3 || h2.MaxRecords != 3 ||
		h2.UnixStartTime != 893466664 || h2.TimeZoneString != "US/Pacific" || h2.Version != "2.2" {
		t.Errorf("parsed header: %+v", h2)
	}
	if v, _ := h2.Get("acknowledge"); v != "someone\nand someone else: with a colon" {
		t.Errorf("continuation line: Acknowledge = %q", v)
	}
	var notes []string
	for _, f := range h2.Fields {
		if f.Key == "Note" {
			notes = append(notes, f.Value)
		}
	}
	if !reflect.DeepEqual(notes, []string{"first", "second"}) {
		t.Errorf("repeated keys: notes %q", notes)
	}
	// The second line is the job line, exactly.
	lines := strings.Split(buf.String(), "\n")
	want := "2 12.5 0 3600.25 64 0.3333333333333333 1024 64 7200 2048.5 1 7 2 13 3 3010402 1 4.75"
	if got := lines[len(h.Lines)+1]; got != want {
		t.Errorf("job line\n got %q\nwant %q", got, want)
	}
}

func TestSWF_EmptyTraceWritesHeader(t *testing.T) {
	h, _ := sampleTrace(t)
	var buf bytes.Buffer
	if err := WriteAll(&buf, h, nil); err != nil {
		t.Fatal(err)
	}
	h2, jobs, err := ReadAll(&buf)
	if err != nil || len(jobs) != 0 || !reflect.DeepEqual(h2.Lines, h.Lines) {
		t.Fatalf("empty trace: %v, %d jobs, header %q", err, len(jobs), h2.Lines)
	}
}

func TestSWF_GzipIsReadByMagicBytes(t *testing.T) {
	h, jobs := sampleTrace(t)
	var plain, zipped bytes.Buffer
	if err := WriteAll(&plain, h, jobs); err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(&zipped)
	zw.Write(plain.Bytes())
	zw.Close()
	// A misleading name: gzip data in a .swf file, plain data in a .gz file.
	dir := t.TempDir()
	for name, data := range map[string][]byte{"gz-inside.swf": zipped.Bytes(), "plain.swf.gz": plain.Bytes()} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h2, jobs2, err := ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(jobs, jobs2) || !reflect.DeepEqual(h.Lines, h2.Lines) {
			t.Errorf("%s: read differs from what was written", name)
		}
	}
	if _, err := NewReader(bytes.NewReader([]byte{0x1f, 0x8b, 0, 0})); err == nil {
		t.Error("truncated gzip data read without error")
	}
}

// countJobLines counts the lines of an SWF file that are neither blank nor
// comments, independently of Reader.
func countJobLines(t *testing.T, path string) (jobs, comments int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch s := strings.TrimSpace(sc.Text()); {
		case s == "":
		case s[0] == ';':
			comments++
		default:
			jobs++
		}
	}
	return jobs, comments
}

func TestSWF_RealTracesParse(t *testing.T) {
	cases := []struct {
		path     string
		jobs     int // from ../shared/data/README.md
		maxProcs int
		maxJobs  int64
		first    Job
	}{
		{nasaTrace, 18239, 128, 42264, Job{ID: 1, Submit: 0, Wait: -1, Run: 1451, Procs: 128, CPU: -1, Memory: -1,
			ReqProcs: -1, ReqTime: -1, ReqMemory: -1, Status: -1, User: 1, Group: 1, Executable: -1, Queue: -1,
			Partition: -1, Preceding: -1, Think: -1}},
		{sdscTrace, 4961, 128, 73496, Job{ID: 1, Submit: 0, Wait: 864895, Run: -1, Procs: -1, CPU: -1, Memory: -1,
			ReqProcs: 64, ReqTime: 43200, ReqMemory: -1, Status: 5, User: 3, Group: 74, Executable: 12894, Queue: 4,
			Partition: -1, Preceding: -1, Think: -1}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			wantJobs, wantComments := countJobLines(t, c.path)
			if wantJobs != c.jobs {
				t.Fatalf("the file has %d job lines, README says %d", wantJobs, c.jobs)
			}
			h, jobs, err := ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != c.jobs {
				t.Errorf("read %d jobs, want %d", len(jobs), c.jobs)
			}
			if len(h.Lines) != wantComments {
				t.Errorf("header has %d lines, the file %d comment lines", len(h.Lines), wantComments)
			}
			if h.MaxProcs != c.maxProcs || h.MaxNodes != c.maxProcs || h.MaxJobs != c.maxJobs || h.MaxRecords != c.maxJobs {
				t.Errorf("header MaxProcs %d MaxNodes %d MaxJobs %d MaxRecords %d", h.MaxProcs, h.MaxNodes, h.MaxJobs, h.MaxRecords)
			}
			if h.TimeZoneString != "US/Pacific" {
				t.Errorf("TimeZoneString %q", h.TimeZoneString)
			}
			if jobs[0] != c.first {
				t.Errorf("first job\n got %+v\nwant %+v", jobs[0], c.first)
			}
			// The cleaned logs have gaps in their job numbers, never
			// disorder.
			for i := 1; i < len(jobs); i++ {
				if jobs[i].ID <= jobs[i-1].ID {
					t.Fatalf("job %d has number %d after %d", i, jobs[i].ID, jobs[i-1].ID)
				}
			}
			// Write the trace back and read it again: nothing lost.
			h2, jobs2 := roundTrip(t, h, jobs)
			if !reflect.DeepEqual(jobs, jobs2) || !reflect.DeepEqual(h.Lines, h2.Lines) {
				t.Error("the rewritten trace reads back differently")
			}
		})
	}
}

func TestSWF_NASAHeaderKeepsCopyrightAndNotes(t *testing.T) {
	h, _, err := ReadFile(nasaTrace)
	if err != nil {
		t.Fatal(err)
	}
	if h.Lines[0] != "; Version: 2.2" || h.Computer != "Intel iPSC/860" || h.Installation != "NASA Ames Research Center" {
		t.Errorf("header starts %q; Computer %q", h.Lines[0], h.Computer)
	}
	info, _ := h.Get("Information")
	if info != "http://www.nas.nasa.gov/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/" {
		t.Errorf("Information (with continuation) = %q", info)
	}
	if note, _ := h.Get("Note"); note != "There is no information on wait times - the given submit\ntimes are actually start times" {
		t.Errorf("first Note = %q", note)
	}
}

func TestSWF_MalformedLinesNameLineAndField(t *testing.T) {
	const head = "; Version: 2.2\n; MaxProcs: 8\n\n"
	good := "1 0 -1 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1"
	cases := []struct {
		name, body, want string
	}{
		{"too few fields", good + "\n2 5 -1 10 4", "line 5: 5 fields, want 18"},
		{"too many fields", good + " 7", "line 4: more than 18 fields"},
		{"not a number", strings.Replace(good, " 10 ", " ten ", 1), `line 4: field 4 (run time) "ten": not a number`},
		{"fractional processors", strings.Replace(good, " 4 -1", " 4.5 -1", 1), `line 4: field 5 (allocated processors) "4.5": not an integer`},
		{"NaN", good + "\n" + strings.Replace(good, " 20 ", " NaN ", 1), `line 5: field 9 (requested time) "NaN": not a finite number`},
		{"late bad line after comment", good + "\n; comment\n\n" + strings.Replace(good, " 1 1 1 ", " 1 x 1 ", 1), `line 7: field 12 (user) "x": not a number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadAll(strings.NewReader(head + c.body + "\n"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// Integral decimals are accepted in integer fields.
	_, jobs, err := ReadAll(strings.NewReader(strings.Replace(good, " 4 -1", " 4.0 -1", 1)))
	if err != nil || jobs[0].Procs != 4 {
		t.Errorf("\"4.0\" processors: %v, %+v", err, jobs)
	}
	if _, err := NewReader(strings.NewReader("; MaxProcs: many\n")); err == nil || !strings.Contains(err.Error(), "header line 1: MaxProcs") {
		t.Errorf("bad MaxProcs: %v", err)
	}
}

// lazyTrace produces an SWF trace of n jobs on demand and counts the bytes
// it has been asked for.
type lazyTrace struct {
	n, next int
	pending []byte
	served  int
}

func (l *lazyTrace) Read(p []byte) (int, error) {
	for len(l.pending) < len(p) && l.next < l.n {
		if l.next == 0 {
			l.pending = append(l.pending, "; MaxProcs: 4\n"...)
		}
		l.next++
		j := NewJob()
		j.ID, j.Submit, j.Run, j.Procs = int64(l.next), float64(l.next), 1, 1
		l.pending = appendJob(l.pending, j)
	}
	if len(l.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	l.served += n
	return n, nil
}

func TestReader_StreamsWithoutReadingAhead(t *testing.T) {
	src := &lazyTrace{n: 300_000} // about 12 MB of SWF
	r, err := NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().MaxProcs != 4 {
		t.Fatalf("header before any job: %+v", r.Header())
	}
	for i := range 1000 {
		j, err := r.Next()
		if err != nil || j.ID != int64(i+1) {
			t.Fatalf("job %d: %+v, %v", i, j, err)
		}
	}
	// The reader has pulled its buffers' worth, not the trace.
	if src.served > 256<<10 {
		t.Errorf("after 1000 jobs the reader has read %d bytes", src.served)
	}
	n := 1000
	for _, err := range r.All() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != src.n {
		t.Errorf("read %d jobs, want %d", n, src.n)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the end: %v", err)
	}
}

// roundTrip writes a trace as SWF text and reads it back, as a simulator
// would read it.
func roundTrip(t *testing.T, h Header, jobs []Job) (Header, []Job) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteAll(&buf, h, jobs); err != nil {
		t.Fatal(err)
	}
	h2, jobs2, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return h2, jobs2
}
