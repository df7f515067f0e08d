package hoststat

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHealth_RoundTrip(t *testing.T) {
	dir := t.TempDir()
	down, err := Down(dir)
	if err != nil || len(down) != 0 {
		t.Fatalf("no health directory yet: %v %v", down, err)
	}
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	long := strings.Repeat("n", 300) + "/cpu0"
	hosts := []string{"here/cpu0", "here/cpu1", "ws", ".hidden", "..", "a%2Fb", "a/b", "x:y@z", long, long[:299] + "m/cpu0"}
	for i, h := range hosts {
		if err := MarkDown(dir, h, "ssh: connect to host "+h+": Connection refused\n", t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("mark %q down: %v", h, err)
		}
	}
	down, err = Down(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(down) != len(hosts) {
		t.Fatalf("%d down, want %d: %v", len(down), len(hosts), down)
	}
	for i, h := range hosts {
		d := down[h]
		if d.Host != h || !d.Since.Equal(t0.Add(time.Duration(i)*time.Second)) || d.Reason != "ssh: connect to host "+h+": Connection refused" {
			t.Errorf("%q: %+v", h, d)
		}
	}
	es, _ := os.ReadDir(filepath.Join(dir, HealthDir))
	for _, e := range es {
		if n := e.Name(); strings.ContainsAny(n, "/") || n[0] == '.' || len(n) > maxHealthName {
			t.Errorf("file name %q", n)
		}
	}

	// Down again: Since stays, the reason is the newer one.
	if err := MarkDown(dir, "ws", "host key refused", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// An older failure arriving late changes nothing.
	if err := MarkDown(dir, "ws", "stale", t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	down, _ = Down(dir)
	if d := down["ws"]; !d.Since.Equal(t0.Add(2*time.Second)) || !d.Last.Equal(t0.Add(time.Minute)) || d.Reason != "host key refused" {
		t.Errorf("ws after a second failure: %+v", d)
	}

	// A probe that began before the last failure does not bring it up.
	if ok, err := MarkUp(dir, "ws", t0.Add(59*time.Second)); ok || err != nil {
		t.Errorf("stale probe: removed %v, %v", ok, err)
	}
	if ok, err := MarkUp(dir, "ws", t0.Add(2*time.Minute)); !ok || err != nil {
		t.Errorf("fresh probe: removed %v, %v", ok, err)
	}
	if ok, err := MarkUp(dir, "ws", t0.Add(3*time.Minute)); ok || err != nil {
		t.Errorf("up host marked up: removed %v, %v", ok, err)
	}
	for _, h := range hosts {
		if _, err := MarkUp(dir, h, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if down, err := Down(dir); err != nil || len(down) != 0 {
		t.Errorf("all up: %v %v", down, err)
	}
	if MarkDown(dir, "", "x", t0) == nil {
		t.Error("empty host name accepted")
	}
}

// Files that are not records of the host their name says are passed over:
// a temporary of a writer, a file copied under another name, garbage.
func TestHealth_SkipsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	if err := MarkDown(dir, "a/b", "x", time.Now()); err != nil {
		t.Fatal(err)
	}
	hd := filepath.Join(dir, HealthDir)
	data, _ := os.ReadFile(filepath.Join(hd, healthName("a/b")))
	for name, content := range map[string][]byte{".a%2Fb.123": data, "other": data, "junk": []byte("{"), "empty": nil} {
		if err := os.WriteFile(filepath.Join(hd, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	down, err := Down(dir)
	if err != nil || len(down) != 1 || down["a/b"].Reason != "x" {
		t.Errorf("down %v %v", down, err)
	}
}

func TestHealth_NameEscaping(t *testing.T) {
	for host, want := range map[string]string{
		"here/cpu0": "here%2Fcpu0",
		".x":        "%2Ex",
		"a.b":       "a.b",
		"100%":      "100%25",
		"ü":         "%C3%BC",
	} {
		if got := healthName(host); got != want {
			t.Errorf("healthName(%q) = %q, want %q", host, got, want)
		}
	}
	a, b := strings.Repeat("x", 400), strings.Repeat("x", 399)+"y"
	if healthName(a) == healthName(b) || len(healthName(a)) != maxHealthName {
		t.Errorf("long names: %q %q", healthName(a), healthName(b))
	}
}

// Two writers (run and stats) at once: every record stays whole.
func TestHealth_ConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				at := time.Now()
				if err := MarkDown(dir, "h/0", "down", at); err != nil {
					t.Error(err)
					return
				}
				if _, err := MarkUp(dir, "h/0", at.Add(time.Millisecond)); err != nil {
					t.Error(err)
					return
				}
				if _, err := Down(dir); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestHealth_ReasonIsOneBoundedLine(t *testing.T) {
	if got := cleanReason("  a\r\nb\n\nc  "); got != "a; b; c" {
		t.Errorf("got %q", got)
	}
	long := cleanReason(strings.Repeat("é", maxReason))
	if len(long) > maxReason+len("…") || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "é") {
		t.Errorf("long reason %d bytes", len(long))
	}
}
