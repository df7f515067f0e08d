package launch

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// An MPI job is Argv under Open MPI's mpirun, with RanksPerHost ranks on
// each of the job's hosts. mpirun runs as the job's user, never as root
// (with user argv, root would start the user's program as root on every
// host), and the user's words never become mpirun's options: they come
// last, and Argv[0] may not start with '-' (after it, mpirun passes every
// word to the program).

// ranks is the number of ranks per host.
func (m *MPI) ranks() int {
	if m.RanksPerHost > 0 {
		return m.RanksPerHost
	}
	return 1
}

func (m *MPI) mpirun() string {
	if m.Mpirun != "" {
		return m.Mpirun
	}
	return "mpirun"
}

func checkMPIArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("empty argv")
	}
	if strings.HasPrefix(argv[0], "-") {
		return fmt.Errorf("mpi: argv[0] %q starts with '-', which mpirun would take for its own option", argv[0])
	}
	return nil
}

// localMPIArgv is mpirun over this machine: every host of the job is a slot
// here, so all ranks run on localhost.
func localMPIArgv(spec Spec) ([]string, error) {
	if err := checkMPIArgv(spec.Argv); err != nil {
		return nil, err
	}
	uid := os.Geteuid()
	if spec.Identity != nil {
		uid = spec.Identity.UID
	}
	if uid == 0 {
		return nil, errors.New("mpi: mpirun does not run a job as root")
	}
	np := strconv.Itoa(max(1, len(spec.Hosts)) * spec.MPI.ranks())
	argv := []string{spec.MPI.mpirun(), "-np", np, "--host", "localhost:" + np}
	return append(argv, spec.Argv...), nil
}

// remoteMPI is mpirun on the first ssh destination over all of them: its
// argv (the remote wrapper inserts --hostfile after the first word) and the
// host file's lines, one per destination with its slots.
func remoteMPI(spec Spec, user string) (argv, hostLines []string, err error) {
	if err := checkMPIArgv(spec.Argv); err != nil {
		return nil, nil, err
	}
	if user == "root" {
		return nil, nil, errors.New("mpi: mpirun does not run a job as root")
	}
	r := spec.MPI.ranks()
	for _, d := range spec.SSH.Dest {
		hostLines = append(hostLines, fmt.Sprintf("%s slots=%d", d.Host, r))
	}
	argv = []string{spec.MPI.mpirun(),
		"-np", strconv.Itoa(len(spec.SSH.Dest) * r),
		"--map-by", fmt.Sprintf("ppr:%d:node", r)}
	if spec.MPI.Agent != "" {
		argv = append(argv, "--mca", "plm_rsh_agent", spec.MPI.Agent)
	}
	// mpirun gives remote ranks the remote daemons' environment: export
	// the job's own variables to them (the host file exists only on the
	// first host, so MSCHED_HOSTFILE is left out).
	var keys []string
	for _, e := range spec.Env {
		if k, _, ok := strings.Cut(e, "="); ok && !strings.HasPrefix(k, "MSCHED_") && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, e := range spec.mschedEnv("") {
		k, _, _ := strings.Cut(e, "=")
		keys = append(keys, k)
	}
	for _, k := range keys {
		argv = append(argv, "-x", k)
	}
	return append(argv, spec.Argv...), hostLines, nil
}
