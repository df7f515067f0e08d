package evaluator

import (
	"cmp"
	"encoding/binary"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"msched/models"
)

// Two keys name one evaluation. The level-1 key is compact and process-local:
// the Handle's id, then the host classes (sorted when the model is order-free)
// as little-endian uint32s. The level-2 key is text that survives restarts
// and reads well in a database browser:
//
//	particles@3f2a…|C_com=10,C_cpu=1000|SunUltra1:hardware/CPU_LOAD=0,SunUltra1:hardware/CPU_LOAD=0.25
//
// model name, '@' and the model's fingerprint (when it has one), the job's
// parameters sorted by name, then the host vector. Names are models.ValidName,
// so the separators cannot occur inside them. Both keys canonicalise the
// same way (a multiset for order-free models, a sequence otherwise), so they
// name the same evaluations.

// stackHosts is the host-vector length whose level-1 key is built in a stack
// buffer; longer vectors cost one allocation. 64 covers the paper's 16-node
// machine and typical jobs several times over.
const stackHosts = 64

// appendL1Key appends the level-1 key of (h, hosts) to b. sorted is scratch
// space of at least len(hosts) for order-free models.
func appendL1Key(b []byte, id uint64, orderFree bool, hosts, sorted []Class) []byte {
	b = binary.LittleEndian.AppendUint64(b, id)
	if orderFree {
		sorted = sorted[:len(hosts)]
		copy(sorted, hosts)
		sortClasses(sorted)
		hosts = sorted
	}
	for _, c := range hosts {
		b = binary.LittleEndian.AppendUint32(b, uint32(c))
	}
	return b
}

// sortClasses sorts small host vectors by insertion sort, which beats
// slices.Sort's set-up below a few dozen elements; longer ones use slices.Sort.
func sortClasses(cs []Class) {
	if len(cs) > 24 {
		slices.Sort(cs)
		return
	}
	for i := 1; i < len(cs); i++ {
		c := cs[i]
		j := i
		for ; j > 0 && cs[j-1] > c; j-- {
			cs[j] = cs[j-1]
		}
		cs[j] = c
	}
}

// unsafeString views b as a string without copying, for map lookups that do
// not retain the key. b must not change while the string is in use.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// l2Prefix is the level-2 key up to and including the parameters' '|'.
func l2Prefix(model, fingerprint string, params map[string]float64) string {
	var b strings.Builder
	b.WriteString(model)
	if fingerprint != "" {
		b.WriteByte('@')
		b.WriteString(fingerprint)
	}
	b.WriteByte('|')
	for k, name := range slices.Sorted(maps.Keys(params)) {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(params[name], 'g', -1, 64))
	}
	b.WriteByte('|')
	return b.String()
}

// canonicalHosts turns resolved classes into the host vector the model is
// given, sorted by (architecture, load) for order-free models, and appends
// the level-2 host part (models.FormatHost of each host, comma-separated)
// to prefix.
func canonicalHosts(prefix string, infos []classInfo, orderFree bool) ([]models.HostSpec, string) {
	if orderFree {
		slices.SortFunc(infos, func(a, b classInfo) int {
			return cmp.Or(strings.Compare(a.arch, b.arch), cmp.Compare(a.units, b.units))
		})
	}
	hosts := make([]models.HostSpec, len(infos))
	b := make([]byte, 0, len(prefix)+len(infos)*32)
	b = append(b, prefix...)
	for k, in := range infos {
		hosts[k] = models.HostSpec{Arch: in.arch, Load: in.load}
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, models.FormatHost(hosts[k])...)
	}
	return hosts, string(b)
}
