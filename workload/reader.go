package workload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
)

// Reader reads an SWF trace one job at a time, so a trace of any length
// needs memory for one line only. The input may be gzip-compressed: the
// Reader looks at the first two bytes (the gzip magic 1f 8b), not at a file
// name.
//
// The header (the comment lines before the first job) is read by NewReader
// and is available at once from Header. Comment lines after the first job
// are skipped; blank lines are skipped anywhere.
type Reader struct {
	sc     *bufio.Scanner
	gz     *gzip.Reader
	header Header
	line   int    // number of the last line read
	next   string // a job line read ahead while reading the header
	err    error  // sticky
}

// maxLine bounds a line of a trace; SWF lines are about 100 bytes.
const maxLine = 1 << 20

// NewReader reads the header of the SWF trace r. It fails if r is gzip data
// that does not decompress, or if a header field that msched parses (MaxProcs,
// MaxJobs, …) is not a number.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64*1024)
	rd := &Reader{}
	src := io.Reader(br)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("workload: swf: gzip: %w", err)
		}
		rd.gz = gz
		src = gz
	}
	rd.sc = bufio.NewScanner(src)
	rd.sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var lines []string
	for rd.sc.Scan() {
		rd.line++
		s := rd.sc.Text()
		t := strings.TrimSpace(s)
		if t == "" {
			continue
		}
		if t[0] != ';' {
			rd.next = s
			break
		}
		lines = append(lines, strings.TrimRight(s, "\r"))
	}
	if err := rd.sc.Err(); err != nil {
		return nil, fmt.Errorf("workload: swf line %d: %w", rd.line+1, err)
	}
	h, err := ParseHeader(lines)
	if err != nil {
		return nil, err
	}
	rd.header = h
	return rd, nil
}

// Header returns the trace's header.
func (r *Reader) Header() Header { return r.header }

// Line returns the number of the last line read (1-based, counting comment
// and blank lines), for messages about the job Next returned last.
func (r *Reader) Line() int { return r.line }

// Next returns the next job, or io.EOF after the last one. A malformed line
// gives an error naming the line and the field; the error is sticky.
func (r *Reader) Next() (Job, error) {
	if r.err != nil {
		return Job{}, r.err
	}
	for {
		var s string
		var n int
		if r.next != "" {
			s, r.next, n = r.next, "", r.line
		} else {
			if !r.sc.Scan() {
				r.err = io.EOF
				if err := r.sc.Err(); err != nil {
					r.err = fmt.Errorf("workload: swf line %d: %w", r.line+1, err)
				}
				return Job{}, r.err
			}
			r.line++
			s, n = r.sc.Text(), r.line
		}
		t := strings.TrimSpace(s)
		if t == "" || t[0] == ';' {
			continue
		}
		j, err := parseJob(t, n)
		if err != nil {
			r.err = err
			return Job{}, err
		}
		return j, nil
	}
}

// All iterates over the remaining jobs. It stops after the first error,
// which it yields with a zero Job; io.EOF is not yielded.
func (r *Reader) All() iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for {
			j, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(j, err) || err != nil {
				return
			}
		}
	}
}

// Close releases the gzip decompressor, if any; it does not close the
// underlying reader.
func (r *Reader) Close() error {
	if r.gz != nil {
		return r.gz.Close()
	}
	return nil
}

// ReadAll reads a whole SWF trace into memory.
func ReadAll(r io.Reader) (Header, []Job, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Header{}, nil, err
	}
	defer rd.Close()
	var jobs []Job
	for j, err := range rd.All() {
		if err != nil {
			return rd.Header(), jobs, err
		}
		jobs = append(jobs, j)
	}
	return rd.Header(), jobs, nil
}

// ReadFile reads the SWF trace (plain or gzip) at path into memory.
func ReadFile(path string) (Header, []Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	h, jobs, err := ReadAll(f)
	if err != nil {
		return h, jobs, fmt.Errorf("%s: %w", path, err)
	}
	return h, jobs, nil
}

// Slice iterates over jobs held in memory, in the form Characterise takes.
func Slice(jobs []Job) iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for _, j := range jobs {
			if !yield(j, nil) {
				return
			}
		}
	}
}
