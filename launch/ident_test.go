package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// withDB points LookupIdentity at fixture databases and a fake getent for
// the test's duration.
func withDB(t *testing.T, passwd, group, getent string) {
	t.Helper()
	dir := t.TempDir()
	oldP, oldG, oldE := passwdFile, groupFile, getentPath
	t.Cleanup(func() { passwdFile, groupFile, getentPath = oldP, oldG, oldE })
	passwdFile, groupFile, getentPath = filepath.Join(dir, "passwd"), filepath.Join(dir, "group"), filepath.Join(dir, "getent")
	for p, body := range map[string]string{passwdFile: passwd, groupFile: group} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(getentPath, []byte("#!/bin/sh\n"+getent), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestLookupIdentity_Files(t *testing.T) {
	withDB(t, `# a comment
root:x:0:0:root:/root:/bin/bash
+nis
alice:x:1000:1000:Alice,,,:/home/alice:/bin/zsh
bob:x:1001:100::/home/bob:
`, `root:x:0:
users:x:100:alice
alice:x:1000:
wheel:x:10:root,alice
cdrom:x:24:bob,carol
`, "echo getent must not run for a user of the files >&2; exit 1\n")
	for _, tc := range []struct {
		uid  int
		want Identity
	}{
		{1000, Identity{User: "alice", UID: 1000, GID: 1000, Groups: []int{1000, 100, 10}, Home: "/home/alice", Shell: "/bin/zsh"}},
		// No shell in the entry: /bin/sh, as login(1) has it.
		{1001, Identity{User: "bob", UID: 1001, GID: 100, Groups: []int{100, 24}, Home: "/home/bob", Shell: "/bin/sh"}},
	} {
		got, err := LookupIdentity(tc.uid)
		if err != nil || !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("LookupIdentity(%d) = %+v, %v; want %+v", tc.uid, got, err, tc.want)
		}
	}
}

// A user only the name service knows comes from getent, groups included.
func TestLookupIdentity_NameService(t *testing.T) {
	withDB(t, "root:x:0:0:root:/root:/bin/bash\n", "root:x:0:\n", `case "$1 $2" in
"passwd 5000") echo 'ldapuser:*:5000:5000:LDAP:/home/ldapuser:/bin/bash' ;;
"initgroups ldapuser") echo 'ldapuser              5000 6000 6001' ;;
*) exit 2 ;;
esac
`)
	got, err := LookupIdentity(5000)
	want := Identity{User: "ldapuser", UID: 5000, GID: 5000, Groups: []int{5000, 6000, 6001}, Home: "/home/ldapuser", Shell: "/bin/bash"}
	if err != nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	_, err = LookupIdentity(5001)
	if err == nil || !strings.Contains(err.Error(), "uid 5001") || !strings.Contains(err.Error(), "no such user") {
		t.Errorf("unknown uid: %v, want an error naming uid 5001", err)
	}
	if _, err := LookupIdentity(-1); err == nil || !strings.Contains(err.Error(), "uid -1") {
		t.Errorf("uid -1: %v", err)
	}
}

// On this machine's own databases, LookupIdentity agrees with id(1).
func TestLookupIdentity_System(t *testing.T) {
	got, err := LookupIdentity(0)
	if err != nil {
		t.Fatal(err)
	}
	if got.User != "root" || got.GID != 0 || !slices.Contains(got.Groups, 0) || got.Shell == "" {
		t.Errorf("root: %+v", got)
	}
	out, err := exec.Command("id", "-G", "root").Output()
	if err != nil {
		t.Skip("id:", err)
	}
	var ids []int
	for _, f := range strings.Fields(string(out)) {
		n, _ := strconv.Atoi(f)
		ids = append(ids, n)
	}
	if !sameSet(ids, got.Groups) {
		t.Errorf("groups %v, id -G root says %v", got.Groups, ids)
	}
}

func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
