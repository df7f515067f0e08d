// Package learn learns from finished jobs: from the reaper's accounting
// records (acct.Record, read through acct), it measures each performance
// model's accuracy per architecture, and keeps a multiplicative correction
// that later predictions may apply (config learning.correct).
package learn
