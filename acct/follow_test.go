package acct

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func line(jid string) string {
	return fmt.Sprintf(`{"jid":%q,"state":"exited","swf_status":1}`+"\n", jid)
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// rotate does to path what the reaper's rotation does (daemons/
// retention.go, rotateFile): generations move up (the one past keep is
// deleted), path is linked to path.1 (with keep > 0), and a new file,
// holding the copies of carried's records, replaces path by a rename.
func rotate(t *testing.T, path string, keep int, carried ...string) {
	t.Helper()
	moveUp(path, keep)
	if keep > 0 {
		if err := os.Link(path, path+".1"); err != nil {
			t.Fatal(err)
		}
	}
	replace(t, path, carried...)
}

// moveUp is a rotation's first step: the generation past keep is deleted,
// the others move up one.
func moveUp(path string, keep int) {
	gen := func(i int) string { return path + "." + strconv.Itoa(i) }
	if keep > 0 {
		os.Remove(gen(keep))
		for i := keep - 1; i >= 1; i-- {
			os.Rename(gen(i), gen(i+1))
		}
	}
}

// replace is a rotation's last step: a new log with copies of carried's
// records replaces path.
func replace(t *testing.T, path string, carried ...string) {
	t.Helper()
	var b strings.Builder
	for _, jid := range carried {
		b.WriteString(line(jid))
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// seen collects what a follower gives: JIDs, copies marked "JID(copy)".
type seen struct {
	got  []string
	last Pos
}

func (s *seen) fn(f Followed) error {
	name := f.JID
	if f.Copy {
		name += "(copy)"
	}
	s.got = append(s.got, name)
	s.last = f.Next
	return nil
}

// take returns what was given since the last take.
func (s *seen) take() string {
	out := strings.Join(s.got, " ")
	s.got = nil
	return out
}

func poll(t *testing.T, fl *follower, s *seen) string {
	t.Helper()
	if err := fl.poll(context.Background(), s.fn); err != nil {
		t.Fatal(err)
	}
	return s.take()
}

func startAt(t *testing.T, path string, from Pos) *follower {
	t.Helper()
	fl := &follower{path: path}
	if err := fl.start(context.Background(), from); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fl.close)
	return fl
}

// following starts a log with the records of jids and a follower that has
// read them.
func following(t *testing.T, jids ...string) (path string, fl *follower, s *seen) {
	t.Helper()
	path = filepath.Join(t.TempDir(), JSONL)
	for _, jid := range jids {
		appendTo(t, path, line(jid))
	}
	s = new(seen)
	fl = startAt(t, path, Pos{})
	poll(t, fl, s)
	return path, fl, s
}

// A rotation loses nothing and gives nothing twice: the records appended
// to the old log after the last read are read from it before the new log,
// whose copies of old records are marked; without a rotation the follower
// gives what was appended, whole lines only.
func TestFollow_AcrossRotation(t *testing.T) {
	path, fl, s := following(t)
	if got := poll(t, fl, s); got != "" {
		t.Fatalf("no log yet: got %q", got)
	}
	appendTo(t, path, line("J1")+"not a record\n"+line("J2")+`{"jid":"J3","sta`)
	if got := poll(t, fl, s); got != "J1 J2" {
		t.Fatalf("got %q, want J1 J2 (junk skipped, the torn line not yet whole)", got)
	}
	appendTo(t, path, `te":"exited","swf_status":1}`+"\n")
	rotate(t, path, 2, "J2", "J3") // J3: appended after the last read
	appendTo(t, path, line("J4"))
	if got := poll(t, fl, s); got != "J3 J2(copy) J3(copy) J4" {
		t.Fatalf("across the rotation: got %q, want J3 J2(copy) J3(copy) J4", got)
	}
	appendTo(t, path, line("J2x")) // a JID of no earlier generation: no copy
	if got := poll(t, fl, s); got != "J2x" {
		t.Fatalf("got %q, want J2x", got)
	}
	if got := poll(t, fl, s); got != "" {
		t.Fatalf("nothing new: got %q", got)
	}
}

// A follower stopped before a rotation (or two) resumes, from its stored
// position, in the generation it was reading, and goes on through the
// newer ones; a position in a file that is gone resumes in the live log,
// at its offset if the log is that long, else from its start.
func TestFollow_ResumesInTheRotatedGeneration(t *testing.T) {
	path, fl, s := following(t, "J0", "J1", "J2")
	afterJ2 := s.last // 135 bytes, longer than the live log below
	fl.close()

	appendTo(t, path, line("J3"))
	rotate(t, path, 3, "J3")
	appendTo(t, path, line("J4"))
	rotate(t, path, 3, "J4")
	appendTo(t, path, line("J5"))

	back := ParsePos(afterJ2.Bytes())
	if back != afterJ2 {
		t.Fatalf("Bytes/ParsePos: %+v, want %+v", back, afterJ2)
	}
	if got := poll(t, startAt(t, path, back), s); got != "J3 J3(copy) J4 J4(copy) J5" {
		t.Fatalf("resumed two rotations later: got %q", got)
	}

	// The same position once its file has been deleted: the live log is
	// shorter than its offset, so from the live log's start.
	os.Remove(path + ".2")
	if got := poll(t, startAt(t, path, afterJ2), s); got != "J4 J5" {
		t.Fatalf("resumed in a deleted file: got %q, want the live log, J4 J5", got)
	}
	// An 8-byte offset, as the profiler stored it before positions named
	// their file, is an offset in the live log.
	legacy := binary.LittleEndian.AppendUint64(nil, uint64(len(line("J4"))))
	if got := poll(t, startAt(t, path, ParsePos(legacy)), s); got != "J5" {
		t.Fatalf("from an 8-byte offset after J4: got %q, want J5", got)
	}
	// A stored offset that no write made (a corrupt store): negative once
	// decoded, it is no position.
	for _, b := range [][]byte{binary.LittleEndian.AppendUint64(nil, 1<<63), Pos{Ino: 7, Offset: -5}.Bytes()} {
		if p := ParsePos(b); p != (Pos{}) {
			t.Errorf("ParsePos(%x) = %+v, want the zero Pos", b, p)
		}
	}
}

// With no generations kept the old log is deleted at the rotation; the
// follower still reads its end from the file it has open.
func TestFollow_RotationKeepingNothing(t *testing.T) {
	path, fl, s := following(t, "J1")
	appendTo(t, path, line("J2"))
	rotate(t, path, 0, "J2")
	appendTo(t, path, line("J3"))
	if got := poll(t, fl, s); got != "J2 J2(copy) J3" {
		t.Fatalf("got %q, want J2 J2(copy) J3", got)
	}
}

// Follow itself: it waits for the log, gives records as they come, across
// a rotation, and returns nil when its context ends.
func TestFollow_UntilCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), JSONL)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Followed, 16)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, Pos{}, 5*time.Millisecond, 0, func(fs []Followed) error {
			for _, f := range fs {
				got <- f
			}
			return nil
		})
	}()
	want := func(jid string, copied bool) {
		t.Helper()
		select {
		case f := <-got:
			if f.JID != jid || f.Copy != copied {
				t.Fatalf("got %s (copy %v), want %s (copy %v)", f.JID, f.Copy, jid, copied)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10 s", jid)
		}
	}
	appendTo(t, path, line("J1"))
	want("J1", false)
	rotate(t, path, 1, "J1")
	appendTo(t, path, line("J2"))
	want("J1", true)
	want("J2", false)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Fatalf("given more: %s", (<-got).JID)
	}
}

