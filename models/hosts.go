package models

import (
	"errors"
)

// slowest returns the number of hosts i and the smallest effective speed
// s_min = min_h speed(arch_h)/(1+load_h). The built-in kinds split the work
// evenly over the hosts, so the slowest host governs the run time.
func slowest(hw *Hardware, hosts []HostSpec) (i int, sMin float64, err error) {
	if len(hosts) == 0 {
		return 0, 0, errors.New("models: no hosts")
	}
	for k, h := range hosts {
		s, err := hw.EffectiveSpeed(h)
		if err != nil {
			return 0, 0, err
		}
		if k == 0 || s < sMin {
			sMin = s
		}
	}
	return len(hosts), sMin, nil
}
