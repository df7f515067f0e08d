package models

import (
	"bufio"
	"context"
	"io"
	"os"
	"testing"
	"time"
)

// FuzzModelReplies plays a model program that answers with arbitrary
// bytes (the client side: msched talking to an external model). The
// handshake and a prediction must not panic and must end (a reply line is
// bounded, the pipes have deadlines); parameters the handshake accepts
// have valid names.
func FuzzModelReplies(f *testing.F) {
	f.Add([]byte("T1 8\nf 0\nC_com -\n.\nok\nok\n9\n"))
	f.Add([]byte("T1 8\n.\nerror: no such thing\nok\nNaN\n"))
	f.Add([]byte(".\nok\r\nok\n1e400\n"))
	f.Add([]byte("x y z\n"))
	f.Add([]byte("error: broken\n"))
	f.Add([]byte("T1 8"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		drained := make(chan struct{})
		go func() { io.Copy(io.Discard, inR); inR.Close(); close(drained) }()
		go func() { outW.Write(data); outW.Close() }()
		done := make(chan struct{})
		close(done) // "reaped": there is no process
		p := &proc{pid: 1 << 30, in: inW, out: outR, stderr: &tailBuffer{}, done: done}
		p.br, p.bw = bufio.NewReader(outR), bufio.NewWriter(inW)
		defer func() { p.closePipes(); <-drained }()
		ctx := context.Background()
		ps, err := p.list(ctx, 5*time.Second)
		if err != nil {
			return
		}
		for _, prm := range ps {
			if !ValidName(prm.Name) {
				t.Fatalf("list accepted the parameter name %q", prm.Name)
			}
		}
		want := map[string]float64{}
		for i, prm := range ps {
			want[prm.Name] = float64(i)
		}
		p.do(ctx, 5*time.Second, request{want: want, hosts: "generic:hardware/CPU_LOAD=0"})
	})
}
