package workload

import (
	"fmt"
	"math/rand"
	"time"
)

// Kinds lists the synthetic workloads, with one line on each, for help
// texts. The generators are GenerateWarwick, GenerateGibbons, GenerateO2K,
// GenerateMulticluster and GenerateLublin.
var Kinds = []struct{ Name, Summary string }{
	{"warwick", "Eq. 2 tasks t(i) = C_cpu/i + C_com·i of the Warwick MS paper (moldable; peak-speedup request)"},
	{"gibbons", "Gibbons's Table 6.2: 13 synthetic executables, t = W·(D + (1−D)/p), p uniform 2..16"},
	{"o2k", "Chiang–Vernon NCSA Origin 2000 roadmap: daily arrival cycle, P, M, R, T/R, peak memory"},
	{"multicluster", "Bucur–Epema co-allocation jobs: total, unordered or ordered requests over C clusters"},
	{"lublin", "Lublin–Feitelson model of rigid jobs on 128 nodes (SCOJO-P's W1 and W2 by the inter-arrival α)"},
}

// generatedHeader starts the header of a synthetic trace.
func generatedHeader(kind string, unixStart int64, tz string, jobs, procs int) Header {
	var h Header
	h.set("Version", "2.2")
	h.set("Computer", "synthetic ("+kind+")")
	h.set("Installation", "msched workload generator")
	h.set("Conversion", "msched workload generate "+kind)
	h.set("MaxJobs", fmt.Sprint(jobs))
	h.set("MaxRecords", fmt.Sprint(jobs))
	h.set("Preemption", "No")
	h.set("UnixStartTime", fmt.Sprint(unixStart))
	if tz != "" {
		h.set("TimeZoneString", tz)
		if loc, err := time.LoadLocation(tz); err == nil {
			h.set("StartTime", time.Unix(unixStart, 0).In(loc).Format(time.UnixDate))
		}
	} else {
		h.set("StartTime", time.Unix(unixStart, 0).UTC().Format(time.UnixDate))
	}
	h.set("MaxNodes", fmt.Sprint(procs))
	h.set("MaxProcs", fmt.Sprint(procs))
	return h
}

// cyclicArrivals is a renewal process with a periodic, piecewise-constant
// rate. Arrivals are drawn in operational time (where the rate is 1) as a
// renewal process of unit mean and coefficient of variation cv, and mapped
// back through the cumulative rate; inside a slot of constant rate the
// inter-arrival times are then the slot's mean times the unit draws, so
// they keep the chosen CV and the slot's rate.
type cyclicArrivals struct {
	rates []float64 // arrivals per slot, per slot of the cycle
	cum   []float64 // cum[i]: arrivals expected before slot i; cum[n]: per cycle
	slot  float64   // seconds per slot
	cv    float64
	u     float64 // operational time of the last arrival
}

func newCyclicArrivals(ratePerSlot []float64, slot, cv float64) *cyclicArrivals {
	a := &cyclicArrivals{rates: ratePerSlot, slot: slot, cv: cv, cum: make([]float64, len(ratePerSlot)+1)}
	for i, r := range ratePerSlot {
		if r <= 0 {
			panic("workload: arrival rate must be positive in every slot")
		}
		a.cum[i+1] = a.cum[i] + r
	}
	return a
}

// next returns the next arrival time in seconds from the cycle's start.
// The first arrival is one draw after time 0.
func (a *cyclicArrivals) next(rng *rand.Rand) float64 {
	a.u += byCV(rng, 1, a.cv)
	per := a.cum[len(a.rates)]
	cycles := int(a.u / per)
	rem := a.u - float64(cycles)*per
	// Slot containing rem: the last i with cum[i] ≤ rem.
	lo, hi := 0, len(a.rates)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if a.cum[mid] <= rem {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	frac := (rem - a.cum[lo]) / a.rates[lo]
	return (float64(cycles*len(a.rates)+lo) + frac) * a.slot
}
