package workload

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

// RequestType is the structure of a multicluster job's request (Bucur &
// Epema, "The Influence of the Structure and Sizes of Jobs on the
// Performance of Co-Allocation", JSSPP 2000).
type RequestType int

const (
	// Total: one number of processors, anywhere on a single machine of
	// all the clusters' processors.
	Total RequestType = 1
	// Unordered: one component per cluster; the scheduler chooses which
	// distinct cluster takes which component.
	Unordered RequestType = 2
	// Ordered: component i must run on cluster i.
	Ordered RequestType = 3
)

func (t RequestType) String() string {
	switch t {
	case Total:
		return "total"
	case Unordered:
		return "unordered"
	case Ordered:
		return "ordered"
	}
	return fmt.Sprintf("RequestType(%d)", int(t))
}

// ParseRequestType reads "total", "unordered" or "ordered".
func ParseRequestType(s string) (RequestType, error) {
	for _, t := range []RequestType{Total, Unordered, Ordered} {
		if strings.EqualFold(s, t.String()) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("workload: request type %q: want total, unordered or ordered", s)
}

// How a multicluster request is stored in SWF, a convention of msched's:
//
//	field 15 (queue)      the request type: 1 total, 2 unordered, 3 ordered
//	field 16 (partition)  the components, two decimal digits each, cluster 1
//	                      first: (3, 1, 4, 2) is 3010402; -1 for total requests
//	fields 5, 8           the total number of processors
//	header "; Clusters: 8 8 8 8"  the processors of each cluster
//
// Components are 1..99 and at most 9 (the packed number fits an int64);
// the first component is never 0, so the number of components is the
// number of two-digit groups.
const maxComponents, maxComponent = 9, 99

// SetComponents stores a request in j by that convention.
func SetComponents(j *Job, t RequestType, comps []int) error {
	if t == Total {
		n := 0
		for _, c := range comps {
			n += c
		}
		j.Procs, j.ReqProcs, j.Queue, j.Partition = n, n, int(Total), -1
		return nil
	}
	if t != Unordered && t != Ordered {
		return fmt.Errorf("workload: request type %d", int(t))
	}
	if len(comps) == 0 || len(comps) > maxComponents {
		return fmt.Errorf("workload: %d components (want 1..%d)", len(comps), maxComponents)
	}
	packed, n := 0, 0
	for _, c := range comps {
		if c < 1 || c > maxComponent {
			return fmt.Errorf("workload: component of %d processors (want 1..%d)", c, maxComponent)
		}
		packed = packed*100 + c
		n += c
	}
	j.Procs, j.ReqProcs, j.Queue, j.Partition = n, n, int(t), packed
	return nil
}

// Components reads a request stored by SetComponents. For a total request
// comps is nil and the size is j.ReqProcs.
func Components(j Job) (RequestType, []int, error) {
	t := RequestType(j.Queue)
	switch t {
	case Total:
		return t, nil, nil
	case Unordered, Ordered:
	default:
		return 0, nil, fmt.Errorf("workload: job %d: queue %d is not a request type", j.ID, j.Queue)
	}
	if j.Partition <= 0 {
		return 0, nil, fmt.Errorf("workload: job %d: %v request without components", j.ID, t)
	}
	var comps []int
	for p := j.Partition; p > 0; p /= 100 {
		c := p % 100
		if c == 0 {
			return 0, nil, fmt.Errorf("workload: job %d: partition %d holds a component of 0", j.ID, j.Partition)
		}
		comps = append([]int{c}, comps...)
	}
	return t, comps, nil
}

// Clusters reads the cluster sizes from a multicluster trace's header.
func Clusters(h Header) ([]int, error) {
	v, ok := h.Get("Clusters")
	if !ok {
		return nil, fmt.Errorf("workload: header has no Clusters line")
	}
	var sizes []int
	for f := range strings.FieldsSeq(v) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("workload: Clusters %q: %q is not a cluster size", v, f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// MulticlusterConfig configures the multicluster generator, the workload of
// Bucur & Epema's simulations: C clusters of N processors; a request has C
// components, each uniform on the integers N1..N2 (for total requests the
// size is their sum, so all three types have the same size distribution);
// service times are exponential with mean 1 time unit of TimeUnit seconds;
// arrivals are Poisson at the rate that offers the given utilisation,
//
//	λ = Utilisation · C·N / (C·(N1+N2)/2 · 1 unit).
//
// Zero fields take the defaults of DefaultMulticlusterConfig.
type MulticlusterConfig struct {
	Jobs        int
	Clusters    int // C
	ClusterSize int // N
	Request     RequestType
	N1, N2      int     // component sizes, uniform on N1..N2
	Utilisation float64 // offered (gross) utilisation
	TimeUnit    float64 // seconds per unit of mean service time
}

// DefaultMulticlusterConfig is the paper's multicluster: 4 clusters of 8,
// unordered requests of components U[1, 4], utilisation 0.5, and a time
// unit of 3,600 s (mean service one hour, so response times in hours are in
// the paper's units).
func DefaultMulticlusterConfig() MulticlusterConfig {
	return MulticlusterConfig{Jobs: 10000, Clusters: 4, ClusterSize: 8, Request: Unordered, N1: 1, N2: 4, Utilisation: 0.5, TimeUnit: 3600}
}

func (c MulticlusterConfig) withDefaults() MulticlusterConfig {
	d := DefaultMulticlusterConfig()
	if c.Jobs == 0 {
		c.Jobs = d.Jobs
	}
	if c.Clusters == 0 {
		c.Clusters = d.Clusters
	}
	if c.ClusterSize == 0 {
		c.ClusterSize = d.ClusterSize
	}
	if c.Request == 0 {
		c.Request = d.Request
	}
	if c.N1 == 0 {
		c.N1 = d.N1
	}
	if c.N2 == 0 {
		c.N2 = max(d.N2, c.N1)
	}
	if c.Utilisation == 0 {
		c.Utilisation = d.Utilisation
	}
	if c.TimeUnit == 0 {
		c.TimeUnit = d.TimeUnit
	}
	return c
}

// GenerateMulticluster draws cfg.Jobs jobs. Fields set: job number, submit
// time, run time, processors (fields 5 and 8: the total), status 1, and the
// request by the SetComponents convention. Submit and run times are not
// rounded: time units are what matter here.
func GenerateMulticluster(cfg MulticlusterConfig, rng *rand.Rand) (Header, []Job, error) {
	cfg = cfg.withDefaults()
	if cfg.Jobs < 0 || cfg.Clusters < 1 || cfg.Clusters > maxComponents || cfg.ClusterSize < 1 ||
		cfg.N1 < 1 || cfg.N2 < cfg.N1 || cfg.N2 > cfg.ClusterSize || cfg.N2 > maxComponent ||
		cfg.Utilisation <= 0 || cfg.TimeUnit <= 0 {
		return Header{}, nil, fmt.Errorf("workload: multicluster: bad config %+v (want 1 ≤ clusters ≤ %d, 1 ≤ n1 ≤ n2 ≤ cluster size, utilisation > 0)",
			cfg, maxComponents)
	}
	if cfg.Request != Total && cfg.Request != Unordered && cfg.Request != Ordered {
		return Header{}, nil, fmt.Errorf("workload: multicluster: request type %d", int(cfg.Request))
	}
	procs := cfg.Clusters * cfg.ClusterSize
	meanSize := float64(cfg.Clusters) * float64(cfg.N1+cfg.N2) / 2
	meanGap := meanSize * cfg.TimeUnit / (cfg.Utilisation * float64(procs))
	jobs := make([]Job, cfg.Jobs)
	comps := make([]int, cfg.Clusters)
	submit := 0.0
	for k := range jobs {
		submit += rng.ExpFloat64() * meanGap
		for i := range comps {
			comps[i] = cfg.N1 + rng.Intn(cfg.N2-cfg.N1+1)
		}
		j := NewJob()
		j.ID = int64(k + 1)
		j.Submit = submit
		j.Run = rng.ExpFloat64() * cfg.TimeUnit
		j.Status = StatusCompleted
		if err := SetComponents(&j, cfg.Request, comps); err != nil {
			return Header{}, nil, err
		}
		jobs[k] = j
	}
	h := generatedHeader("multicluster", 0, "", len(jobs), procs)
	sizes := make([]string, cfg.Clusters)
	for i := range sizes {
		sizes[i] = strconv.Itoa(cfg.ClusterSize)
	}
	h.set("Clusters", strings.Join(sizes, " "))
	h.set("Note", fmt.Sprintf("Bucur-Epema multicluster jobs (msched workload multicluster): %d jobs, %d clusters x %d, %v requests, components U[%d,%d], utilisation %g, time unit %g s",
		cfg.Jobs, cfg.Clusters, cfg.ClusterSize, cfg.Request, cfg.N1, cfg.N2, cfg.Utilisation, cfg.TimeUnit))
	h.Comment("field 15 = request type (1 total, 2 unordered, 3 ordered); field 16 = components,\ntwo digits each, cluster 1 first (3010402 = 3,1,4,2); fields 5 and 8 = total processors.")
	return h, jobs, nil
}