// An error from fn stops Follow with it.
func TestFollow_ReturnsFnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), JSONL)
	appendTo(t, path, line("J1"))
	boom := fmt.Errorf("boom")
	err := Follow(context.Background(), path, Pos{}, time.Hour, 0, func([]Followed) error { return boom })
	if err != boom {
		t.Fatalf("got %v, want boom", err)
	}
}

// Batches: at most batch records each, in order, and a look's records are
// given when the look ends, not held for the next; fn's error on a full
// batch, in the middle of a look, stops Follow with it.
func TestFollow_Batches(t *testing.T) {
	path := filepath.Join(t.TempDir(), JSONL)
	for i := 1; i <= 5; i++ {
		appendTo(t, path, line(fmt.Sprintf("J%d", i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, Pos{}, 5*time.Millisecond, 2, func(fs []Followed) error {
			var b []string
			for _, f := range fs {
				b = append(b, f.JID)
			}
			got <- strings.Join(b, " ")
			return nil
		})
	}()
	want := func(batch string) {
		t.Helper()
		select {
		case b := <-got:
			if b != batch {
				t.Fatalf("batch %q, want %q", b, batch)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no batch %q within 10 s", batch)
		}
	}
	want("J1 J2")
	want("J3 J4")
	want("J5") // the end of the look
	appendTo(t, path, line("J6"))
	want("J6")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	boom, calls := fmt.Errorf("boom"), 0
	err := Follow(context.Background(), path, Pos{}, time.Hour, 4, func(fs []Followed) error {
		calls++
		if len(fs) != 4 || fs[0].JID != "J1" {
			t.Errorf("first batch of %d, from %s", len(fs), fs[0].JID)
		}
		return boom
	})
	if err != boom || calls != 1 {
		t.Fatalf("got %v after %d calls, want boom after 1", err, calls)
	}
}

// A rotation seen half done: the generations have moved up (the file read
// is now .3, the next .2, and .1 is not there yet) while the live log is
// still the one after. The follower goes through them in turn, and later
// into the rotation's new log.
func TestFollow_HalfDoneRotation(t *testing.T) {
	path, fl, s := following(t, "C1")
	appendTo(t, path, line("C2"))
	rotate(t, path, 3)
	appendTo(t, path, line("B1"))
	rotate(t, path, 3, "B1")
	appendTo(t, path, line("A1"))
	moveUp(path, 3) // C is .3, B .2; .1 missing
	if got := poll(t, fl, s); got != "C2 B1 B1(copy) A1" {
		t.Fatalf("during the rotation: got %q, want C2 B1 B1(copy) A1", got)
	}
	if err := os.Link(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	replace(t, path, "A1")
	appendTo(t, path, line("N1"))
	if got := poll(t, fl, s); got != "A1(copy) N1" {
		t.Fatalf("after it: got %q, want A1(copy) N1", got)
	}
}

// A file deleted while it is read (rotated past keep: here two rotations
// behind, keep 2) is read to its end from the open file, then the oldest
// generation written after it, and on through the newer ones.
func TestFollow_DeletedWhileRead(t *testing.T) {
	path, fl, s := following(t, "C1")
	// A generation left from a larger keep, older than every other file:
	// not the one after C.
	old := time.Now().Add(-time.Hour)
	appendTo(t, path+".5", line("OLD1"))
	if err := os.Chtimes(path+".5", old, old); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, line("C2"))
	rotate(t, path, 2)
	appendTo(t, path, line("B1"))
	rotate(t, path, 2)
	appendTo(t, path, line("A1"))
	rotate(t, path, 2) // C, .2, deleted
	appendTo(t, path, line("N1"))
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Fatal("the test's rotation kept three generations")
	}
	if got := poll(t, fl, s); got != "C2 B1 A1 N1" {
		t.Fatalf("got %q, want C2 B1 A1 N1", got)
	}
}

// A follower stopped among a new generation's copies resumes marking the
// rest of them as copies.
func TestFollow_ResumesAmongCopies(t *testing.T) {
	path, fl, s := following(t, "A1", "A2")
	rotate(t, path, 1, "A1", "A2")
	appendTo(t, path, line("N1"))
	stopAtFirstCopy(t, fl, s, "A1(copy)")
	if got := poll(t, startAt(t, path, ParsePos(s.last.Bytes())), s); got != "A2(copy) N1" {
		t.Fatalf("resumed: got %q, want A2(copy) N1", got)
	}
}

// The reaper cuts an append whose fsync failed and writes the record again
// later: the follower, which gave the record before the cut, reads on from
// the cut and does not give it again.
func TestFollow_CutAndWrittenAgain(t *testing.T) {
	path, fl, s := following(t, "J1")
	appendTo(t, path, line("J2"))
	if got := poll(t, fl, s); got != "J2" {
		t.Fatalf("got %q, want J2", got)
	}
	if err := os.Truncate(path, int64(len(line("J1")))); err != nil {
		t.Fatal(err)
	}
	if got := poll(t, fl, s); got != "" {
		t.Fatalf("after the cut: got %q", got)
	}
	appendTo(t, path, line("J2")+line("J3"))
	if got := poll(t, fl, s); got != "J3" {
		t.Fatalf("after J2 was written again: got %q, want J3", got)
	}
}

// A spool copied elsewhere (the files' inodes differ): a stored position
// finds its file again by its first line.
func TestFollow_ResumesInACopiedSpool(t *testing.T) {
	path, _, s := following(t, "J1", "J2")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), JSONL)
	if err := os.WriteFile(moved, append(b, line("J3")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := poll(t, startAt(t, moved, s.last), s); got != "J3" {
		t.Fatalf("got %q, want J3", got)
	}
}

// The reaper appends its last record to a file and rotates it between the
// follower's read of the file and its look for a new one: the follower
// reads that record from the old file before it moves on.
func TestFollow_RotationBetweenReadAndLook(t *testing.T) {
	path, fl, s := following(t, "J1")
	testHookRead = func() {
		testHookRead = func() {}
		appendTo(t, path, line("J2"))
		rotate(t, path, 1, "J2")
	}
	t.Cleanup(func() { testHookRead = func() {} })
	if got := poll(t, fl, s); got != "J2 J2(copy)" {
		t.Fatalf("got %q, want J2 J2(copy)", got)
	}
}

// stopAtFirstCopy polls fl until it gives a copy, and stops there (as a
// reader stopped at that instant would); want is what it gave.
func stopAtFirstCopy(t *testing.T, fl *follower, s *seen, want string) {
	t.Helper()
	stop := errors.New("stop")
	err := fl.poll(context.Background(), func(f Followed) error {
		s.fn(f)
		if f.Copy {
			return stop
		}
		return nil
	})
	if got := s.take(); !errors.Is(err, stop) || got != want || !s.last.Copies {
		t.Fatalf("stopped after %q (%v) at %+v, want after %s, among the copies", got, err, s.last, want)
	}
}

// A cut seen only after a restart (the stored position is past the log's
// end): reading goes on from the end, not from the log's start; the cut
// record, written back, is given again.
func TestFollow_CutFoundAfterRestart(t *testing.T) {
	path, fl, s := following(t, "J1", "J2", "J3")
	fl.close()
	if err := os.Truncate(path, 2*int64(len(line("J1")))); err != nil {
		t.Fatal(err)
	}
	fl = startAt(t, path, ParsePos(s.last.Bytes()))
	if got := poll(t, fl, s); got != "" {
		t.Fatalf("after the cut: got %q, want nothing (not the log again)", got)
	}
	appendTo(t, path, line("J3")+line("J4"))
	if got := poll(t, fl, s); got != "J3 J4" {
		t.Fatalf("got %q, want J3 J4", got)
	}
}

// A batch of records given, cut, and written back in another order before
// the follower looks again (the log no shorter than what was read): the
// follower reads on from the first record no longer where it was, and
// gives only what it had not given.
func TestFollow_CutBatchWrittenBackInAnotherOrder(t *testing.T) {
	path, fl, s := following(t, "J00")
	var batch, back []string
	for i := 1; i <= 20; i++ {
		batch = append(batch, fmt.Sprintf("J%02d", i))
	}
	for _, j := range batch {
		appendTo(t, path, line(j))
	}
	if got := poll(t, fl, s); got != strings.Join(batch, " ") {
		t.Fatalf("got %q", got)
	}
	if err := os.Truncate(path, int64(len(line("J00")))); err != nil {
		t.Fatal(err)
	}
	back = append(back, "J21", "J02", "J01")
	back = append(back, batch[2:]...)
	back = append(back, "J22")
	for _, j := range back {
		appendTo(t, path, line(j))
	}
	if got := poll(t, fl, s); got != "J21 J22" {
		t.Fatalf("got %q, want J21 J22", got)
	}
}

// Resumed among a new log's copies while the next rotation is half done
// (the live log already linked to .1, not yet replaced): the copies are
// marked against the generation before it, not against itself.
func TestFollow_ResumesAmongCopiesDuringARotation(t *testing.T) {
	path, fl, s := following(t, "B1", "B2")
	rotate(t, path, 3, "B1", "B2")
	appendTo(t, path, line("A1"))
	stopAtFirstCopy(t, fl, s, "B1(copy)")
	moveUp(path, 3) // B is .2
	if err := os.Link(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if got := poll(t, startAt(t, path, ParsePos(s.last.Bytes())), s); got != "B2(copy) A1" {
		t.Fatalf("resumed: got %q, want B2(copy) A1", got)
	}
}

// In a copied spool two generations begin with the same line (a record
// carried by a rotation): the stored file is the one that also holds the
// last line read at the stored offset.
func TestFollow_TwoFilesBeginAlike(t *testing.T) {
	path, _, s := following(t, "K1", "K2", "K3")
	rotate(t, path, 1, "K1")
	appendTo(t, path, line("K4"))
	moved := filepath.Join(t.TempDir(), JSONL)
	for _, name := range []string{"", ".1"} {
		b, err := os.ReadFile(path + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(moved+name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := poll(t, startAt(t, moved, ParsePos(s.last.Bytes())), s); got != "K1(copy) K4" {
		t.Fatalf("got %q, want the rest of .1 (nothing), then the live log: K1(copy) K4", got)
	}
}

// The log is rotated between start's listing of its files and its opening
// of the one it resumes in: start lists them again.
func TestFollow_RotationWhileStarting(t *testing.T) {
	path, fl, s := following(t, "A1")
	fl.close()
	appendTo(t, path, line("A2"))
	testHookListed = func() {
		testHookListed = func() {}
		rotate(t, path, 1, "A1", "A2")
		appendTo(t, path, line("N1"))
	}
	t.Cleanup(func() { testHookListed = func() {} })
	if got := poll(t, startAt(t, path, ParsePos(s.last.Bytes())), s); got != "A2 A1(copy) A2(copy) N1" {
		t.Fatalf("got %q, want A2 A1(copy) A2(copy) N1", got)
	}
}

// A file moved away while it is read (its name is none of the log's, but
// it still has one): after a few looks the follower takes it as gone and
// goes on in the oldest generation written after it.
func TestFollow_FileMovedAway(t *testing.T) {
	path, fl, s := following(t, "B1")
	rotate(t, path, 1)
	appendTo(t, path, line("A1"))
	if err := os.Rename(path+".1", filepath.Join(filepath.Dir(path), "archived")); err != nil {
		t.Fatal(err)
	}
	for i := range lostLooks {
		if got := poll(t, fl, s); got != "" {
			t.Fatalf("look %d: got %q, want nothing yet (a rename may be under way)", i+1, got)
		}
	}
	if got := poll(t, fl, s); got != "A1" {
		t.Fatalf("got %q, want A1", got)
	}
}

// The reaper's cut on a failing disk, in the ways the follower may see it;
// every record given once, none lost.
func TestFollow_Cuts(t *testing.T) {
	cutTo := func(t *testing.T, path string, records int) {
		t.Helper()
		if err := os.Truncate(path, int64(records*len(line("J0")))); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("seen several looks later, written back in another order", func(t *testing.T) {
		path, fl, s := following(t, "J0")
		appendTo(t, path, line("J1")+line("J2"))
		poll(t, fl, s)
		poll(t, fl, s)
		poll(t, fl, s)
		cutTo(t, path, 1)
		appendTo(t, path, line("J3")+line("J2")+line("J1")+line("J4"))
		if got := poll(t, fl, s); got != "J3 J4" {
			t.Fatalf("got %q, want J3 J4", got)
		}
	})
	t.Run("a look between the cut and the write-back", func(t *testing.T) {
		path, fl, s := following(t, "J0", "J1", "J2")
		cutTo(t, path, 1)
		poll(t, fl, s)
		appendTo(t, path, line("J3")+line("J1")+line("J2")+line("J4"))
		if got := poll(t, fl, s); got != "J3 J4" {
			t.Fatalf("got %q, want J3 J4", got)
		}
	})
	t.Run("cut again after the write-back", func(t *testing.T) {
		path, fl, s := following(t, "J0", "J1", "J2")
		cutTo(t, path, 1)
		poll(t, fl, s)
		appendTo(t, path, line("J1")+line("J2"))
		poll(t, fl, s)
		cutTo(t, path, 1)
		poll(t, fl, s)
		appendTo(t, path, line("J3")+line("J1")+line("J2"))
		if got := poll(t, fl, s); got != "J3" {
			t.Fatalf("got %q, want J3", got)
		}
	})
	t.Run("then a rotation", func(t *testing.T) {
		path, fl, s := following(t, "J0", "J5")
		cutTo(t, path, 1)
		poll(t, fl, s)
		rotate(t, path, 1)
		appendTo(t, path, line("J5")+line("J6"))
		if got := poll(t, fl, s); got != "J5(copy) J6" {
			t.Fatalf("got %q, want J5(copy) J6 (J5 was given before the cut)", got)
		}
	})
}

// A record carried through two rotations heads three generations: the
// stored file is found by its inode, not taken for ambiguous.
func TestFollow_ThreeGenerationsBeginAlike(t *testing.T) {
	path, fl, s := following(t, "K", "A1", "A2")
	fl.close()
	rotate(t, path, 3, "K")
	appendTo(t, path, line("B1"))
	rotate(t, path, 3, "K")
	appendTo(t, path, line("C1"))
	if got := poll(t, startAt(t, path, ParsePos(s.last.Bytes())), s); got != "K(copy) B1 K(copy) C1" {
		t.Fatalf("got %q, want K(copy) B1 K(copy) C1", got)
	}
}

// A cut while the reader was stopped, written over with longer records:
// the stored offset now falls inside a line, and reading goes on from that
// line's start (skipping into it would lose its record).
func TestFollow_CutWhileStoppedOffsetInALine(t *testing.T) {
	path, fl, s := following(t, "J0", "J1", "J2")
	fl.close()
	if err := os.Truncate(path, int64(len(line("J0")))); err != nil {
		t.Fatal(err)
	}
	long := func(jid string) string {
		return fmt.Sprintf(`{"jid":%q,"name":"a longer record","state":"exited","swf_status":1}`+"\n", jid)
	}
	appendTo(t, path, long("J3")+long("J4"))
	if got := poll(t, startAt(t, path, ParsePos(s.last.Bytes())), s); got != "J4" {
		t.Fatalf("got %q, want J4 (J3 ends before the stored offset: taken as read)", got)
	}
}

// BenchmarkFollow_CatchUp reads a log of 200,000 records (about 64 MiB,
// retention.accounting_bytes' default) from its start, as a fresh reader
// does, and then looks once more (the check of what was read).
func BenchmarkFollow_CatchUp(b *testing.B) {
	path := filepath.Join(b.TempDir(), JSONL)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	pad := strings.Repeat("x", 250)
	for i := range 200000 {
		fmt.Fprintf(w, `{"jid":"J%06d","name":"%s","state":"exited","swf_status":1}`+"\n", i, pad)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.ResetTimer()
	for range b.N {
		fl := &follower{path: path}
		n := 0
		count := func(Followed) error { n++; return nil }
		if err := fl.poll(context.Background(), count); err != nil {
			b.Fatal(err)
		}
		if err := fl.poll(context.Background(), count); err != nil {
			b.Fatal(err)
		}
		fl.close()
		if n != 200000 {
			b.Fatalf("%d records", n)
		}
	}
}

// A restart while the log is rotated between start's listing of its files
// and its look at them: start lists them again, and finds the file it was
// reading (now .2), then goes through the newer ones.
func TestFollow_RotationWhileStartingTwoBehind(t *testing.T) {
	path, fl, s := following(t, "A1", "A2")
	fl.close()
	rotate(t, path, 3, "A2")
	appendTo(t, path, line("B1"))
	testHookListed = func() {
		testHookListed = func() {}
		rotate(t, path, 3)
		appendTo(t, path, line("C1"))
	}
	t.Cleanup(func() { testHookListed = func() {} })
	if got := poll(t, startAt(t, path, ParsePos(s.last.Bytes())), s); got != "A2(copy) B1 C1" {
		t.Fatalf("got %q, want A2(copy) B1 C1", got)
	}
}

// The reaper cuts the log while the follower gives what it read (fn may
// take long: the profiler's write is fsynced), and writes it back, maybe
// before the follower's look ends: the cut is seen from the bytes that
// were read, not from what the file holds after.
func TestFollow_CutWhileGiving(t *testing.T) {
	for _, back := range []string{"later", "at once"} {
		path, fl, s := following(t, "J0")
		appendTo(t, path, line("J1")+line("J2"))
		writeBack := func() { appendTo(t, path, line("J3")+line("J2")+line("J1")+line("J4")) }
		err := fl.poll(context.Background(), func(f Followed) error {
			s.fn(f)
			if f.JID == "J2" {
				if err := os.Truncate(path, int64(len(line("J0")))); err != nil {
					t.Fatal(err)
				}
				if back == "at once" {
					writeBack()
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if back == "later" {
			writeBack()
		}
		// Each once, in whatever looks: written back at once, J4 comes in
		// the first look (read on past the cut) and J3 in the second.
		got := strings.Fields(s.take() + " " + poll(t, fl, s))
		slices.Sort(got)
		if !slices.Equal(got, []string{"J1", "J2", "J3", "J4"}) {
			t.Fatalf("written back %s: got %v, want J1 J2 J3 J4 once each", back, got)
		}
	}
}
