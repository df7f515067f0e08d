package hoststat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"msched/atomicfile"
)

// Host is one schedulable host: a machine, or one CPU of a machine.
type Host struct {
	Name    string `yaml:"name" json:"name"`
	Arch    string `yaml:"arch" json:"arch"` // hardware model name, for the performance models
	Cluster string `yaml:"cluster,omitempty" json:"cluster,omitempty"`
	// Address is where jobs for this host are started: "" or "local" (this
	// machine), ssh://[user@]host[:port], or slurm:///path/to/slurm.conf
	// (one node of that Slurm cluster). See ParseAddress.
	Address string `yaml:"address,omitempty" json:"address,omitempty"`
}

// IsLocal reports whether jobs for h run on this machine.
func (h Host) IsLocal() bool { return h.Address == "" || h.Address == KindLocal }

// LocalHosts returns this machine's CPUs as hosts, named <hostname>/cpu0 …,
// all in one cluster named after the machine, so that msched runs with no
// hosts file. The architecture is the CPU's "model name" from /proc/cpuinfo,
// or runtime.GOARCH where the kernel gives none (most arm64 machines). There
// is one host per CPU this process may use (runtime.NumCPU), so the names
// are slots, not kernel CPU numbers, when affinity is restricted.
func LocalHosts() ([]Host, error) {
	name, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("hoststat: %w", err)
	}
	var models []string
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		models, err = ParseCPUModels(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("hoststat: /proc/cpuinfo: %w", err)
		}
	}
	return cpuHosts(name, models, runtime.NumCPU()), nil
}

func cpuHosts(hostname string, models []string, n int) []Host {
	hosts := make([]Host, n)
	for i := range hosts {
		arch := runtime.GOARCH
		switch {
		case i < len(models) && models[i] != "":
			arch = models[i]
		case len(models) > 0 && models[0] != "":
			arch = models[0]
		}
		hosts[i] = Host{Name: hostname + "/cpu" + strconv.Itoa(i), Arch: arch, Cluster: hostname, Address: "local"}
	}
	return hosts
}

// ParseCPUModels reads /proc/cpuinfo and returns the "model name" of each
// processor block in order ("" for a block without one).
func ParseCPUModels(r io.Reader) ([]string, error) {
	var models []string
	in := false // inside a processor block
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case !ok:
			in = false
		case key == "processor":
			models = append(models, "")
			in = true
		case key == "model name" && in:
			models[len(models)-1] = val
		}
	}
	return models, sc.Err()
}

// LoadHosts reads a hosts file: a YAML list of hosts. It is strict, because
// a mistyped field would otherwise silently give a host the wrong
// architecture: unknown fields, missing names or architectures, duplicate
// names and non-string values are errors that name the line and field.
func LoadHosts(path string) ([]Host, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hoststat: %w", err)
	}
	return ParseHosts(data, path)
}

// ParseHosts parses the contents of a hosts file; name is used in errors.
func ParseHosts(data []byte, name string) ([]Host, error) {
	errAt := func(line int, format string, args ...any) error {
		return fmt.Errorf("hoststat: %s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("hoststat: %s: no hosts", name)
		}
		return nil, fmt.Errorf("hoststat: %s: %w", name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("hoststat: %s: more than one YAML document", name)
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, errAt(list.Line, "want a list of hosts")
	}
	if len(list.Content) == 0 {
		return nil, fmt.Errorf("hoststat: %s: no hosts", name)
	}
	hosts := make([]Host, 0, len(list.Content))
	seen := map[string]int{}
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, errAt(item.Line, "host %d: want a mapping with name and arch", i+1)
		}
		var h Host
		fields := map[string]bool{}
		for k := 0; k+1 < len(item.Content); k += 2 {
			key, val := item.Content[k], item.Content[k+1]
			if fields[key.Value] {
				return nil, errAt(key.Line, "host %d: field %q given twice", i+1, key.Value)
			}
			fields[key.Value] = true
			var dst *string
			switch key.Value {
			case "name":
				dst = &h.Name
			case "arch":
				dst = &h.Arch
			case "cluster":
				dst = &h.Cluster
			case "address":
				dst = &h.Address
			default:
				return nil, errAt(key.Line, "host %d: unknown field %q (want name, arch, cluster, address)", i+1, key.Value)
			}
			if val.Kind != yaml.ScalarNode || (val.Tag != "!!str" && val.Tag != "!!int" && val.Tag != "!!float") {
				return nil, errAt(val.Line, "host %d: field %q: want a string", i+1, key.Value)
			}
			*dst = val.Value
		}
		if err := h.validate(); err != nil {
			return nil, errAt(item.Line, "host %d: %v", i+1, err)
		}
		if prev, dup := seen[h.Name]; dup {
			return nil, errAt(item.Line, "host %d: field \"name\": %q already used on line %d", i+1, h.Name, prev)
		}
		seen[h.Name] = item.Line
		hosts = append(hosts, h)
	}
	if err := checkClusters(hosts); err != nil {
		return nil, fmt.Errorf("hoststat: %s: %v", name, err)
	}
	return hosts, nil
}

// validate checks one host. Names and clusters may not hold white space or
// commas because jobs receive their hosts comma-separated (MSCHED_HOSTS)
// and one per line (the host file), and a co-allocated job its clusters
// comma-separated (MSCHED_CLUSTERS) and in its host file's comments.
func (h Host) validate() error {
	switch {
	case h.Name == "":
		return errors.New(`field "name": required`)
	case strings.ContainsAny(h.Name, ", \t\n\r"):
		return fmt.Errorf(`field "name": %q holds white space or a comma`, h.Name)
	case strings.ContainsAny(h.Cluster, ", \t\n\r"):
		return fmt.Errorf(`field "cluster": %q holds white space or a comma`, h.Cluster)
	case strings.TrimSpace(h.Arch) == "":
		return errors.New(`field "arch": required`)
	}
	for _, f := range []struct{ key, v string }{{"name", h.Name}, {"arch", h.Arch}, {"cluster", h.Cluster}, {"address", h.Address}} {
		if strings.ContainsFunc(f.v, unicode.IsControl) || !utf8.ValidString(f.v) {
			return fmt.Errorf("field %q: %q holds a control character or is not UTF-8", f.key, f.v)
		}
	}
	a, err := ParseAddress(h.Address)
	if err != nil {
		return fmt.Errorf(`field "address": %v`, err)
	}
	if a.Kind == KindSlurm && h.Cluster == "" {
		return errNoCluster
	}
	return nil
}

// WriteHosts writes hosts as a hosts file that LoadHosts reads back,
// replacing path atomically.
func WriteHosts(path string, hosts []Host) error {
	data, err := marshalHosts(hosts)
	if err != nil {
		return err
	}
	if err := atomicfile.Write("", filepath.Dir(path), filepath.Base(path), data); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	return nil
}

// marshalHosts is the hosts file WriteHosts writes.
func marshalHosts(hosts []Host) ([]byte, error) {
	if len(hosts) == 0 {
		return nil, errors.New("hoststat: no hosts to write")
	}
	seen := map[string]bool{}
	for i, h := range hosts {
		if err := h.validate(); err != nil {
			return nil, fmt.Errorf("hoststat: host %d: %v", i+1, err)
		}
		if seen[h.Name] {
			return nil, fmt.Errorf("hoststat: host %d: name %q used twice", i+1, h.Name)
		}
		seen[h.Name] = true
	}
	data, err := yaml.Marshal(hosts)
	if err != nil {
		return nil, fmt.Errorf("hoststat: %w", err)
	}
	return data, nil
}
