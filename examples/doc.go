// Package examples holds the job files and model files a newcomer submits
// right after `msched up` (see README's quick start), and embeds the model
// files so that the first `msched up` can copy them into the models
// directory it creates.
//
// The example models assume the hosts are described as the hardware
// database's "generic" architecture (speed 1), which is what this machine's
// CPUs are when their /proc/cpuinfo model name is not in the database (the
// usual case: see policy.ModelPredictor). On hosts of a known faster
// architecture the formulas divide the CPU part by its speed, while sleep
// does not speed up; edit the model files to match such hosts.
package examples

import "embed"

// Models holds models/*.yaml and the external models' programs beside
// them, models/*.sh.
//
//go:embed models/*.yaml models/*.sh
var Models embed.FS
