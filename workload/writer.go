package workload

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Writer writes an SWF trace: the header's comment lines verbatim, then one
// line per job. Output is buffered; call Flush at the end.
type Writer struct {
	bw          *bufio.Writer
	buf         []byte
	wroteHeader bool
	header      Header
}

// NewWriter returns a Writer that writes h's lines before the first job
// (or at Flush, for a trace with no jobs).
func NewWriter(w io.Writer, h Header) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 64*1024), header: h}
}

func (w *Writer) writeHeader() error {
	if w.wroteHeader {
		return nil
	}
	w.wroteHeader = true
	for _, l := range w.header.Lines {
		if !strings.HasPrefix(strings.TrimLeft(l, " \t"), ";") {
			l = "; " + l
		}
		if _, err := w.bw.WriteString(l + "\n"); err != nil {
			return fmt.Errorf("workload: write swf: %w", err)
		}
	}
	return nil
}

// Write writes one job line.
func (w *Writer) Write(j Job) error {
	if err := w.writeHeader(); err != nil {
		return err
	}
	w.buf = appendJob(w.buf[:0], j)
	if _, err := w.bw.Write(w.buf); err != nil {
		return fmt.Errorf("workload: write swf: %w", err)
	}
	return nil
}

// Flush writes the header if no job did, and any buffered output.
func (w *Writer) Flush() error {
	if err := w.writeHeader(); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("workload: write swf: %w", err)
	}
	return nil
}

// WriteAll writes a whole trace: h, then jobs.
func WriteAll(w io.Writer, h Header, jobs []Job) error {
	sw := NewWriter(w, h)
	for _, j := range jobs {
		if err := sw.Write(j); err != nil {
			return err
		}
	}
	return sw.Flush()
}
