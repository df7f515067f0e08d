package policy

var _ = register("easy-fast", func(o Options) (Policy, error) {
	m := newMachine(o)
	m.fastFirst = true
	return easyFast{&easyPolicy{m: m}}, nil
})

// easyFast is EASY backfilling (easy.go) on heterogeneous hosts, choosing
// hosts fastest first (Host.Speed): a job started now takes the fastest
// free hosts it may use, the head's reservation holds the slowest of the
// hosts free now, and run times are predicted on the fastest hosts. It is
// the fair baseline for a policy that chooses hosts by speed; plain easy
// takes free hosts in index order, whatever their speed. On identical hosts
// the two are the same.
type easyFast struct{ *easyPolicy }

func (easyFast) Name() string { return "easy-fast" }
