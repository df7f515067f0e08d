package launch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultShell is a user's shell when the password database names none, as
// login(1) has it.
const defaultShell = "/bin/sh"

// Where LookupIdentity reads the password and group databases. Variables
// only so that a test can point them at fixtures.
var (
	passwdFile = "/etc/passwd"
	groupFile  = "/etc/group"
	getentPath = "/usr/bin/getent"
)

// getentTimeout bounds one getent run: NSS may ask a directory server over
// the network, and the run daemon waits for the answer before a start.
const getentTimeout = 10 * time.Second

// LookupIdentity returns the user with this uid as a job runs as it: name,
// home, shell, primary gid and the supplementary groups (the primary one
// included, as initgroups(3) has them).
//
// Users of /etc/passwd are read from it and their groups from /etc/group,
// without a process; for a user only the name service knows (LDAP, sssd…),
// `getent passwd UID` gives the entry and `getent initgroups NAME` the
// groups. It does not use os/user: with cgo (the default wherever a C
// compiler is installed) that would link libc into msched-shepherd, which
// must stay a static binary, and os/user's pure Go version reads the same
// two files without the name service fallback.
func LookupIdentity(uid int) (*Identity, error) {
	if uid < 0 {
		return nil, fmt.Errorf("launch: uid %d: not a user id", uid)
	}
	line, fromFile, err := passwdLine(uid)
	if err != nil {
		return nil, fmt.Errorf("launch: uid %d: %w", uid, err)
	}
	id, err := parsePasswd(line)
	if err != nil {
		return nil, fmt.Errorf("launch: uid %d: %w", uid, err)
	}
	var groups []int
	if fromFile {
		groups, err = fileGroups(id.User)
	} else {
		groups, err = getentGroups(id.User)
	}
	if err != nil {
		return nil, fmt.Errorf("launch: uid %d (%s): groups: %w", uid, id.User, err)
	}
	id.Groups = []int{id.GID}
	for _, g := range groups {
		if !slices.Contains(id.Groups, g) {
			id.Groups = append(id.Groups, g)
		}
	}
	return id, nil
}

// passwdLine finds the password entry of uid: in passwdFile, else through
// getent (fromFile false).
func passwdLine(uid int) (line string, fromFile bool, err error) {
	want := strconv.Itoa(uid)
	err = scanDB(passwdFile, func(f []string) bool {
		if len(f) >= 7 && f[2] == want {
			line = strings.Join(f, ":")
			return true
		}
		return false
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", false, err
	}
	if line != "" {
		return line, true, nil
	}
	out, err := getent("passwd", want)
	if err != nil {
		return "", false, err
	}
	line, _, _ = strings.Cut(out, "\n")
	return line, false, nil
}

// parsePasswd reads name:password:uid:gid:gecos:home:shell.
func parsePasswd(line string) (*Identity, error) {
	f := strings.Split(line, ":")
	if len(f) != 7 {
		return nil, fmt.Errorf("malformed password entry %q", line)
	}
	uid, err1 := strconv.Atoi(f[2])
	gid, err2 := strconv.Atoi(f[3])
	if f[0] == "" || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("malformed password entry %q", line)
	}
	shell := f[6]
	if shell == "" {
		shell = defaultShell
	}
	return &Identity{User: f[0], UID: uid, GID: gid, Home: f[5], Shell: shell}, nil
}

// fileGroups lists the gids of groupFile's groups that name user as a
// member.
func fileGroups(user string) ([]int, error) {
	var gids []int
	err := scanDB(groupFile, func(f []string) bool {
		if len(f) < 4 {
			return false
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == user {
				if g, err := strconv.Atoi(f[2]); err == nil {
					gids = append(gids, g)
				}
				break
			}
		}
		return false
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return gids, err
}

// getentGroups asks the name service for user's groups: `getent initgroups`
// prints the name, then the gids.
func getentGroups(user string) ([]int, error) {
	out, err := getent("initgroups", user)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(out)
	var gids []int
	for _, s := range f[min(1, len(f)):] {
		g, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("getent initgroups %s: unexpected %q", user, s)
		}
		gids = append(gids, g)
	}
	return gids, nil
}

// getent runs getent(1) on one key. Its exit status 2 means "not found".
func getent(db, key string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), getentTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, getentPath, db, key)
	cmd.Stderr = &stderr
	cmd.Env = []string{"PATH=" + DefaultPath}
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		return "", fmt.Errorf("no such user in the password database")
	case err != nil:
		return "", fmt.Errorf("getent %s %s: %v %s", db, key, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(string(out)), nil
}

// scanDB calls match with the colon-separated fields of each entry of a
// passwd or group file until it returns true. Comments, blank lines and
// NIS compat entries (+, -) are skipped.
func scanDB(path string, match func([]string) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line != "" && line[0] != '#' && line[0] != '+' && line[0] != '-' {
			if match(strings.Split(line, ":")) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
