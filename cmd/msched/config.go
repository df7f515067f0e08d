package main

import "github.com/spf13/viper"

// setDefaults gives every configuration key its default. The first `msched
// up` writes these into spool/msched.yaml so that a user can see and edit
// them.
func setDefaults(v *viper.Viper) {
	v.SetDefault("policy", "ga-xms")
	v.SetDefault("ga.population", 60)
	v.SetDefault("ga.window", 20)
	v.SetDefault("ga.max_jumps", 7)
	v.SetDefault("ga.time_budget", "100ms")
	v.SetDefault("ga.seed", 0)
}
