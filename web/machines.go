package web

import (
	"strings"
	"time"

	"msched/hoststat"
)

// Hosts are what the scheduler places jobs on: a machine, or one CPU slot
// of a machine. `msched up` without a hosts file makes one host per CPU of
// this machine, named <machine>/cpu0, <machine>/cpu1, …, and the stats
// daemon gives every one of them the same sample of the machine. The page
// therefore groups hosts by machine, taking the part of a host's name
// before its last '/' as its machine (hoststat.LocalHosts's convention),
// and shows the machine-wide figures (load, CPUs, user idle, uptime) once
// per machine, the slots' own (state, jobs, free at) on the slots' rows.

// machineOf splits a host name into its machine and slot ("" for a host
// that is a machine of its own).
func machineOf(host string) (machine, slot string) {
	if i := strings.LastIndexByte(host, '/'); i > 0 && i < len(host)-1 {
		return host[:i], host[i+1:]
	}
	return host, ""
}

// MachineView is one machine and its hosts (CPU slots, or the machine
// itself as its one host).
type MachineView struct {
	Name string `json:"name"`
	// Stats is the machine's latest sample: the newest of its slots'.
	Stats *hoststat.Stats `json:"stats,omitempty"`
	Slots []HostView      `json:"slots"`
	// Single: the machine is one host, not CPU slots (its row is the host's).
	Single  bool `json:"single,omitempty"`
	Down    int  `json:"down,omitempty"`    // slots down
	Running int  `json:"running"`           // jobs running on its slots (a job on two slots counts once)
	Planned int  `json:"planned,omitempty"` // planned placements on its slots
}

// groupMachines groups hosts by machine, machines in the order of their
// first host, slots in their order.
func groupMachines(hv []HostView) []MachineView {
	var ms []MachineView
	index := map[string]int{}
	for _, h := range hv {
		m, slot := machineOf(h.Name)
		i, ok := index[m]
		if !ok {
			i = len(ms)
			index[m] = i
			ms = append(ms, MachineView{Name: m, Single: slot == ""})
		}
		mv := &ms[i]
		if slot != "" {
			mv.Single = false
		}
		mv.Slots = append(mv.Slots, h)
		if h.Stats != nil && (mv.Stats == nil || h.Stats.Time.After(mv.Stats.Time)) {
			mv.Stats = h.Stats
		}
		if h.State == "down" {
			mv.Down++
		}
		mv.Planned += h.Planned
	}
	for i := range ms {
		seen := map[string]bool{}
		for _, h := range ms[i].Slots {
			for _, j := range h.Running {
				seen[j] = true
			}
		}
		ms[i].Running = len(seen)
		if len(ms[i].Slots) > 1 {
			ms[i].Single = false
		}
	}
	return ms
}

// slotName is how a slot row is labelled under its machine.
func slotName(host string) string {
	if _, s := machineOf(host); s != "" {
		return s
	}
	return host
}

// machineRows is what the "hosttable" template draws.
type machineRows struct {
	Base     string
	Now      time.Time
	Machines []MachineView
}
